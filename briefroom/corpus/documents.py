"""Load a folder of documents (md, txt, html, pdf) as plain text with stable ids.

What is not text is skipped, never read as text: binary content (an executable renamed
`.md`), bytes no encoding explains, a corrupt or empty PDF. Text in another encoding
(GBK, Latin-1, UTF-16 with a BOM) is decoded as what it is (charset-normalizer), not as
UTF-8 with replacement characters. Control characters never reach the index.

What a reader of the document never sees never reaches the index either: HTML comments
in every text format (Markdown and HTML render them as nothing; a `.txt` file holding
one is markup, not prose), Markdown's comment idiom (a link definition nothing links
to, `[//]: # (...)`), reST comments, and in HTML the elements a browser does not show
(`hidden`, `aria-hidden="true"`, `display: none`, `visibility: hidden`, `<template>`).
Hidden text is where planted instructions live; nobody reviewing the file sees it.

A title is the document's own heading (Markdown `#`, HTML `<title>`, or the first line
of a text file when it stands alone), and only if it states something: a first line
that addresses the reader (`protocol.statements.directive`) is no title, and the file
name is used instead. The title is repeated in every report that cites the document.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from briefroom.errors import ConfigError
from briefroom.protocol.chars import GARBAGE_RE
from briefroom.protocol.redaction import redact_text
from briefroom.protocol.statements import directive

TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".rst"}
HTML_SUFFIXES = {".html", ".htm"}
PDF_SUFFIXES = {".pdf"}


class UnreadableDocument(Exception):
    """A file that is not (readable) text: skipped with this reason."""


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


def decode_text(data: bytes) -> str:
    """The text these bytes hold, in whatever encoding they are; UnreadableDocument if
    they are not text."""
    if not data.startswith(_BOMS) and b"\x00" in data[:8192]:
        raise UnreadableDocument("binary content (NUL bytes)")
    if data.startswith(_BOMS[0]):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes  # a maintained detector; only for files that are not UTF-8

    results = list(from_bytes(data))
    if not results:
        raise UnreadableDocument("not text in any known encoding")
    # Short texts fit several code pages equally well (Latin-1 French reads as cp775 too):
    # among the cleanest decodings, the encodings documents are really written in win.
    cleanest = min(r.percent_chaos for r in results)
    fits = [r for r in results if r.percent_chaos <= cleanest + 1.0]
    fits.sort(key=lambda r: _COMMON.index(r.encoding) if r.encoding in _COMMON else len(_COMMON))
    return str(fits[0])


_COMMON = ("utf_8", "utf_16", "gb18030", "gbk", "big5", "shift_jis", "euc_jp", "euc_kr", "cp1252", "latin_1",
           "iso8859_15", "cp1251", "koi8_r", "cp1250", "iso8859_2")


@dataclass(frozen=True)
class Document:
    source_id: str
    title: str
    path: str
    text: str


# Elements without an end tag: one of them hidden hides nothing after it.
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_NOT_SHOWN = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)


def _hidden_element(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    """An element a browser does not show, whatever it holds."""
    if tag == "template":
        return True
    found = {name.lower(): (value or "") for name, value in attrs}
    return ("hidden" in found or found.get("aria-hidden", "").lower() == "true"
            or bool(_NOT_SHOWN.search(found.get("style", ""))))


class _HTMLText(HTMLParser):
    """Visible text of an HTML page, block elements on their own lines. Comments (the
    parser's default drops them), scripts, styles and hidden elements are left out."""

    _BLOCKS = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section", "article"}
    _SKIP = {"script", "style", "noscript"}

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False
        self._hidden: str | None = None  # the tag of the outermost hidden element we are in
        self._hidden_depth = 0  # elements of that tag open inside it, itself included

    def handle_starttag(self, tag, attrs):
        if self._hidden is not None:
            self._hidden_depth += tag == self._hidden
            return
        if tag not in _VOID and _hidden_element(tag, attrs):
            self._hidden, self._hidden_depth = tag, 1
            return
        if tag in self._SKIP:
            self._skip += 1
        if tag == "title":
            self._in_title = True
        if tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if self._hidden is not None:
            if tag == self._hidden:
                self._hidden_depth -= 1
                if not self._hidden_depth:
                    self._hidden = None
            return
        if tag in self._SKIP and self._skip:
            self._skip -= 1
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._hidden is not None:
            return
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def source_id_for(text: str) -> str:
    """Content-addressed: the same text always gets the same id, wherever it lives."""
    return "S" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


# An HTML comment, or one left open (it hides the rest, as a browser and a Markdown
# renderer hide it).
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
# Markdown's comment idiom: a link reference definition, which renders as nothing (only
# the links that use it show, and those keep their text).
_MD_LINK_DEFINITION = re.compile(r"(?m)^ {0,3}\[[^\]\n]+\]:[ \t]*\S.*$")
# A reST comment: ".." and text that is not a directive (::), a target (_x:), a footnote
# ([1]) or a substitution (|x|); its indented lines belong to it.
_RST_COMMENT = re.compile(r"(?m)^\.\.(?:[ \t]+(?![_\[|])(?![^\n]*::)[^\n]*)?\n?(?:[ \t]+\S[^\n]*\n?|[ \t]*\n(?=[ \t]+\S))*")
MARKDOWN_SUFFIXES = {".md", ".markdown"}


def strip_hidden(text: str, suffix: str) -> str:
    """`text` without what its format renders as nothing (see the module's docstring)."""
    text = _HTML_COMMENT.sub("", text)
    if suffix in MARKDOWN_SUFFIXES:
        text = _MD_LINK_DEFINITION.sub("", text)
    elif suffix == ".rst":
        text = _RST_COMMENT.sub("", text)
    return text


def _heading(line: str) -> str:
    return line.strip().lstrip("#").strip()


# A title is a heading, not a sentence: a first line that ends like one is prose.
_SENTENCE_END = (".", "。", "!", "！", ";", "；", ":", "：")
MAX_TITLE = 120


def title_line(text: str, *, markdown: bool = False) -> str | None:
    """The document's own title, if it has one that states something: in Markdown its
    first `#` heading; otherwise its first line, when it reads as a heading (a `#` line,
    or a line of at most 120 characters that does not end like a sentence). None when
    there is none, or when it addresses the reader: a planted first line is no title."""
    lines = [line for line in text.splitlines() if _heading(line)]
    found = next((line for line in lines if re.match(r"\s{0,3}#{1,6}\s", line)), None) if markdown else None
    if found is None and lines:
        first = lines[0].strip()
        heading = first.startswith("#") or (len(first) <= MAX_TITLE and not first.endswith(_SENTENCE_END))
        found = first if heading else None
    title = _heading(found or "")
    return title if title and not directive(title) else None


def _title_from_text(text: str, path: Path) -> str:
    """The document's title (`title_line`), else its file name as text (a name that is not
    UTF-8 has surrogates, which the index cannot store)."""
    own = title_line(text, markdown=path.suffix.lower() in MARKDOWN_SUFFIXES)
    return (own or display_path(path.stem))[:MAX_TITLE]


def normalise_text(text: str) -> str:
    """Line ends unified, control garbage out, runs of spaces and blank lines folded
    (documents from files and fetched pages alike)."""
    text = GARBAGE_RE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = re.sub(r"[ \t]+", " ", text)
    return re.sub(r"\n\s*\n\s*(\n\s*)+", "\n\n", text).strip()


def load_document(path: Path, display_path: str | None = None) -> Document | None:
    """One file as a Document; None for file types we do not read.

    `display_path` is what reports and prompts show: relative to the corpus folder's
    parent, so runs on another machine (or a fresh clone) produce the same text.
    """
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        text = normalise_text(strip_hidden(decode_text(_read(path)), suffix))
        title = _title_from_text(text, path)
    elif suffix in HTML_SUFFIXES:
        parser = _HTMLText()
        parser.feed(decode_text(_read(path)))
        text = normalise_text("".join(parser.parts))
        own = parser.title.strip()
        title = own if own and not directive(own) else _title_from_text(text, path)
    elif suffix in PDF_SUFFIXES:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError

        try:
            text = normalise_text("\n\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(_read(path))).pages))
        except (PdfReadError, ValueError, OSError, KeyError, TypeError, AssertionError) as exc:
            # pypdf raises many kinds on a damaged file; any of them means this one is unreadable
            raise UnreadableDocument(f"not a readable PDF ({str(exc)[:80] or type(exc).__name__})") from exc
        title = _title_from_text(text, path)
    else:
        return None
    if not text:
        raise UnreadableDocument("no text in it")
    # Secrets in documents never reach the index, a prompt, a report or a log: the title
    # is the document's own text too (a heading may hold a key).
    text = redact_text(text)
    return Document(source_id=source_id_for(text), title=redact_text(title), path=display_path or str(path),
                    text=text)


DEFAULT_MAX_DOCUMENT_MB = 64


def max_document_bytes() -> int:
    """The size cap per document (BRIEFROOM_MAX_DOCUMENT_MB, default 64): a bigger file is
    skipped with a message instead of taking the index hours."""
    raw = os.environ.get("BRIEFROOM_MAX_DOCUMENT_MB", "")
    try:
        mb = float(raw) if raw else DEFAULT_MAX_DOCUMENT_MB
    except ValueError:
        raise ConfigError(f"BRIEFROOM_MAX_DOCUMENT_MB must be a number of megabytes, got {raw[:40]!r}") from None
    return int(mb * 1024 * 1024)


def display_path(name: str) -> str:
    """A file name as reports, prompts and logs show it: bytes that are not UTF-8 and control
    characters (a newline in a name) written as escapes, so the name is one line of text."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", text)


def _read(path: Path) -> bytes:
    try:
        size, cap = path.stat().st_size, max_document_bytes()
        if size > cap:
            raise UnreadableDocument(f"{size / 1048576:.0f} MB, over the {cap / 1048576:.0f} MB cap per document "
                                     "(BRIEFROOM_MAX_DOCUMENT_MB)")
        return path.read_bytes()
    except OSError as exc:
        raise UnreadableDocument(f"cannot be read ({exc.strerror or exc})") from exc


def load_corpus(directory: Path, skipped: list[Skipped] | None = None) -> list[Document]:
    """Every readable document under `directory`, in a stable order, duplicates once;
    files that are not readable text go to `skipped` with the reason."""
    directory = directory.expanduser()
    if not directory.exists():
        raise ConfigError(f"corpus folder not found: {directory}")
    if not directory.is_dir():
        raise ConfigError(f"corpus is not a folder: {directory}")
    docs: dict[str, Document] = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith(".")):
        shown = display_path(f"{directory.resolve().name}/{path.relative_to(directory).as_posix()}")
        try:
            doc = load_document(path, shown)
        except UnreadableDocument as exc:
            if skipped is not None:
                skipped.append(Skipped(shown, str(exc)))
            continue
        if doc is not None:
            docs.setdefault(doc.source_id, doc)
    return list(docs.values())
