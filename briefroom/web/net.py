"""Where briefroom may connect, and an HTTP client that asks before every connection.

The address check happens at connect time, after DNS resolution, on the address the
socket then connects to (so a name that resolves to 10.0.0.1, a redirect to
169.254.169.254 and a DNS answer that changes between two requests are all refused
before any packet leaves). Only addresses the IANA special-purpose registries call
globally reachable pass (`addresses`: loopback, private, link-local, multicast,
documentation, dummy, site-local and every other special block are refused), unless
the allow-list names the address and port (a test's fixture server, a self-hosted
SearXNG on localhost). A name that does not resolve is `UnresolvableHost`.

The client is httpcore with that check as its network backend: one GET at a time,
redirects not followed (the fetcher follows them, checking each hop), a connect and a
read timeout, an overall deadline, and a size cap past which it stops reading.
"""

from __future__ import annotations

import socket
import ssl
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpcore

from briefroom.errors import EngineeringFailure
from briefroom.web.addresses import address_problem, refusal

__all__ = ["AddressPolicy", "BlockedAddress", "DomainPolicy", "HttpClient", "Response", "UnresolvableHost", "WebError",
           "address_problem", "normalise_domain", "system_resolve"]

USER_AGENT = "briefroom/0.1 (+https://github.com/briefroom; research assistant)"
Resolver = Callable[[str, int], list[str]]


class WebError(EngineeringFailure):
    """A web request that did not give a usable answer; the model reads the message."""

    def __init__(self, message: str, *, tool: str | None = None, transient: bool = False):
        super().__init__(message, tool=tool, transient=transient)


class BlockedAddress(WebError):
    """Refused before connecting: the host resolves to an address briefroom does not reach."""


class UnresolvableHost(WebError):
    """The host's name has no address (a DNS failure): nothing about it can be fetched,
    robots.txt included, so it is reported as itself, never as a robots.txt verdict."""


def system_resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (literal addresses, including odd forms such as
    `127.1` or `0x7f000001`, come back as what they mean)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnresolvableHost(f"the fetch failed: cannot resolve host {host!r} ({exc})") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass
class AddressPolicy:
    """`allow`: "address:port" pairs reachable although not public (tests, intranet services)."""

    allow: frozenset[str] = frozenset()
    resolve: Resolver = system_resolve

    def vet(self, host: str, port: int) -> str:
        """The address to connect to for `host:port`; BlockedAddress if any address it
        resolves to is off limits (one bad answer among several is enough to refuse)."""
        addresses = self.resolve(host, port)
        if not addresses:
            raise UnresolvableHost(f"the fetch failed: cannot resolve host {host!r} (no address)")
        for address in addresses:
            if f"{address}:{port}" in self.allow or _bracketed(address, port) in self.allow:
                continue
            problem = refusal(address)
            if problem is not None:
                raise BlockedAddress(f"refused: {host} resolves to {_article(problem.kind)} {problem.kind} address "
                                     f"({address}), {problem.source}; briefroom only fetches from globally "
                                     "reachable addresses")
        return addresses[0]


def _bracketed(address: str, port: int) -> str:
    return f"[{address}]:{port}"


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


class _GuardedBackend(httpcore.NetworkBackend):
    """httpcore's own socket backend, behind `AddressPolicy.vet` for every connection."""

    def __init__(self, policy: AddressPolicy, connected: list[tuple[str, int]]):
        self._policy = policy
        self._inner = httpcore.SyncBackend()
        self._connected = connected

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[tuple] | None = None) -> httpcore.NetworkStream:
        address = self._policy.vet(host, port)
        self._connected.append((address, port))
        return self._inner.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                       socket_options=socket_options)  # type: ignore[arg-type]

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[tuple] | None = None) -> httpcore.NetworkStream:
        raise BlockedAddress("refused: unix sockets are not web addresses")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


@dataclass(frozen=True)
class Response:
    url: str
    status: int
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    body: bytes
    truncated: bool  # the body stopped at the size cap

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def charset(self) -> str | None:
        for part in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = part.strip().partition("=")
            if name.lower() == "charset" and value:
                return value.strip("\"' ").lower()
        return None


