"""Load a folder of documents (md, txt, html, pdf) as plain text with stable ids."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from briefroom.errors import ConfigError
from briefroom.protocol.redaction import redact_text

TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".rst"}
HTML_SUFFIXES = {".html", ".htm"}
PDF_SUFFIXES = {".pdf"}


@dataclass(frozen=True)
class Document:
    source_id: str
    title: str
    path: str
    text: str


class _HTMLText(HTMLParser):
    """Visible text of an HTML page, block elements on their own lines."""

    _BLOCKS = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section", "article"}
    _SKIP = {"script", "style", "noscript"}

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        if tag in self._SKIP:
            self._skip += 1
        if tag == "title":
            self._in_title = True
        if tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if tag in self._SKIP and self._skip:
            self._skip -= 1
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def source_id_for(text: str) -> str:
    """Content-addressed: the same text always gets the same id, wherever it lives."""
    return "S" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def _title_from_text(text: str, path: Path) -> str:
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:120]
    return path.stem


def _normalise(text: str) -> str:
    text = text.replace("\r\n", "\n")
    text = re.sub(r"[ \t]+", " ", text)
    return re.sub(r"\n\s*\n\s*(\n\s*)+", "\n\n", text).strip()


def load_document(path: Path, display_path: str | None = None) -> Document | None:
    """One file as a Document; None for file types we do not read.

    `display_path` is what reports and prompts show: relative to the corpus folder's
    parent, so runs on another machine (or a fresh clone) produce the same text.
    """
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        text = _normalise(path.read_text(encoding="utf-8", errors="replace"))
        title = _title_from_text(text, path)
    elif suffix in HTML_SUFFIXES:
        parser = _HTMLText()
        parser.feed(path.read_text(encoding="utf-8", errors="replace"))
        text = _normalise("".join(parser.parts))
        title = parser.title.strip() or _title_from_text(text, path)
    elif suffix in PDF_SUFFIXES:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError

        try:
            text = _normalise("\n\n".join(page.extract_text() or "" for page in PdfReader(path).pages))
        except (PdfReadError, ValueError) as exc:
            raise ConfigError(f"cannot read PDF {path}: {exc}") from exc
        title = _title_from_text(text, path)
    else:
        return None
    if not text:
        return None
    # Secrets in documents never reach the index, a prompt, a report or a log.
    text = redact_text(text)
    return Document(source_id=source_id_for(text), title=title, path=display_path or str(path), text=text)


def load_corpus(directory: Path) -> list[Document]:
    """Every readable document under `directory`, in a stable order, duplicates once."""
    directory = directory.expanduser()
    if not directory.exists():
        raise ConfigError(f"corpus folder not found: {directory}")
    if not directory.is_dir():
        raise ConfigError(f"corpus is not a folder: {directory}")
    docs: dict[str, Document] = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith(".")):
        doc = load_document(path, f"{directory.resolve().name}/{path.relative_to(directory).as_posix()}")
        if doc is not None:
            docs.setdefault(doc.source_id, doc)
    return list(docs.values())
