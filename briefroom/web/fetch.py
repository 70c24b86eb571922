"""One URL, start to finish: policy, robots.txt, rate limit, redirects, cache, text.

Every hop of a redirect chain is checked again like the first URL (scheme, allow/deny
domains, robots.txt, and the address at connect time); a chain that loops or runs past
`max_redirects` is refused. Requests to one host are spaced by the rate limit (or the
host's robots.txt Crawl-delay, up to 10 s); both count by host name, whatever the port
(`rate_key`). A page fetched before is fetched
conditionally (ETag / Last-Modified); within a run, a URL is fetched once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from urllib.parse import urljoin, urlsplit, urlunsplit

from protego import Protego

from briefroom.corpus.documents import source_id_for
from briefroom.protocol.redaction import redact_text
from briefroom.web.cache import CachedPage, WebCache
from briefroom.web.extract import page_text
from briefroom.web.net import BlockedAddress, DomainPolicy, HttpClient, Response, UnresolvableHost, WebError

ROBOTS_AGENT = "briefroom"
MAX_PAGE_BYTES = 5 * 1024 * 1024
MAX_ROBOTS_BYTES = 512 * 1024
MAX_CRAWL_DELAY = 10.0
REDIRECTS = (301, 302, 303, 307, 308)


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class FetchedPage:
    url: str  # as asked for
    final_url: str  # after redirects: what the page is cited by
    title: str
    text: str  # extracted, redacted
    source_id: str
    retrieved: str  # ISO 8601 UTC: fetched, or confirmed unchanged (304)
    content_type: str
    truncated: bool = False  # the body stopped at the size cap
    revalidated: bool = False  # the server said 304: the cached text still stands


@dataclass
class RateLimiter:
    """At most one request per `interval` seconds to each host (a host's robots.txt may
    ask for more). Threads wait for their own slot; the clock and sleep are injectable."""

    interval: float = 1.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    _next: dict[str, float] = field(default_factory=dict)
    _delay: dict[str, float] = field(default_factory=dict)
    _last: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def set_delay(self, host: str, seconds: float) -> None:
        """A host's own pace (robots.txt Crawl-delay), counted from its last request."""
        with self._lock:
            self._delay[host] = min(max(seconds, 0.0), MAX_CRAWL_DELAY)
            if host in self._last:
                self._next[host] = max(self._next.get(host, 0.0), self._last[host] + self._delay[host])

    def wait(self, host: str) -> float:
        """Block until `host` may be asked again; returns the seconds waited."""
        with self._lock:
            now = self.clock()
            slot = max(now, self._next.get(host, now))
            self._last[host] = slot
            self._next[host] = slot + max(self.interval, self._delay.get(host, 0.0))
        waited = slot - now
        if waited > 0:
            self.sleep(waited)
        return waited


@dataclass(frozen=True)
class _NoRobots:
    """robots.txt could not be used as rules: everything is allowed (missing) or
    nothing is (unreadable), and `why` says which and what happened."""

    allowed: bool
    why: str


