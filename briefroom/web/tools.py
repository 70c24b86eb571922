"""`web_search` and `fetch_url` as typed Tools, and what the rest of a run needs of them.

Both run through `run_tool` and the envelope like the corpus tools: arguments checked
against their schema (a bad one is a contract error the model is told about), results
redacted before anything keeps them, offloaded and trimmed to the tool's budget, shown
as data; a failure (a refused address, robots.txt, a timeout, a binary page) is an
EngineeringFailure the model reads, never a crash.

`fetch_url` indexes the page in the run's index (`WebIndex`) and returns its passages
most relevant to the query as search hits: a page becomes a source like a document,
cited by its URL. The report's Sources list and sources.json add when each page was
retrieved (`cite_web`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from briefroom.corpus.documents import Document
from briefroom.corpus.tools import LocalSearchResult, SearchHit
from briefroom.protocol.tools import Tool
from briefroom.web.cache import WebCache
from briefroom.web.fetch import Fetcher, RateLimiter
from briefroom.web.index import WebIndex
from briefroom.web.net import AddressPolicy, DomainPolicy, HttpClient, Resolver, WebError, system_resolve
from briefroom.web.search import BRAVE_ENDPOINT, SearchProvider, WebResult, make_provider

WEB_SEARCH_BUDGET = 1500  # 8 results of title, URL and a 400-character snippet
FETCH_URL_BUDGET = 2000  # like local_search: a few passages of one page
FETCH_PASSAGES = 4
# Skipped results are reported briefly: enough to see why, little of the budget.
SKIPPED_SHOWN = 5
SKIPPED_URL_CHARS = 200


class WebSearchArgs(BaseModel):
    query: str = Field(min_length=2, max_length=400, description="what to search the web for, in plain words",
                       json_schema_extra={"x-fill": "task"})
    max_results: Literal[3, 5, 8] = Field(default=5, description="how many results to return")


class SkippedResult(BaseModel):
    """A search result that is not offered for fetching, and why (a malformed URL, a
    denied domain): the model and the run log see it; the other results stand."""

    url: str
    reason: str


class WebSearchResult(BaseModel):
    provider: str
    results: list[WebResult]
    skipped: list[SkippedResult] = Field(default_factory=list)


class FetchUrlArgs(BaseModel):
    url: str = Field(min_length=10, max_length=2000, pattern=r"^https?://[^\s]+$",
                     description="an http(s) URL, e.g. one from web_search results")
    query: str = Field(default="", max_length=400, description="what to look for in the page (picks its passages)")


class FetchUrlResult(LocalSearchResult):
    """The page's passages (`hits`, each with the page's source id and its URL as path),
    so a fetched page is read and cited like a corpus document."""

    url: str
    title: str
    retrieved: str
    revalidated: bool = False
    truncated: bool = False


@dataclass
class WebTools:
    provider: SearchProvider
    fetcher: Fetcher
    index: WebIndex

    def close(self) -> None:
        self.fetcher.client.close()
        self.fetcher.cache.close()
        client = getattr(self.provider, "client", None)
        if client is not None:
            client.close()

    def tools(self) -> dict[str, Tool]:
        return {
            "web_search": Tool("web_search", "Search the web; returns titles, URLs and snippets (open a page with "
                               "fetch_url to read and cite it).", WebSearchArgs, WebSearchResult, self.web_search,
                               timeout_s=30.0, retries=1, output_budget=WEB_SEARCH_BUDGET),
            "fetch_url": Tool("fetch_url", "Fetch a web page (HTML, PDF or text) and return its passages most "
                              "relevant to the query; the page becomes a source cited by its URL.",
                              FetchUrlArgs, FetchUrlResult, self.fetch_url, timeout_s=60.0,
                              output_budget=FETCH_URL_BUDGET),
        }

    def web_search(self, args: BaseModel) -> BaseModel:
        assert isinstance(args, WebSearchArgs)
        found = self.provider.search(args.query, args.max_results * 2)  # some may be off limits
        kept: list[WebResult] = []
        skipped: list[SkippedResult] = []
        for result in found:
            problem = self.fetcher.domains.problem(result.url)
            if problem is not None:
                skipped.append(SkippedResult(url=result.url[:SKIPPED_URL_CHARS], reason=problem[:200]))
            elif len(kept) < args.max_results:
                kept.append(result)
        return WebSearchResult(provider=self.provider.name, results=kept, skipped=skipped[:SKIPPED_SHOWN])

    def fetch_url(self, args: BaseModel) -> BaseModel:
        assert isinstance(args, FetchUrlArgs)
        try:
            page = self.fetcher.fetch(args.url)
        except ValueError as exc:  # urllib's word for a malformed URL (a bad port, an unclosed bracket)
            raise WebError(f"not a valid URL: {exc}") from None
        self.index.add_document(Document(page.source_id, page.title, page.final_url, page.text))
        hits = self.index.passages(page.source_id, args.query or page.title, FETCH_PASSAGES)
        return FetchUrlResult(url=page.final_url, title=page.title, retrieved=page.retrieved,
                              revalidated=page.revalidated, truncated=page.truncated,
                              hits=[SearchHit(source_id=h.source_id, chunk_id=h.chunk_id, title=page.title,
                                              path=page.final_url, start=h.start, end=h.end, text=h.text,
                                              score=h.score) for h in hits])


def build_web(index: WebIndex, data_dir: Path, *, provider: str, searxng_url: str | None = None,
              allow_domains: list[str] | tuple[str, ...] = (), deny_domains: list[str] | tuple[str, ...] = (),
              allow_addresses: list[str] | tuple[str, ...] = (), interval: float = 1.0,
              env: Mapping[str, str] | None = None, brave_endpoint: str = BRAVE_ENDPOINT,
              resolve: Resolver = system_resolve, client: HttpClient | None = None) -> WebTools:
    """The web tools of a run; ConfigError when the provider cannot work (no URL, no key).

    `allow_addresses`: "address:port" pairs fetch_url may reach though they are not
    public (a test's fixture server, an intranet); the search provider's own address is
    always allowed for the provider."""
    allow = frozenset(allow_addresses)
    domains = DomainPolicy.of(allow_domains, deny_domains)
    search = make_provider(provider, searxng_url=searxng_url, env=env, brave_endpoint=brave_endpoint, allow=allow,
                           resolve=resolve)
    fetcher = Fetcher(client or HttpClient(policy=AddressPolicy(allow=allow, resolve=resolve)), WebCache(data_dir),
                      domains, limiter=RateLimiter(interval=interval))
    return WebTools(search, fetcher, index)


_SOURCE_LINE = re.compile(r"^(\[\d+\] .*?) — `([^`]*)` \(source `([^`]+)`\)\s*$")


def cite_web(data_dir: Path, markdown: str, source_ids: list[str]) -> tuple[str, dict[str, dict[str, str]]]:
    """The report with each web source's Sources line saying when the page was retrieved,
    and {source id: {url, retrieved}} for sources.json."""
    cache = WebCache(data_dir)
    try:
        found = cache.retrievals(source_ids)
    finally:
        cache.close()
    lines = []
    for line in markdown.split("\n"):
        m = _SOURCE_LINE.match(line)
        if m and m.group(3) in found:
            seen = found[m.group(3)]
            line = f"{m.group(1)} — `{m.group(2)}`, retrieved {seen.retrieved} (source `{m.group(3)}`)"
        lines.append(line)
    return "\n".join(lines), {sid: {"url": r.url, "retrieved": r.retrieved} for sid, r in found.items()}