@dataclass
class HttpClient:
    """One GET at a time through the address policy. Timeouts in seconds; `deadline_s`
    bounds a whole request (a server that trickles a byte at a time stays under the read
    timeout forever otherwise)."""

    policy: AddressPolicy = field(default_factory=AddressPolicy)
    connect_timeout: float = 5.0
    read_timeout: float = 10.0
    deadline_s: float = 25.0
    user_agent: str = USER_AGENT
    clock: Callable[[], float] = time.monotonic
    connected: list[tuple[str, int]] = field(default_factory=list)  # every address a socket was opened to

    def __post_init__(self) -> None:
        self._pool = httpcore.ConnectionPool(ssl_context=ssl.create_default_context(), retries=0,
                                             max_connections=8, network_backend=_GuardedBackend(self.policy,
                                                                                               self.connected))

    def close(self) -> None:
        self._pool.close()

    def get(self, url: str, *, max_bytes: int, headers: dict[str, str] | None = None) -> Response:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise WebError(f"not an http(s) URL: {url[:200]}")
        host = parts.hostname
        default_port = 443 if parts.scheme == "https" else 80
        netloc_host = f"[{host}]" if ":" in host else host
        sent = {"Host": netloc_host if (parts.port or default_port) == default_port else f"{netloc_host}:{parts.port}",
                "User-Agent": self.user_agent, "Accept-Encoding": "gzip, identity", "Connection": "close",
                **(headers or {})}
        timeouts = {"connect": self.connect_timeout, "read": self.read_timeout, "write": self.read_timeout,
                    "pool": self.connect_timeout}
        started = self.clock()
        try:
            with self._pool.stream("GET", url, headers=list(sent.items()), extensions={"timeout": timeouts}) as resp:
                received = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in resp.headers}
                declared = received.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes and not 300 <= resp.status < 400:
                    return Response(url, resp.status, received, b"", True)  # not read at all: over the cap
                body, truncated = self._read(resp.iter_stream(), received, max_bytes, started)
                return Response(url, resp.status, received, body, truncated)
        except WebError:
            raise
        except (httpcore.ConnectTimeout, httpcore.ReadTimeout, httpcore.WriteTimeout, httpcore.PoolTimeout):
            raise WebError(f"timed out fetching {_origin(url)}", transient=True) from None
        except httpcore.UnsupportedProtocol as exc:
            raise WebError(f"unsupported URL: {exc}") from None
        except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.RemoteProtocolError, ssl.SSLError,
                OSError) as exc:
            raise WebError(f"could not fetch {_origin(url)}: {type(exc).__name__}: {str(exc)[:160]}",
                           transient=True) from None

    def _read(self, chunks: Iterable[bytes], headers: dict[str, str], max_bytes: int,
              started: float) -> tuple[bytes, bool]:
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", "", "gzip", "x-gzip", "deflate"):
            raise WebError(f"unsupported content encoding {encoding!r}")
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS if "gzip" in encoding else zlib.MAX_WBITS) \
            if encoding not in ("identity", "") else None
        out = bytearray()
        for chunk in chunks:
            if self.clock() - started > self.deadline_s:
                raise WebError(f"gave up after {self.deadline_s:g}s: the server sends too slowly", transient=True)
            if inflate is not None:  # bounded: a compression bomb stops at the cap too
                try:
                    chunk = inflate.decompress(chunk, max_bytes + 1 - len(out))
                except zlib.error:
                    raise WebError("the compressed body is corrupt") from None
            out += chunk
            if len(out) > max_bytes:
                return bytes(out[:max_bytes]), True
        return bytes(out), False


def _origin(url: str) -> str:
    """scheme://host[:port], never the userinfo (it may hold a password)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


def normalise_domain(domain: str) -> str:
    """`*.Example.COM.` -> `example.com`; a URL given by mistake gives its host."""
    text = domain.strip().lower()
    if "://" in text:
        text = urlsplit(text).hostname or ""
    text = text.removeprefix("*.").strip(".")
    try:
        return text.encode("idna").decode("ascii") if text else ""
    except UnicodeError:
        return text


@dataclass(frozen=True)
class DomainPolicy:
    """--allow-domain / --deny-domain: a domain covers its subdomains. With an allow
    list, only its domains are fetched; the deny list wins over it."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    @classmethod
    def of(cls, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> "DomainPolicy":
        return cls(tuple(d for d in map(normalise_domain, allow) if d),
                   tuple(d for d in map(normalise_domain, deny) if d))

    def problem(self, url: str) -> str | None:
        """Why `url` may not be fetched (None when it may)."""
        try:  # urllib checks brackets and ports only when asked for them: ask here, once
            parts = urlsplit(url)
            hostname, _ = parts.hostname, parts.port
        except ValueError as exc:  # "http://[::ffff:10.0.0.1", "http://h:99999/"
            return f"not a valid URL: {exc}"
        if parts.scheme not in ("http", "https"):
            return f"only http and https URLs are fetched, not {parts.scheme or 'a relative URL'!r}"
        host = normalise_domain(hostname or "")
        if not host:
            return "the URL has no host"
        if parts.username or parts.password:
            return "URLs with a user name or password are not fetched"
        if any(_within(host, d) for d in self.deny):
            return f"{host} is on the deny list (--deny-domain)"
        if self.allow and not any(_within(host, d) for d in self.allow):
            return f"{host} is not on the allow list (--allow-domain)"
        return None


def _within(host: str, domain: str) -> bool:
    return host == domain or host.endswith("." + domain)
