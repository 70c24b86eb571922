"""The fetcher's rules with a scripted client (no sockets): redirects checked hop by hop,
robots.txt, the per-domain rate limit (fake clock), the cache and conditional re-fetch,
the size cap and a server that trickles."""

from __future__ import annotations

import pytest

from briefroom.web.cache import WebCache
from briefroom.web.fetch import Fetcher, RateLimiter
from briefroom.web.net import DomainPolicy, HttpClient, Response, WebError
from tests.web_fixture import fake_aws_keys

PAGE = b"<html><head><title>T</title></head><body><p>Cloud spending rose 12% in 2026 across the sector.</p></body></html>"


class Scripted:
    """Answers by URL; a callable answer sees the request headers. Records every GET."""

    def __init__(self, routes):
        self.routes = routes
        self.calls: list[tuple[str, dict]] = []

    def get(self, url, *, max_bytes, headers=None):
        self.calls.append((url, dict(headers or {})))
        answer = self.routes.get(url)
        if answer is None:
            return Response(url, 404, {}, b"", False)
        if callable(answer):
            answer = answer(headers or {})
        status, hdrs, body = answer
        return Response(url, status, {k.lower(): v for k, v in hdrs.items()}, body[:max_bytes], len(body) > max_bytes)

    def close(self):
        pass

    def urls(self):
        return [u for u, _ in self.calls]


