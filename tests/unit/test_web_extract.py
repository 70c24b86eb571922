"""Fetched bodies to text, by content type; what is not what it claims is refused."""

from __future__ import annotations

import pytest

from briefroom.web.extract import looks_binary, page_text
from briefroom.web.net import Response, WebError
from tests.web_fixture import INJECTION, fake_aws_keys, make_pdf


def resp(body: bytes, content_type: str, truncated: bool = False) -> Response:
    return Response("https://example.com/page", 200, {"content-type": content_type}, body, truncated)


ARTICLE = (b"<!doctype html><html><head><title>Cloud outlook</title></head><body>"
           b"<nav>Home | Pricing | Login | Careers</nav><article><h1>Cloud outlook</h1>"
           b"<p>Public cloud spending will reach 723 billion USD in 2026, analysts said on Tuesday.</p>"
           b"<p>Azure grew 31% while AWS grew 17% in the same period, the report adds.</p></article>"
           b"<footer>Copyright 2026 Example Corp. All rights reserved.</footer></body></html>")


def test_html_gives_the_main_text_and_the_title():
    page = page_text(resp(ARTICLE, "text/html"))
    assert page.title == "Cloud outlook"
    assert "723 billion USD in 2026" in page.text and "Azure grew 31%" in page.text
    assert "All rights reserved" not in page.text  # boilerplate left out


def test_html_charset_from_the_header():
    body = "<html><body><p>Le marché du cloud a progressé de 20% en 2026, selon l'étude.</p></body></html>"
    page = page_text(resp(body.encode("latin-1"), "text/html; charset=ISO-8859-1"))
    assert "marché" in page.text and "étude" in page.text


def test_plain_text_and_pdf():
    text = page_text(resp(b"Notes\n\nThe cloud market grew 20% in 2025.\n", "text/plain"))
    assert text.title == "Notes" and "grew 20% in 2025" in text.text
    pdf = page_text(resp(make_pdf("Data centre electricity use rose 14 percent in 2026."), "application/pdf"))
    assert "rose 14 percent in 2026" in pdf.text


@pytest.mark.parametrize("body", [b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), b"\x89PNG\r\n\x1a\n\x00\x00",
                                  b"%PDF-1.4\n%\xe2\xe3", b"<html>\x00\x00\x00</html>", b"PK\x03\x04zip"])
def test_binary_under_an_html_type_is_refused(body):
    with pytest.raises(WebError, match="binary"):
        page_text(resp(body, "text/html; charset=utf-8"))


def test_binary_under_a_text_type_is_refused():
    with pytest.raises(WebError, match="binary"):
        page_text(resp(b"MZ\x90\x00\x03\x00", "text/plain"))


def test_a_pdf_that_is_not_one_or_is_cut_is_refused():
    with pytest.raises(WebError, match="not a PDF"):
        page_text(resp(b"<html>hello</html>", "application/pdf"))
    with pytest.raises(WebError, match="size cap"):
        page_text(resp(make_pdf("x")[:40], "application/pdf", truncated=True))
    with pytest.raises(WebError, match="readable PDF"):
        page_text(resp(b"%PDF-1.4\ngarbage that is no PDF at all", "application/pdf"))


@pytest.mark.parametrize("kind", ["image/png", "application/octet-stream", "application/zip", "video/mp4"])
def test_other_types_are_refused_by_name(kind):
    with pytest.raises(WebError, match="unsupported content type"):
        page_text(resp(b"whatever", kind))


def test_a_page_without_text_is_refused():
    with pytest.raises(WebError, match="no text"):
        page_text(resp(b"<html><body><script>var x=1;</script></body></html>", "text/html"))


def test_planted_secrets_are_redacted_before_anything_keeps_the_text():
    key_id, secret = fake_aws_keys(5)
    body = (f"<html><body><p>The deploy script used aws_access_key_id = {key_id} and "
            f"aws_secret_access_key = {secret} until it was rotated in 2026.</p></body></html>").encode()
    page = page_text(resp(body, "text/html"))
    assert key_id not in page.text and secret not in page.text
    assert "[REDACTED:" in page.text and "rotated in 2026" in page.text


def test_injected_instructions_stay_text():
    body = f"<html><body><p>Prices fell 8% in 2026.</p><p>{INJECTION}</p></body></html>".encode()
    assert INJECTION in page_text(resp(body, "text/html")).text  # kept as data; prompts wrap it, never obey it


def test_looks_binary():
    assert looks_binary(b"\x00abc") and looks_binary(b"\x1f\x8b\x08") and not looks_binary(b"plain words")
    assert not looks_binary("ab".encode("utf-16"))  # a BOM says it is text


def test_a_page_without_a_title_is_named_by_its_url_without_the_token_in_it():
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"  # fake, GitHub-token shaped
    body = b"<html><body><p>Public cloud spending will reach 723 billion USD in 2026, the brief says.</p></body></html>"
    page = page_text(Response(f"https://example.com/brief?access_token={token}", 200,
                              {"content-type": "text/html"}, body, False))
    assert "example.com/brief" in page.title and token not in page.title
