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
from briefroom.web.net import AddressPolicy, HttpClient, Resolver, WebError, system_resolve

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


def _json(body: bytes, provider: str) -> object:
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise WebError(f"{provider} answered with something that is not JSON") from None


def _results(items: object, title_key: str, url_key: str, snippet_key: str, max_results: int) -> list[WebResult]:
    out: list[WebResult] = []
    seen: set[str] = set()
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        url = str(item.get(url_key) or "").strip()
        if urlsplit(url).scheme not in ("http", "https") or url in seen:
            continue
        seen.add(url)
        out.append(WebResult(title=_clean(item.get(title_key), 200) or url[:200], url=url[:2000],
                             snippet=_clean(item.get(snippet_key), MAX_SNIPPET)))
        if len(out) >= max_results:
            break
    return out


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
        payload = _json(resp.body, "SearXNG")
        items = payload.get("results") if isinstance(payload, dict) else None
        return _results(items, "title", "url", "content", max_results)


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
        payload = _json(resp.body, "Brave Search")
        web = payload.get("web") if isinstance(payload, dict) else None
        items = web.get("results") if isinstance(web, dict) else None
        return _results(items, "title", "url", "description", max_results)


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
