"""A fetched body to plain text, by its content type, or a clear refusal.

HTML (text/html, application/xhtml+xml): the main text by trafilatura (menus, footers and
boilerplate left out), the page's whole visible text when trafilatura finds no main
part. PDF: pypdf, only a complete file whose bytes are a PDF. text/plain and markdown:
decoded as what they are, without the HTML comments (and Markdown's comment idiom) a
reader never sees. A title is the page's own (`<title>`, a heading) only when it states
something (`corpus.documents.title_line`); else the URL names the page. Bytes that are not what the header says (an executable or an
image served as text/html) are refused, never read as text. Secrets are redacted here,
before the text reaches the cache, the index or a prompt.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

from briefroom.corpus.documents import UnreadableDocument, decode_text, normalise_text, strip_hidden, title_line
from briefroom.protocol.redaction import redact_text
from briefroom.protocol.statements import directive
from briefroom.web.net import Response, WebError

HTML_TYPES = {"text/html", "application/xhtml+xml"}
TEXT_TYPES = {"text/plain", "text/markdown", "text/x-markdown"}
PDF_TYPES = {"application/pdf", "application/x-pdf"}
MAX_TEXT_CHARS = 300_000
# What a body starts with when it is a file format, not text.
_MAGIC = (b"%PDF-", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"PK\x03\x04", b"\x7fELF", b"\x1f\x8b", b"MZ",
          b"\xca\xfe\xba\xbe", b"RIFF", b"\x00\x00\x01\x00", b"7z\xbc\xaf")


@dataclass(frozen=True)
class PageText:
    title: str
    text: str


def looks_binary(body: bytes) -> bool:
    head = body[:8192]
    if head.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return False  # a text BOM (UTF-16 has NULs)
    return head.startswith(_MAGIC) or b"\x00" in head


def page_text(response: Response) -> PageText:
    """Title and text of a 200 response; WebError saying why when there is none."""
    kind, body = response.content_type, response.body
    if kind in HTML_TYPES or (not kind and body.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html"))):
        if looks_binary(body):
            raise WebError(f"refused: the body is binary data, not the HTML its content type ({kind}) says")
        title, text = _html(_decode(body, response.charset))
    elif kind in PDF_TYPES:
        if response.truncated:
            raise WebError("refused: the PDF is larger than the size cap (a cut PDF cannot be read)")
        if not body.startswith(b"%PDF-"):
            raise WebError("refused: the body is not a PDF, though its content type says so")
        text = _pdf(body)
        title = title_line(text) or ""
    elif kind in TEXT_TYPES:
        if looks_binary(body):
            raise WebError(f"refused: the body is binary data, not the text its content type ({kind}) says")
        markdown = kind != "text/plain"
        # what the format renders as nothing is left out, as from a file of the corpus
        text = normalise_text(strip_hidden(_decode(body, response.charset), ".md" if markdown else ".txt"))
        title = title_line(text, markdown=markdown) or ""
    else:
        raise WebError(f"unsupported content type {kind or '(none)'!r}: briefroom reads HTML, PDF and plain text")
    if not text:
        raise WebError("no text in the page")
    text = text[:MAX_TEXT_CHARS]  # what one page may add to the index
    # a page without a title is named by its URL, which may carry a token: redacted too
    return PageText(title=redact_text(" ".join(title.split())[:160]) or redact_text(response.url)[:160],
                    text=redact_text(text))


def _decode(body: bytes, charset: str | None) -> str:
    if charset:
        try:
            return body.decode(charset)
        except (LookupError, UnicodeDecodeError):
            pass  # a wrong or unknown label: detect instead
    try:
        return decode_text(body)
    except UnreadableDocument as exc:
        raise WebError(f"refused: {exc}") from None


def _html(html: str) -> tuple[str, str]:
    import trafilatura

    title = ""
    found = re.search(r"<title[^>]*>(.*?)</title>", html[:200_000], re.I | re.S)
    if found:
        title = re.sub(r"<[^>]+>", " ", found.group(1))
        # a title that addresses the reader is no title (the page is named by its URL)
        title = "" if directive(" ".join(title.split())) else title
    doc = trafilatura.bare_extraction(html, include_comments=False, include_tables=True, with_metadata=False)
    # trafilatura puts each block (heading, paragraph, list item) on a line of its own:
    # separate paragraphs, so a heading never runs into the sentence after it
    text = normalise_text((getattr(doc, "text", "") or "").replace("\n", "\n\n")) if doc is not None else ""
    if not text:  # no main part found (a short or odd page): every visible word instead
        text = normalise_text(trafilatura.html2txt(html) or "")
    return title, text


def _pdf(body: bytes) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        return normalise_text("\n\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(body)).pages))
    except (PdfReadError, ValueError, OSError, KeyError, TypeError, AssertionError) as exc:
        raise WebError(f"not a readable PDF ({str(exc)[:80] or type(exc).__name__})") from None
