"""Web research against a local fixture web (tests/web_fixture.py) on loopback: the real
HTTP client, hostile pages, and one `briefroom research --web` run with the test model.

Targets: no crash (every failure is a tool error), no connection to a non-loopback
address (a spy on socket.connect records every address, and private ones are refused
before any socket exists), no planted secret in prompts, the run directory or the data
directory, every fetched page a source cited by its URL with its retrieval time. Nothing
waits on a clock: the slow page never answers, so any read timeout ends it.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from briefroom.events import LlmCall, ToolCall, ToolResult, read_events
from briefroom.protocol.prompt_assembly import DATA_BLOCK
from briefroom.protocol.tools import run_tool
from briefroom.web.cache import WebCache
from briefroom.web.fetch import Fetcher, RateLimiter
from briefroom.web.index import WebIndex
from briefroom.web.net import AddressPolicy, DomainPolicy, HttpClient
from briefroom.web.search import make_provider
from briefroom.web.tools import WebTools
from tests.unit.test_web_tools import HashEmbedder
from tests.web_fixture import BRAVE_KEY, INJECTION, Site, address, fake_aws_keys, serve

pytestmark = pytest.mark.e2e


@pytest.fixture
def connects(monkeypatch):
    """Every address any socket in this process tried to connect to."""
    seen: list[object] = []
    guarded = socket.socket.connect  # the conftest guard's (loopback only for e2e)

    def spy(sock, addr):
        seen.append(addr)
        return guarded(sock, addr)

    monkeypatch.setattr(socket.socket, "connect", spy)
    return seen


def only_loopback(seen: list[object]) -> bool:
    return all(isinstance(a, tuple) and ipaddress.ip_address(a[0]).is_loopback for a in seen)


@pytest.fixture
def site():
    with serve() as s:
        yield s


def web_tools(site: Site, data: Path, read_timeout: float = 5.0, max_bytes: int = 256 * 1024) -> WebTools:
    allow = frozenset({address(site)})
    client = HttpClient(policy=AddressPolicy(allow=allow), read_timeout=read_timeout)
    fetcher = Fetcher(client, WebCache(data), DomainPolicy(), max_bytes=max_bytes, limiter=RateLimiter(interval=0))
    provider = make_provider("searxng", searxng_url=site.base)
    return WebTools(provider, fetcher, WebIndex(data, HashEmbedder()))


HOSTILE = {  # path -> words of the error the model reads (None: the page is read)
    "/pages/cloud.html": None,
    "/pages/notes.txt": None,
    "/pages/report.pdf": None,
    "/pages/injection.html": None,
    "/pages/secret.html": None,
    "/redirect/to-cloud": None,
    "/huge": None,  # read up to the cap, the rest never read
    "/pages/binary.html": "binary",
    "/pages/image.png": "unsupported content type",
    "/private/internal.html": "robots.txt",
    "/redirect/to-robots-disallowed": "robots.txt",
    "/redirect/private": "private address (10.0.0.1)",
    "/redirect/metadata": "link-local address (169.254.169.254)",
    "/redirect/loop-a": "redirect loop",
    "/huge-declared": "larger than",
    "/missing": "HTTP 404",
}


def test_hostile_pages_are_tool_errors_and_nothing_private_is_reached(site, tmp_path, connects):
    tools = web_tools(site, tmp_path / "data").tools()
    for path, error in HOSTILE.items():
        outcome = run_tool(tools["fetch_url"], path, {"url": site.url(path), "query": "cloud market"})
        if error is None:
            assert outcome.ok, (path, outcome.error)
            assert outcome.result.hits and outcome.result.hits[0].path.startswith(site.base)
        else:
            assert not outcome.ok and error in outcome.error["message"], (path, outcome.error)
    assert connects and only_loopback(connects)
    assert not any("/private/" in r for r in site.requests)  # robots.txt said no: never asked for
    huge = run_tool(tools["fetch_url"], "again", {"url": site.url("/huge")})
    assert huge.result.truncated


def test_a_page_that_never_answers_ends_at_the_read_timeout(site, tmp_path):
    tools = web_tools(site, tmp_path / "data", read_timeout=0.3).tools()
    outcome = run_tool(tools["fetch_url"], "slow", {"url": site.url("/slow")})
    assert not outcome.ok and "timed out" in outcome.error["message"]


def test_the_second_fetch_is_conditional_and_reuses_the_cache(site, tmp_path):
    first = web_tools(site, tmp_path / "data")
    page = run_tool(first.tools()["fetch_url"], "a", {"url": site.url("/pages/etag.html")}).result
    first.close()
    second = web_tools(site, tmp_path / "data")
    again = run_tool(second.tools()["fetch_url"], "b", {"url": site.url("/pages/etag.html")}).result
    assert site.etag_hits == 1 and again.revalidated
    assert again.hits[0].source_id == page.hits[0].source_id


def test_searxng_and_brave_against_the_fixture(site, connects):
    results = make_provider("searxng", searxng_url=site.base).search("cloud market", 5)
    assert [r.url for r in results] == [site.url("/pages/cloud.html"), site.url("/pages/batteries.html")]
    brave = make_provider("brave", env={"BRIEFROOM_BRAVE_API_KEY": BRAVE_KEY},
                          brave_endpoint=site.url("/brave/res/v1/web/search"))
    found = brave.search("cloud market", 5)
    assert found[0].title == "Cloud market outlook" and found[0].snippet.startswith("Spending will reach 723")
    assert site.headers_seen[-1]["x-subscription-token"] == BRAVE_KEY
    assert not any(BRAVE_KEY in r for r in site.requests)  # a header, never in the URL
    assert only_loopback(connects)


ORDER = ["/redirect/private", "/pages/cloud.html", "/pages/injection.html", "/pages/secret.html",
         "/redirect/metadata", "/pages/binary.html", "/private/internal.html", "/redirect/loop-a",
         "/pages/notes.txt", "/pages/report.pdf", "/pages/batteries.html", "/redirect/to-cloud"]


def scan(root: Path, values: list[str]) -> list[str]:
    return [f"{p.relative_to(root)}: {v[:8]}" for p in root.rglob("*") if p.is_file()
            for v in values if v.encode() in p.read_bytes()]


def test_research_with_web_and_corpus_writes_a_report_citing_pages_by_url(site, small_corpus, tmp_path, monkeypatch,
                                                                           connects):
    from briefroom.cli import app

    site.search_order = ORDER
    monkeypatch.setenv("BRIEFROOM_WEB_ALLOW_ADDRESSES", address(site))
    monkeypatch.setenv("BRIEFROOM_WEB_INTERVAL", "0")
    monkeypatch.setenv("BRIEFROOM_BRAVE_API_KEY", BRAVE_KEY)  # set, unused: must not appear anywhere
    out, data = tmp_path / "run", tmp_path / "data"
    result = CliRunner().invoke(app, [
        "research", "How big is the 2026 public cloud market and how fast are storage prices falling?",
        "--corpus", str(small_corpus), "--model", "test", "--out", str(out), "--data-dir", str(data),
        "--web", "--search-provider", "searxng", "--searxng-url", site.base, "--deny-domain", "tracker.example",
        "--rounds", "2", "--no-memory", "--json", "-q"])
    assert result.exit_code == 0, result.output
    events = read_events(out / "run.jsonl")
    fetches = [e for e in events if isinstance(e, ToolResult) and e.tool == "fetch_url"]
    assert fetches and any(e.ok for e in fetches) and any(not e.ok for e in fetches)  # hostile ones failed as tools
    sources = json.loads((out / "sources.json").read_text())
    web = sources.get("web", {})
    fetched_ok = {sid for sid, rec in sources["sources"].items() if rec["path"].startswith(site.base)}
    assert fetched_ok and set(web) == fetched_ok  # every fetched page a source, with its URL and retrieval time
    assert all(web[sid]["url"] == sources["sources"][sid]["path"] and web[sid]["retrieved"].endswith("Z")
               for sid in fetched_ok)
    report = (out / "report.md").read_text()
    cited_web = [sid for sid in sources["cited"] if sid in web]
    assert cited_web, report  # the report cites the web
    for sid in cited_web:
        assert f"`{web[sid]['url']}`, retrieved {web[sid]['retrieved']} (source `{sid}`)" in report
    assert any(not rec["path"].startswith("http") for rec in sources["sources"].values())  # and the corpus
    # the same checks as a corpus run: no private address, no secret, injected text only as data
    assert only_loopback(connects)
    assert not any("/private/" in r for r in site.requests)
    key_id, secret = fake_aws_keys()
    assert scan(out, [key_id, secret, BRAVE_KEY]) == [] and scan(data, [key_id, secret, BRAVE_KEY]) == []
    delivered = False
    for call in (e for e in events if isinstance(e, LlmCall)):
        for message in call.messages:
            text = message.content if isinstance(message.content, str) else json.dumps(message.content)
            assert key_id not in text and secret not in text and BRAVE_KEY not in text
            if message.type == "ai":
                continue  # the model's own reply, not text put before it
            if INJECTION[:40] in text:
                delivered = True
                inside = " ".join(body for *_, body in DATA_BLOCK.findall(text))
                assert INJECTION[:40] in inside and INJECTION[:40] not in DATA_BLOCK.sub("", text)
    assert delivered  # the injected page did reach a prompt, as data
    for call in (e for e in events if isinstance(e, ToolCall)):
        assert "PWNED" not in json.dumps(call.args)


def test_research_on_the_web_alone(site, tmp_path, monkeypatch, connects):
    from briefroom.cli import app

    monkeypatch.setenv("BRIEFROOM_WEB_ALLOW_ADDRESSES", address(site))
    monkeypatch.setenv("BRIEFROOM_WEB_INTERVAL", "0")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "research", "How big is the 2026 public cloud market?", "--model", "test", "--out", str(out),
        "--data-dir", str(tmp_path / "data"), "--web", "--searxng-url", site.base, "--rounds", "1", "--no-memory",
        "-q"])
    assert result.exit_code == 0, result.output
    sources = json.loads((out / "sources.json").read_text())
    assert sources["cited"] and all(sid in sources["web"] for sid in sources["cited"])  # only pages to cite
    assert "723 billion USD in 2026" in (out / "report.md").read_text()
    assert only_loopback(connects)