HTML = {"Content-Type": "text/html"}
ROBOTS_OK = (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /private/\n")


def fetcher(tmp_path, routes, **kw) -> tuple[Fetcher, Scripted]:
    client = Scripted(routes)
    limiter = kw.pop("limiter", RateLimiter(interval=0))
    return Fetcher(client, WebCache(tmp_path), limiter=limiter, now=lambda: "2026-12-01T10:00:00Z", **kw), client


def test_a_page_is_fetched_and_cached_with_its_validators(tmp_path):
    f, client = fetcher(tmp_path, {"https://a.example/robots.txt": ROBOTS_OK,
                                   "https://a.example/p": (200, {**HTML, "ETag": '"v1"',
                                                                 "Last-Modified": "Mon, 30 Nov 2026 10:00:00 GMT"},
                                                           PAGE)})
    page = f.fetch("https://a.example/p#section")  # the fragment is not part of what is fetched
    assert "rose 12% in 2026" in page.text and page.retrieved == "2026-12-01T10:00:00Z"
    cached = WebCache(tmp_path).get("https://a.example/p")
    assert cached is not None and cached.etag == '"v1"' and cached.last_modified.startswith("Mon, 30 Nov")
    assert cached.source_id == page.source_id
    assert f.fetch("https://a.example/p") is page  # once per run
    assert client.urls().count("https://a.example/p") == 1


def test_the_next_run_refetches_conditionally_and_a_304_reuses_the_text(tmp_path):
    def versioned(headers):
        if headers.get("If-None-Match") == '"v1"':
            return 304, {"ETag": '"v1"'}, b""
        return 200, {**HTML, "ETag": '"v1"'}, PAGE

    routes = {"https://a.example/robots.txt": ROBOTS_OK, "https://a.example/p": versioned}
    first, _ = fetcher(tmp_path, routes)
    page = first.fetch("https://a.example/p")
    second, client = fetcher(tmp_path, routes)
    again = second.fetch("https://a.example/p")
    sent = [h for u, h in client.calls if u == "https://a.example/p"]
    assert sent == [{"If-None-Match": '"v1"'}]
    assert again.revalidated and again.text == page.text and again.source_id == page.source_id


def test_a_changed_page_replaces_the_cached_text(tmp_path):
    body = {"v": PAGE}
    routes = {"https://a.example/robots.txt": ROBOTS_OK,
              "https://a.example/p": lambda h: (200, {**HTML, "Last-Modified": "x"}, body["v"])}
    fetcher(tmp_path, routes)[0].fetch("https://a.example/p")
    body["v"] = PAGE.replace(b"12%", b"15%")
    page = fetcher(tmp_path, routes)[0].fetch("https://a.example/p")
    assert "15%" in page.text and not page.revalidated
    assert WebCache(tmp_path).get("https://a.example/p").text == page.text


def test_robots_txt_is_obeyed_and_the_disallowed_page_never_requested(tmp_path):
    f, client = fetcher(tmp_path, {"https://a.example/robots.txt": ROBOTS_OK,
                                   "https://a.example/private/x": (200, HTML, PAGE)})
    with pytest.raises(WebError, match="robots.txt"):
        f.fetch("https://a.example/private/x")
    assert client.urls() == ["https://a.example/robots.txt"]


def test_a_redirect_into_a_disallowed_path_is_checked_again(tmp_path):
    f, client = fetcher(tmp_path, {"https://a.example/robots.txt": ROBOTS_OK,
                                   "https://a.example/go": (302, {"Location": "/private/x"}, b""),
                                   "https://a.example/private/x": (200, HTML, PAGE)})
    with pytest.raises(WebError, match="robots.txt"):
        f.fetch("https://a.example/go")
    assert "https://a.example/private/x" not in client.urls()


@pytest.mark.parametrize("status, allowed", [(404, True), (410, True), (500, False), (503, False)])
def test_robots_txt_missing_allows_and_unreachable_disallows(tmp_path, status, allowed):
    f, _ = fetcher(tmp_path, {"https://a.example/robots.txt": (status, {}, b""),
                              "https://a.example/p": (200, HTML, PAGE)})
    if allowed:
        assert f.fetch("https://a.example/p").text
    else:
        with pytest.raises(WebError, match="robots.txt"):
            f.fetch("https://a.example/p")


def test_redirects_to_a_denied_domain_are_refused_before_they_are_requested(tmp_path):
    f, client = fetcher(tmp_path, {"https://a.example/robots.txt": ROBOTS_OK,
                                   "https://a.example/go": (301, {"Location": "https://ads.bad.example/x"}, b"")},
                        domains=DomainPolicy.of(deny=["bad.example"]))
    with pytest.raises(WebError, match="deny list"):
        f.fetch("https://a.example/go")
    assert not any("bad.example" in u for u in client.urls())


def test_redirect_loops_and_long_chains_end(tmp_path):
    routes = {"https://a.example/robots.txt": ROBOTS_OK,
              "https://a.example/a": (302, {"Location": "/b"}, b""),
              "https://a.example/b": (302, {"Location": "https://a.example/a"}, b"")}
    routes.update({f"https://a.example/c{i}": (307, {"Location": f"/c{i + 1}"}, b"") for i in range(20)})
    f, client = fetcher(tmp_path, routes, max_redirects=5)
    with pytest.raises(WebError, match="redirect loop"):
        f.fetch("https://a.example/a")
    with pytest.raises(WebError, match="more than 5 redirects"):
        f.fetch("https://a.example/c0")
    assert len([u for u in client.urls() if "/c" in u]) == 6


def test_a_redirect_to_another_scheme_is_refused(tmp_path):
    f, _ = fetcher(tmp_path, {"https://a.example/robots.txt": ROBOTS_OK,
                              "https://a.example/go": (302, {"Location": "file:///etc/passwd"}, b"")})
    with pytest.raises(WebError, match="only http"):
        f.fetch("https://a.example/go")


def test_errors_say_what_happened(tmp_path):
    f, _ = fetcher(tmp_path, {"https://a.example/robots.txt": ROBOTS_OK,
                              "https://a.example/gone": (404, HTML, b"nope"),
                              "https://a.example/busy": (503, HTML, b"busy"),
                              "https://a.example/big": (200, {**HTML, "Content-Length": "99999999"}, b""),
                              "https://a.example/noloc": (302, {}, b"")})
    with pytest.raises(WebError, match="HTTP 404") as gone:
        f.fetch("https://a.example/gone")
    assert not gone.value.transient
    with pytest.raises(WebError, match="HTTP 503") as busy:
        f.fetch("https://a.example/busy")
    assert busy.value.transient
    with pytest.raises(WebError, match="without a Location"):
        f.fetch("https://a.example/noloc")


def test_the_size_cap_keeps_the_head_of_a_long_html_page(tmp_path):
    long_page = b"<html><body>" + b"<p>Cloud market filler sentence number.</p>" * 5000 + b"</body></html>"
    f, _ = fetcher(tmp_path, {"https://a.example/robots.txt": ROBOTS_OK,
                              "https://a.example/long": (200, HTML, long_page)}, max_bytes=4096)
    page = f.fetch("https://a.example/long")
    assert page.truncated and 0 < len(page.text) < 4096


def test_the_rate_limit_spaces_requests_to_one_host_on_a_fake_clock():
    now = [100.0]
    slept: list[float] = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    limiter = RateLimiter(interval=2.0, clock=lambda: now[0], sleep=sleep)
    assert limiter.wait("a.example") == 0
    assert limiter.wait("b.example") == 0  # another host: no wait
    assert limiter.wait("a.example") == 2.0
    now[0] += 5
    assert limiter.wait("a.example") == 0  # enough time passed
    limiter.set_delay("a.example", 30)  # a robots.txt Crawl-delay, capped at 10 s, from the last request
    assert limiter.wait("a.example") == 10.0
    assert limiter.wait("a.example") == 10.0
    assert slept == [2.0, 10.0, 10.0]


def test_crawl_delay_from_robots_txt_is_used(tmp_path):
    now = [0.0]
    slept: list[float] = []
    limiter = RateLimiter(interval=0.0, clock=lambda: now[0], sleep=lambda s: slept.append(s))
    f, _ = fetcher(tmp_path, {"https://a.example/robots.txt": (200, {}, b"User-agent: *\nCrawl-delay: 3\n"),
                              "https://a.example/p": (200, HTML, PAGE)}, limiter=limiter)
    f.fetch("https://a.example/p")
    assert slept == [3.0]


def test_nothing_secret_reaches_the_cache(tmp_path):
    key_id, secret = fake_aws_keys(3)
    body = (f"<html><body><p>Cloud notes for 2026.</p><p>aws_access_key_id = {key_id}\n"
            f"aws_secret_access_key = {secret}</p></body></html>").encode()
    f, _ = fetcher(tmp_path, {"https://a.example/robots.txt": ROBOTS_OK,
                              f"https://a.example/p?key={key_id}": (200, HTML, body)})
    f.fetch(f"https://a.example/p?key={key_id}")
    f.cache.close()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert key_id.encode() not in data and secret.encode() not in data, path


class Trickle:
    """A body that arrives a byte at a time, each within the read timeout, forever."""

    def __iter__(self):
        while True:
            yield b"x"


def test_a_server_that_trickles_hits_the_overall_deadline():
    ticks = iter(range(0, 10_000))
    client = HttpClient(deadline_s=5.0, clock=lambda: float(next(ticks)))
    with pytest.raises(WebError, match="too slowly"):
        client._read(Trickle(), {}, 10_000_000, started=0.0)


def test_a_compressed_body_is_inflated_up_to_the_cap_only():
    import gzip

    bomb = gzip.compress(b"A" * 5_000_000)
    body, truncated = HttpClient(clock=lambda: 0.0)._read([bomb], {"content-encoding": "gzip"}, 1000, started=0.0)
    assert truncated and len(body) == 1000
    with pytest.raises(WebError, match="content encoding"):
        HttpClient(clock=lambda: 0.0)._read([b"x"], {"content-encoding": "br"}, 1000, started=0.0)


def test_crawl_delay_applies_to_a_url_with_a_port(tmp_path):
    now = [0.0]
    slept: list[float] = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    limiter = RateLimiter(interval=0.0, clock=lambda: now[0], sleep=sleep)
    f, _ = fetcher(tmp_path, {"https://a.example:8443/robots.txt": (200, {}, b"User-agent: *\nCrawl-delay: 3\n"),
                              "https://a.example:8443/p": (200, HTML, PAGE),
                              "https://a.example:8443/q": (200, HTML, PAGE)}, limiter=limiter)
    f.fetch("https://a.example:8443/p")
    f.fetch("https://a.example:8443/q")
    assert slept == [3.0, 3.0]


def test_a_host_that_does_not_resolve_is_reported_as_such_not_as_robots_txt(tmp_path, monkeypatch):
    import socket

    def no_such_host(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    client = HttpClient()
    f = Fetcher(client, WebCache(tmp_path), limiter=RateLimiter(interval=0))
    for _ in range(2):  # and not remembered as a robots.txt verdict either
        with pytest.raises(WebError) as err:
            f.fetch("https://nowhere.example/page")
        assert "cannot resolve host 'nowhere.example'" in str(err.value) and "the fetch failed" in str(err.value)
        assert "robots" not in str(err.value)
    assert client.connected == []


def test_an_unreadable_robots_txt_says_what_happened(tmp_path):
    class Down(Scripted):
        def get(self, url, *, max_bytes, headers=None):
            self.calls.append((url, dict(headers or {})))
            raise WebError("timed out fetching https://a.example", transient=True)

    f = Fetcher(Down({}), WebCache(tmp_path), limiter=RateLimiter(interval=0))
    with pytest.raises(WebError, match=r"robots.txt of a.example could not be read \(timed out") as err:
        f.fetch("https://a.example/p")
    assert "disallows" not in str(err.value)
    f503, _ = fetcher(tmp_path / "b", {"https://b.example/robots.txt": (503, {}, b"")})
    with pytest.raises(WebError, match="robots.txt of b.example answered HTTP 503"):
        f503.fetch("https://b.example/p")
