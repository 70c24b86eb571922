"""Search providers: SearXNG's JSON and Brave's, parsed into title/url/snippet; the Brave
key goes in a header and nowhere else."""

from __future__ import annotations

import json
import time

import pytest

from briefroom.errors import ConfigError
from briefroom.protocol.redaction import redact_text
from briefroom.web.net import Response, WebError
from briefroom.web.search import MAX_RESPONSE_BYTES, BraveProvider, SearxngProvider, brave_key, make_provider
from tests.web_fixture import BRAVE_KEY


class Canned:
    def __init__(self, status=200, payload=None, raw=None, error=None, truncated=False):
        self.status, self.payload, self.raw, self.error, self.truncated = status, payload, raw, error, truncated
        self.calls: list[tuple[str, dict]] = []

    def get(self, url, *, max_bytes, headers=None):
        self.calls.append((url, dict(headers or {})))
        if self.error:
            raise self.error
        body = self.raw if self.raw is not None else json.dumps(self.payload).encode()
        return Response(url, self.status, {"content-type": "application/json"}, body, self.truncated)


SEARX = {"results": [
    {"title": "Cloud <b>market</b>", "url": "https://a.example/cloud", "content": "723 billion &amp; more"},
    {"title": "", "url": "https://b.example/x", "content": "untitled"},
    {"title": "dup", "url": "https://a.example/cloud", "content": "the same URL again"},
    {"title": "ftp", "url": "ftp://c.example/f", "content": "not the web"},
    "not an object",
]}


def test_searxng_json_becomes_results():
    client = Canned(payload=SEARX)
    results = SearxngProvider("http://searx.local:8888/", client).search("cloud market 2026", 5)
    assert [(r.title, r.url, r.snippet) for r in results] == [
        ("Cloud market", "https://a.example/cloud", "723 billion & more"),
        ("https://b.example/x", "https://b.example/x", "untitled")]
    url, headers = client.calls[0]
    assert url.startswith("http://searx.local:8888/search?") and "format=json" in url and "q=cloud+market+2026" in url


def test_searxng_without_the_json_format_says_how_to_enable_it():
    with pytest.raises(WebError, match="search.formats"):
        SearxngProvider("http://s", Canned(status=403, raw=b"forbidden")).search("q?", 3)


@pytest.mark.parametrize("status, transient", [(429, True), (502, True), (400, False)])
def test_provider_errors_say_whether_a_retry_may_help(status, transient):
    with pytest.raises(WebError) as err:
        SearxngProvider("http://s", Canned(status=status, raw=b"")).search("q?", 3)
    assert err.value.transient is transient


def test_not_json_is_an_error_not_a_crash():
    with pytest.raises(WebError, match="not JSON"):
        SearxngProvider("http://s", Canned(raw=b"<html>")).search("q?", 3)


def test_max_results_is_kept():
    payload = {"results": [{"title": f"t{i}", "url": f"https://e.example/{i}", "content": ""} for i in range(20)]}
    assert len(SearxngProvider("http://s", Canned(payload=payload)).search("q?", 3)) == 3


def test_brave_sends_its_key_in_a_header_and_parses_results():
    client = Canned(payload={"web": {"results": [{"title": "Cloud <strong>outlook</strong>",
                                                  "url": "https://a.example/c", "description": "It <strong>grew"
                                                  "</strong> 31%"}]}})
    results = BraveProvider(BRAVE_KEY, client, endpoint="https://brave.test/search").search("cloud", 5)
    assert results[0].title == "Cloud outlook" and results[0].snippet == "It grew 31%"
    url, headers = client.calls[0]
    assert headers["X-Subscription-Token"] == BRAVE_KEY and BRAVE_KEY not in url and "count=5" in url


def test_the_brave_key_is_never_in_an_error_or_a_repr():
    error = WebError(f"could not fetch: header X-Subscription-Token: {BRAVE_KEY}")
    provider = BraveProvider(BRAVE_KEY, Canned(error=error), endpoint="https://brave.test/search")
    with pytest.raises(WebError) as err:
        provider.search("cloud", 5)
    assert BRAVE_KEY not in str(err.value) and "[REDACTED" in str(err.value)
    assert BRAVE_KEY not in repr(provider)
    with pytest.raises(WebError, match="refused the API key") as refused:
        BraveProvider(BRAVE_KEY, Canned(status=401, raw=b"{}")).search("cloud", 5)
    assert BRAVE_KEY not in str(refused.value)


def test_the_run_logs_redactor_covers_the_key_where_it_is_named():
    # A key reaches no run file through briefroom's code (tests above and the e2e run);
    # if one were pasted into a question or a document as an assignment, redaction takes it out.
    for text in (f"BRIEFROOM_BRAVE_API_KEY={BRAVE_KEY}", f"export BRAVE_API_KEY={BRAVE_KEY}",
                 f'{{"X-Subscription-Token": "{BRAVE_KEY}"}}', f"the key is {BRAVE_KEY} (bare)"):
        assert BRAVE_KEY not in redact_text(text), text


