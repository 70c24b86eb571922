"""Search providers behind one small interface: a query in, titles, URLs and snippets out.

- `searxng`: a self-hosted SearXNG's JSON API (`GET {url}/search?q=…&format=json`; the
  instance must list `json` under `search.formats` in its settings.yml). Its address is
  the user's own choice, so it may be on loopback or an intranet.
- `brave`: the Brave Search API, with the key from BRIEFROOM_BRAVE_API_KEY (or
  BRAVE_API_KEY). The key is sent in a header and is never logged, stored in settings,
  written to a run file or shown in an error (messages are scrubbed of it).
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Mapping
from typing import Protocol
from urllib.parse import urlencode, urlsplit

from pydantic import BaseModel

from briefroom.errors import ConfigError
from briefroom.web.net import AddressPolicy, HttpClient, Resolver, Response, WebError, system_resolve

PROVIDERS = ("searxng", "brave")
BRAVE_ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
BRAVE_KEY_VARS = ("BRIEFROOM_BRAVE_API_KEY", "BRAVE_API_KEY")
MAX_RESPONSE_BYTES = 2 * 1024 * 1024
MAX_SNIPPET = 400


class WebResult(BaseModel):
    title: str
    url: str
    snippet: str = ""


class SearchProvider(Protocol):
    name: str

    def search(self, query: str, max_results: int) -> list[WebResult]: ...


def _clean(text: object, limit: int) -> str:
    """Provider text (Brave marks matches with <strong>) as one plain line."""
    plain = html.unescape(re.sub(r"<[^>]+>", "", str(text or "")))
    return " ".join(plain.split())[:limit]


def _payload(resp: Response, provider: str) -> object:
    """A provider's reply as JSON, or a WebError saying what is wrong with it.

    A UTF-8 BOM is allowed (RFC 8259 lets parsers ignore it, and proxies add one). The
    parser is recursive: a reply nested deeper than the interpreter's stack is refused
    as such, at once, instead of escaping as a RecursionError."""
    if resp.truncated:
        raise WebError(f"{provider} sent a reply over {MAX_RESPONSE_BYTES} bytes; it was not read")
    try:
        return json.loads(resp.body.decode("utf-8-sig"))
    except RecursionError:
        raise WebError(f"{provider} answered with JSON too deeply nested to read") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise WebError(f"{provider} answered with something that is not JSON") from None


def _scheme(url: str) -> str:
    """The scheme, read without urllib (which raises on a malformed host, and one bad
    result must not cost the others: web_search reports it)."""
    scheme, colon, _ = url.partition(":")
    return scheme.strip().lower() if colon else ""


def _results(items: list[object], title_key: str, url_key: str, snippet_key: str,
             max_results: int) -> list[WebResult]:
    """Web results from a provider's list; entries that are not one (no URL, another
    scheme, a repeat) are left out. A malformed http(s) URL is kept for web_search to
    report with its reason."""
    out: list[WebResult] = []
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, Mapping):
            continue
        url = str(item.get(url_key) or "").strip()
        if _scheme(url) not in ("http", "https") or url in seen:
            continue
        seen.add(url)
        out.append(WebResult(title=_clean(item.get(title_key), 200) or url[:200], url=url[:2000],
                             snippet=_clean(item.get(snippet_key), MAX_SNIPPET)))
        if len(out) >= max_results:
            break
    return out


def _searxng_items(payload: object) -> list[object]:
    """SearXNG's `results` list. A reply without one, or with none while every engine
    failed (`unresponsive_engines`), is an error: an empty list would pass for "the web
    has nothing on this" when the search never ran."""
    if not isinstance(payload, dict) or not isinstance(payload.get("results"), list):
        raise WebError("SearXNG's reply has no results list")
    items: list[object] = payload["results"]
    failed = payload.get("unresponsive_engines")
    if not items and isinstance(failed, list) and failed:
        names = ", ".join(_engine(entry) for entry in failed[:5])
        raise WebError(f"SearXNG's engines did not answer: {names}", transient=True)
    return items


def _engine(entry: object) -> str:
    """An `unresponsive_engines` entry, [name, reason], as "name (reason)"."""
    if isinstance(entry, list) and entry:
        return _clean(entry[0], 40) + (f" ({_clean(entry[1], 80)})" if len(entry) > 1 and entry[1] else "")
    return _clean(entry, 40)


def _brave_items(payload: object) -> list[object]:
    """Brave's `web.results`. Brave leaves `web` out when nothing was found; anything
    else that is not that shape is an error, not an empty result."""
    if not isinstance(payload, dict):
        raise WebError("Brave Search's reply is not a JSON object")
    if "web" not in payload:
        return []
    web = payload["web"]
    results = web.get("results") if isinstance(web, dict) else None
    if not isinstance(results, list):
        raise WebError("Brave Search's reply has no web.results list")
    return results


