"""web_search and fetch_url behind the tool contract: run_tool, the envelope, the index,
citations by URL with the retrieval time (no sockets: a scripted client)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from briefroom.agents.searcher import WEB_READS_PER_QUESTION, read_found
from briefroom.corpus.tools import LocalSearchResult, corpus_tools
from briefroom.protocol.artifacts import ArtifactStore
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.envelope import envelope
from briefroom.protocol.tools import run_tool
from briefroom.report.checks import split_report
from briefroom.runlog import RunLog
from briefroom.web.cache import WebCache
from briefroom.web.fetch import Fetcher, RateLimiter
from briefroom.web.index import WebIndex
from briefroom.web.net import DomainPolicy
from briefroom.web.search import SearxngProvider, WebResult
from briefroom.web.tools import FetchUrlResult, WebSearchResult, WebTools, cite_web
from tests.fakes import HashEmbedder
from tests.unit.test_web_fetch import HTML, ROBOTS_OK, Scripted
from tests.unit.test_web_search import Canned
from tests.web_fixture import INJECTION, fake_aws_keys


class Provider:
    name = "fake"

    def __init__(self, results):
        self.results = results

    def search(self, query, max_results):
        return self.results[:max_results]


KEY_ID, SECRET = fake_aws_keys(21)
PAGES = {
    "https://news.example/robots.txt": ROBOTS_OK,
    "https://news.example/cloud": (200, HTML, (
        "<html><head><title>Cloud outlook</title></head><body><article>"
        "<p>Public cloud spending will reach 723 billion USD in 2026, analysts said.</p>"
        f"<p>Storage prices fell 8% in 2026. {INJECTION}</p>"
        f"<p>The old deploy key was aws_access_key_id = {KEY_ID} with aws_secret_access_key = {SECRET}.</p>"
        "</article></body></html>").encode()),
    "https://news.example/private/x": (200, HTML, b"<p>never</p>"),
    "https://news.example/bin": (200, HTML, b"\x7fELF\x00\x00\x00binary"),
    "https://news.example/long": (200, HTML, b"<html><body>" + b"".join(
        f"<p>Paragraph {i}: the cloud region count grew by {i} in 2026 according to the long report.</p>".encode()
        for i in range(300)) + b"</body></html>"),
}


@pytest.fixture
def web(tmp_path):
    index = WebIndex(tmp_path / "data", HashEmbedder("hash-web-test"))
    client = Scripted(PAGES)
    fetcher = Fetcher(client, WebCache(tmp_path / "data"), DomainPolicy.of(deny=["tracker.example"]),
                      limiter=RateLimiter(interval=0),
                      now=lambda: "2026-12-01T10:00:00Z")
    provider = Provider([WebResult(title="Cloud", url="https://news.example/cloud", snippet="723 billion"),
                         WebResult(title="Ads", url="https://ads.tracker.example/x", snippet="buy"),
                         WebResult(title="Long", url="https://news.example/long", snippet="regions")])
    tools = WebTools(provider, fetcher, index)
    yield tools
    index.close()


def test_fetch_url_indexes_the_page_and_returns_its_passages_as_hits(web):
    outcome = run_tool(web.tools()["fetch_url"], "c1", {"url": "https://news.example/cloud", "query": "cloud spending"})
    assert outcome.ok, outcome.error
    result = outcome.result
    assert isinstance(result, FetchUrlResult) and isinstance(result, LocalSearchResult)  # read like local_search
    assert result.url == "https://news.example/cloud" and result.retrieved == "2026-12-01T10:00:00Z"
    assert result.hits and all(h.path == "https://news.example/cloud" for h in result.hits)
    sid = result.hits[0].source_id
    assert sid in web.index.scope
    doc = web.index.document(sid)
    assert doc is not None and "723 billion USD in 2026" in doc.text  # the claim checks read it like a document
    # and the corpus tools find it from now on
    found = run_tool(corpus_tools(web.index)["local_search"], "c2", {"query": "public cloud spending 2026", "k": 4})
    assert any(h.source_id == sid for h in found.result.hits)
    assert run_tool(corpus_tools(web.index)["read_source"], "c3", {"source_id": sid}).ok


def test_no_planted_secret_in_a_result_the_index_or_the_envelope(web, tmp_path):
    outcome = run_tool(web.tools()["fetch_url"], "c1", {"url": "https://news.example/cloud", "query": "deploy key"})
    shown = envelope(outcome, TokenCounter("cl100k_base"), store=ArtifactStore(tmp_path / "run" / "artifacts")).text
    assert KEY_ID not in shown and SECRET not in shown
    assert KEY_ID not in outcome.result.model_dump_json()
    web.close()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert KEY_ID.encode() not in data and SECRET.encode() not in data, path


def test_injected_text_reaches_the_model_only_as_data(web):
    outcome = run_tool(web.tools()["fetch_url"], "c1", {"url": "https://news.example/cloud", "query": "storage prices"})
    text = envelope(outcome, TokenCounter("cl100k_base")).text
    assert text.startswith("<data-") and text.rstrip().endswith(">")
    opened = text.index("Ignore all previous instructions")  # the page's words are shown...
    assert text.rfind("<data-", 0, opened) == 0  # ...inside the one block that wraps the result
    assert text.count("<data-") == 1


@pytest.mark.parametrize("url, words", [
    ("https://news.example/private/x", "robots.txt"),
    ("https://news.example/bin", "binary"),
    ("https://news.example/missing", "HTTP 404"),
    ("https://ads.tracker.example/x", "deny list"),
    ("http://[::1", "not a valid URL"),
])
def test_a_failing_fetch_is_a_tool_error_the_model_reads(web, url, words):
    outcome = run_tool(web.tools()["fetch_url"], "c1", {"url": url})
    assert not outcome.ok and outcome.error["error"] == "engineering_failure"
    assert words in outcome.error["message"]
    shown = envelope(outcome, TokenCounter("cl100k_base")).text
    assert words in shown and "do not retry the same call blindly" in shown


def test_arguments_that_are_not_a_url_are_a_contract_error(web):
    outcome = run_tool(web.tools()["fetch_url"], "c1", {"url": "Find passages in the corpus"})
    assert outcome.error["error"] == "contract_error"


def test_web_search_drops_what_may_not_be_fetched(web):
    outcome = run_tool(web.tools()["web_search"], "c1", {"query": "cloud market", "max_results": 3})
    assert isinstance(outcome.result, WebSearchResult)
    assert [r.url for r in outcome.result.results] == ["https://news.example/cloud", "https://news.example/long"]


def test_a_large_result_is_offloaded_like_any_tool_result(web, tmp_path):
    outcome = run_tool(web.tools()["fetch_url"], "c1", {"url": "https://news.example/long", "query": "region count"})
    env = envelope(outcome, TokenCounter("cl100k_base"), store=ArtifactStore(tmp_path / "artifacts"))
    assert env.artifact is not None and env.artifact in env.text


def test_read_found_opens_the_first_results_nobody_opened(web):
    log = RunLog(None)
    tools = web.tools()
    ctx = SimpleNamespace(tools=tools, log=log, add_tool_output=lambda clock, text: None)
    turn = SimpleNamespace(ctx=ctx, role=SimpleNamespace(tools=("local_search",),
                                                          optional_tools=("web_search", "fetch_url")),
                           worker="searcher", round=1, clock=lambda: (1, 0))
    searched = run_tool(tools["web_search"], "s1", {"query": "cloud market", "max_results": 5})
    done = read_found(turn, [searched], "How big is the cloud market?")
    assert len(done) == WEB_READS_PER_QUESTION and all(o.ok for o in done)
    assert [o.args["url"] for o in done] == ["https://news.example/cloud", "https://news.example/long"]
    assert [e.event for e in log.events] == ["tool_call", "tool_result"] * 2
    # a role without fetch_url, or a run without it, reads nothing
    turn.role = SimpleNamespace(tools=("local_search",), optional_tools=())
    assert read_found(turn, [searched], "q") == []


def test_sources_list_and_sources_json_say_when_a_page_was_retrieved(web, tmp_path):
    outcome = run_tool(web.tools()["fetch_url"], "c1", {"url": "https://news.example/cloud"})
    sid = outcome.result.hits[0].source_id
    markdown = ("# Title\n\n## Short answer\n\nSpending will reach 723 billion USD in 2026 [1] [2].\n\n## Sources\n\n"
                f"[1] Cloud outlook — `https://news.example/cloud` (source `{sid}`)\n"
                "[2] Local notes — `notes/market.md` (source `S00000001`)\n")
    cited, info = cite_web(tmp_path / "data", markdown, [sid, "S00000001"])
    assert f"[1] Cloud outlook — `https://news.example/cloud`, retrieved 2026-12-01T10:00:00Z (source `{sid}`)" \
        in cited
    assert "[2] Local notes — `notes/market.md` (source `S00000001`)" in cited
    assert info == {sid: {"url": "https://news.example/cloud", "retrieved": "2026-12-01T10:00:00Z"}}
    assert split_report(cited)[1] == {"1": sid, "2": "S00000001"}  # the report's own checks still read it


def test_one_malformed_search_result_is_skipped_with_its_reason_not_the_whole_search(web):
    payload = {"results": [{"title": "Cloud", "url": "https://news.example/cloud", "content": "723 billion"},
                           {"title": "bad", "url": "http://[::ffff:10.0.0.1", "content": "unclosed bracket"},
                           {"title": "bad port", "url": "https://news.example:99999/x", "content": ""},
                           {"title": "Long", "url": "https://news.example/long", "content": "regions"}]}
    web.provider = SearxngProvider("http://searx.local", Canned(payload=payload))
    outcome = run_tool(web.tools()["web_search"], "s1", {"query": "cloud market", "max_results": 5})
    assert outcome.ok, outcome.error
    assert [r.url for r in outcome.result.results] == ["https://news.example/cloud", "https://news.example/long"]
    skipped = {s.url: s.reason for s in outcome.result.skipped}
    assert set(skipped) == {"http://[::ffff:10.0.0.1", "https://news.example:99999/x"}
    assert all(reason.startswith("not a valid URL") for reason in skipped.values())
    shown = envelope(outcome, TokenCounter("cl100k_base")).text
    assert "not a valid URL" in shown  # the model is told, and the run log keeps the result


def test_a_denied_search_result_is_reported_as_skipped(web):
    outcome = run_tool(web.tools()["web_search"], "c1", {"query": "cloud market", "max_results": 3})
    assert [(s.url, s.reason) for s in outcome.result.skipped] == [
        ("https://ads.tracker.example/x", "ads.tracker.example is on the deny list (--deny-domain)")]


def test_a_provider_reply_nested_too_deep_is_one_clear_tool_error(web):
    web.provider = SearxngProvider("http://searx.local", Canned(raw=b"[" * 100_000 + b"]" * 100_000))
    outcome = run_tool(web.tools()["web_search"], "s1", {"query": "cloud market"}, sleep=lambda s: None)
    assert not outcome.ok and "too deeply nested" in outcome.error["message"]
    assert "RecursionError" not in outcome.error["message"] and outcome.attempts == 1  # not retried as a crash


def test_a_search_that_fails_is_a_tool_error_not_an_empty_result(web):
    web.provider = SearxngProvider("http://searx.local", Canned(payload={"error": "no engines configured"}))
    outcome = run_tool(web.tools()["web_search"], "s1", {"query": "cloud market"}, sleep=lambda s: None)
    assert not outcome.ok and outcome.result is None and "no results list" in outcome.error["message"]