def test_provider_configuration_errors_are_one_line():
    with pytest.raises(ConfigError, match="--searxng-url"):
        make_provider("searxng", searxng_url=None)
    with pytest.raises(ConfigError, match="http"):
        make_provider("searxng", searxng_url="searx.local:8888")
    with pytest.raises(ConfigError, match="BRIEFROOM_BRAVE_API_KEY"):
        make_provider("brave", env={})
    with pytest.raises(ConfigError, match="searxng, brave"):
        make_provider("google", env={})


def test_the_key_comes_from_the_environment_only():
    assert brave_key({"BRIEFROOM_BRAVE_API_KEY": "k1", "BRAVE_API_KEY": "k2"}) == "k1"
    assert brave_key({"BRAVE_API_KEY": "k2"}) == "k2"
    provider = make_provider("brave", env={"BRIEFROOM_BRAVE_API_KEY": BRAVE_KEY})
    assert provider.name == "brave" and BRAVE_KEY not in repr(provider)


def test_a_self_hosted_searxng_on_loopback_is_allowed_for_search_only():
    provider = make_provider("searxng", searxng_url="http://localhost:8888",
                             resolve=lambda host, port: ["127.0.0.1"])
    assert isinstance(provider, SearxngProvider)
    assert provider.client.policy.vet("localhost", 8888) == "127.0.0.1"
    with pytest.raises(WebError):
        provider.client.policy.vet("localhost", 8889)  # only the port the user named


def test_a_reply_with_a_utf8_bom_is_json():
    raw = b"\xef\xbb\xbf" + json.dumps(SEARX).encode()
    assert [r.url for r in SearxngProvider("http://s", Canned(raw=raw)).search("q?", 5)] == [
        "https://a.example/cloud", "https://b.example/x"]


def test_a_reply_over_the_size_cap_says_so_not_that_it_is_not_json():
    head = json.dumps(SEARX).encode()[:100]  # what the client read before it stopped at the cap
    with pytest.raises(WebError, match=f"reply over {MAX_RESPONSE_BYTES} bytes") as err:
        SearxngProvider("http://s", Canned(raw=head, truncated=True)).search("q?", 3)
    assert "not JSON" not in str(err.value)
    with pytest.raises(WebError, match="reply over"):
        BraveProvider(BRAVE_KEY, Canned(raw=b"", truncated=True)).search("q?", 3)  # refused by its Content-Length


def test_json_nested_100000_deep_is_a_clear_error_at_once():
    deep = b"[" * 100_000 + b"]" * 100_000
    started = time.monotonic()
    for provider in (SearxngProvider("http://s", Canned(raw=deep)), BraveProvider(BRAVE_KEY, Canned(raw=deep))):
        with pytest.raises(WebError, match="too deeply nested"):
            provider.search("q?", 3)
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize("payload", [{"error": "engine crashed"}, {"results": "none"}, ["a", "list"]])
def test_a_searxng_reply_without_a_results_list_is_an_error_not_no_results(payload):
    with pytest.raises(WebError, match="no results list"):
        SearxngProvider("http://s", Canned(payload=payload)).search("q?", 3)


def test_no_results_because_every_engine_failed_is_an_error():
    payload = {"results": [], "unresponsive_engines": [["google", "timeout"], ["duckduckgo", "CAPTCHA"]]}
    with pytest.raises(WebError, match=r"did not answer: google \(timeout\), duckduckgo \(CAPTCHA\)") as err:
        SearxngProvider("http://s", Canned(payload=payload)).search("q?", 3)
    assert err.value.transient
    # no results with engines that answered is a real empty answer
    assert SearxngProvider("http://s", Canned(payload={"results": [], "unresponsive_engines": []})).search("q?", 3) \
        == []


def test_brave_without_web_results_is_empty_and_a_misshapen_reply_an_error():
    assert BraveProvider(BRAVE_KEY, Canned(payload={"type": "search", "query": {}})).search("q?", 3) == []
    for payload in ({"web": "oops"}, {"web": {"results": {}}}, ["x"]):
        with pytest.raises(WebError, match="Brave Search's reply"):
            BraveProvider(BRAVE_KEY, Canned(payload=payload)).search("q?", 3)


def test_a_malformed_result_url_does_not_fail_the_search():
    payload = {"results": [{"title": "bad", "url": "http://[::ffff:10.0.0.1", "content": ""},
                           {"title": "good", "url": "https://a.example/ok", "content": "fine"}]}
    results = SearxngProvider("http://s", Canned(payload=payload)).search("q?", 5)
    assert [r.url for r in results] == ["http://[::ffff:10.0.0.1", "https://a.example/ok"]  # web_search judges it