class SearxngProvider:
    name = "searxng"

    def __init__(self, base_url: str, client: HttpClient):
        self.base_url = base_url.rstrip("/")
        self.client = client

    def search(self, query: str, max_results: int) -> list[WebResult]:
        url = f"{self.base_url}/search?" + urlencode({"q": query, "format": "json", "safesearch": 1})
        resp = self.client.get(url, max_bytes=MAX_RESPONSE_BYTES, headers={"Accept": "application/json"})
        if resp.status == 403:
            raise WebError("SearXNG refused format=json: add json under search.formats in its settings.yml")
        if resp.status == 429 or resp.status >= 500:
            raise WebError(f"SearXNG answered HTTP {resp.status}", transient=True)
        if resp.status != 200:
            raise WebError(f"SearXNG answered HTTP {resp.status}")
        return _results(_searxng_items(_payload(resp, "SearXNG")), "title", "url", "content", max_results)


class BraveProvider:
    name = "brave"

    def __init__(self, api_key: str, client: HttpClient, endpoint: str = BRAVE_ENDPOINT):
        if not api_key.strip():
            raise ConfigError("the Brave search provider needs an API key in BRIEFROOM_BRAVE_API_KEY")
        self._key = api_key.strip()
        self.endpoint = endpoint
        self.client = client

    def __repr__(self) -> str:  # never the key
        return f"BraveProvider(endpoint={self.endpoint!r})"

    def search(self, query: str, max_results: int) -> list[WebResult]:
        url = f"{self.endpoint}?" + urlencode({"q": query, "count": max(1, min(max_results, 20))})
        try:
            resp = self.client.get(url, max_bytes=MAX_RESPONSE_BYTES,
                                   headers={"Accept": "application/json", "X-Subscription-Token": self._key})
        except WebError as exc:  # whatever an error says, it never says the key
            raise WebError(str(exc).replace(self._key, "[REDACTED:BRAVE_API_KEY]"), transient=exc.transient) from None
        if resp.status in (401, 403):
            raise WebError("Brave Search refused the API key (BRIEFROOM_BRAVE_API_KEY)")
        if resp.status == 429 or resp.status >= 500:
            raise WebError(f"Brave Search answered HTTP {resp.status}", transient=True)
        if resp.status != 200:
            raise WebError(f"Brave Search answered HTTP {resp.status}")
        return _results(_brave_items(_payload(resp, "Brave Search")), "title", "url", "description", max_results)


def brave_key(env: Mapping[str, str] | None = None) -> str:
    values = os.environ if env is None else env
    return next((values[name] for name in BRAVE_KEY_VARS if values.get(name)), "")


def allow_for(url: str, resolve: Resolver = system_resolve) -> frozenset[str]:
    """The addresses of a service the user named (a self-hosted SearXNG), which the
    address policy lets through though they may be on loopback or an intranet."""
    parts = urlsplit(url)
    if not parts.hostname:
        return frozenset()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        return frozenset(f"{a}:{port}" if ":" not in a else f"[{a}]:{port}" for a in resolve(parts.hostname, port))
    except WebError:
        return frozenset()  # it will fail when searched, with the resolver's message


def make_provider(name: str, *, searxng_url: str | None = None, env: Mapping[str, str] | None = None,
                  brave_endpoint: str = BRAVE_ENDPOINT, allow: frozenset[str] = frozenset(),
                  resolve: Resolver = system_resolve) -> SearchProvider:
    """The provider the settings name; ConfigError when it cannot work (no URL, no key)."""
    if name == "searxng":
        if not searxng_url:
            raise ConfigError("the searxng provider needs its URL: --searxng-url http://host:port "
                              "(or BRIEFROOM_SEARXNG_URL)")
        if urlsplit(searxng_url).scheme not in ("http", "https"):
            raise ConfigError(f"--searxng-url must be an http(s) URL, got {searxng_url[:60]!r}")
        policy = AddressPolicy(allow=allow | allow_for(searxng_url, resolve), resolve=resolve)
        return SearxngProvider(searxng_url, HttpClient(policy=policy))
    if name == "brave":
        policy = AddressPolicy(allow=allow | allow_for(brave_endpoint, resolve)
                               if brave_endpoint != BRAVE_ENDPOINT else allow, resolve=resolve)
        return BraveProvider(brave_key(env), HttpClient(policy=policy), endpoint=brave_endpoint)
    raise ConfigError(f"--search-provider must be one of {', '.join(PROVIDERS)}, got {name!r}")