class Robots:
    """robots.txt per origin (protego), read once per run. RFC 9309: a missing file (4xx)
    allows everything; a server error or no answer disallows everything. A host whose
    name does not resolve, or that the address policy refuses, has no robots.txt
    question to answer: that failure is the fetch's error, as it is."""

    def __init__(self, get: Callable[[str, int], Response], limiter: RateLimiter, agent: str = ROBOTS_AGENT):
        self._get = get
        self._limiter = limiter
        self._agent = agent
        self._rules: dict[str, Protego | _NoRobots] = {}
        self._lock = threading.Lock()

    def allowed(self, url: str) -> bool:
        return self.refusal(url) is None

    def refusal(self, url: str) -> str | None:
        """Why robots.txt keeps `url` from being fetched (None when it may be)."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        with self._lock:
            rules = self._rules.get(origin)
        if rules is None:
            rules = self._load(origin, rate_key(url))
            with self._lock:
                self._rules[origin] = rules
        if isinstance(rules, _NoRobots):
            return None if rules.allowed else f"robots.txt of {_host(url)} {rules.why}"
        if rules.can_fetch(url, self._agent):
            return None
        return f"robots.txt of {_host(url)} disallows {parts.path or '/'}"

    def _load(self, origin: str, key: str) -> Protego | _NoRobots:
        try:
            resp = self._get(origin + "/robots.txt", MAX_ROBOTS_BYTES)
        except (BlockedAddress, UnresolvableHost):
            raise  # not a robots question: the host itself is off limits or unknown, and the model is told so
        except WebError as exc:
            return _NoRobots(False, f"could not be read ({exc}), so nothing there is fetched (RFC 9309)")
        if 400 <= resp.status < 500:
            return _NoRobots(True, f"is missing (HTTP {resp.status})")
        if resp.status != 200:
            return _NoRobots(False, f"answered HTTP {resp.status}, so nothing there is fetched (RFC 9309)")
        rules = Protego.parse(resp.body.decode("utf-8", "replace"))
        delay = rules.crawl_delay(self._agent)
        if delay:
            self._limiter.set_delay(key, float(delay))
        return rules


class Fetcher:
    def __init__(self, client: HttpClient, cache: WebCache, domains: DomainPolicy = DomainPolicy(), *,
                 max_bytes: int = MAX_PAGE_BYTES, max_redirects: int = 5, limiter: RateLimiter | None = None,
                 now: Callable[[], str] = utc_now):
        self.client = client
        self.cache = cache
        self.domains = domains
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.limiter = limiter or RateLimiter()
        self.now = now
        self.robots = Robots(self._follow, self.limiter)
        self._memo: dict[str, FetchedPage] = {}
        self._lock = threading.Lock()

    def fetch(self, url: str) -> FetchedPage:
        url = _without_fragment(url.strip())
        with self._lock:
            if url in self._memo:
                return self._memo[url]
        cached = self.cache.get(url)
        resp = self._follow(url, self.max_bytes, cached=cached, check_robots=True)
        if resp.status == 304 and cached is not None:
            page = FetchedPage(url, cached.final_url, cached.title, cached.text, cached.source_id, self.now(),
                               cached.content_type, cached.truncated, revalidated=True)
        else:
            page = self._page(url, resp)
        self.cache.put(CachedPage(url=url, final_url=page.final_url,
                                  etag=resp.headers.get("etag") or (cached.etag if cached else None),
                                  last_modified=resp.headers.get("last-modified")
                                  or (cached.last_modified if cached else None),
                                  fetched_at=page.retrieved, content_type=page.content_type, title=page.title,
                                  text=page.text, source_id=page.source_id, truncated=page.truncated))
        with self._lock:
            self._memo[url] = page
        return page

    def _page(self, url: str, resp: Response) -> FetchedPage:
        if resp.status in (429, 502, 503, 504):
            raise WebError(f"HTTP {resp.status} from {_host(resp.url)}", transient=True)
        if resp.status != 200:
            raise WebError(f"HTTP {resp.status} from {_host(resp.url)}")
        if resp.truncated and not resp.body:
            raise WebError(f"refused: the page is larger than the {self.max_bytes:,}-byte cap (Content-Length "
                           f"{resp.headers.get('content-length')})")
        text = page_text(resp)
        return FetchedPage(url, redact_text(resp.url), text.title, text.text, source_id_for(text.text), self.now(),
                           resp.content_type, resp.truncated)

    def _follow(self, url: str, max_bytes: int, *, cached: CachedPage | None = None,
                check_robots: bool = False) -> Response:
        """GET `url`, following redirects; every hop is checked as the first was."""
        seen = {url}
        current = url
        for _ in range(self.max_redirects + 1):
            problem = self.domains.problem(current)
            if problem:
                raise WebError(f"refused: {problem}")
            refused = self.robots.refusal(current) if check_robots else None
            if refused:
                raise WebError(f"refused: {refused}")
            headers = {}
            if cached is not None and current == url:
                if cached.etag:
                    headers["If-None-Match"] = cached.etag
                if cached.last_modified:
                    headers["If-Modified-Since"] = cached.last_modified
            self.limiter.wait(rate_key(current))
            resp = self.client.get(current, max_bytes=max_bytes, headers=headers)
            if resp.status not in REDIRECTS:
                return resp
            location = resp.headers.get("location", "").strip()
            if not location:
                raise WebError(f"HTTP {resp.status} from {_host(current)} without a Location")
            current = _without_fragment(urljoin(current, location))
            if current in seen:
                raise WebError(f"refused: redirect loop at {_host(current)}")
            seen.add(current)
        raise WebError(f"refused: more than {self.max_redirects} redirects")


def _without_fragment(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(fragment=""))


def rate_key(url: str) -> str:
    """The host a request counts against, for the rate limit and a Crawl-delay alike:
    the server's name without the port (one machine, whichever port it listens on)."""
    return (urlsplit(url).hostname or "?").lower()


def _host(url: str) -> str:
    parts = urlsplit(url)
    return (parts.hostname or "?") + (f":{parts.port}" if parts.port else "")
