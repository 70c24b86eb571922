"""The finished report as a typed structure, parsed once from report.md and sources.json.

Every export format (HTML, PDF, DOCX, JSON) renders from `ReportDocument`, so the
formats cannot disagree on what a sentence cites. report.md is code's own small
Markdown (`render_markdown` in draft.py): a `#` title, `##` sections of paragraphs and
`- ` bullets, `[n]` citations, a Sources list, then a `---` rule and notes. Each
citation is resolved here to its source and to the passage it rests on: the passage
holding the sentence verbatim, else the one sharing most of its words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from briefroom.protocol.extraction import is_cjk, relevance
from briefroom.records import Passage, SourceRecord
from briefroom.report.checks import SOURCES_HEADINGS

FORMAT_ID: Literal["briefroom.report/1"] = "briefroom.report/1"  # bumped when the JSON export changes shape

_CITATION = re.compile(r"\[(\d+)\]")
# Inline markup code writes: `code`, *emphasis* (the attribution after a citation), [n].
_INLINE = re.compile(r"`([^`]+)`|\*([^*]+)\*|\[(\d+)\]")
# A sentence ends at a full stop (closing quotes stay with it), takes the citations and
# the "— *attribution*" after it, and is followed by a space, the end, or (Chinese) anything.
_SENTENCE_END = re.compile(r"(?:[.!?][”’\"」』）)]*(?=\s|$)|[。！？；][”’\"」』）)]*)"
                           r"(?:\s*\[\d+\])*(?:\s*—\s*\*[^*]+\*)?")
_SOURCE_ENTRY = re.compile(r"^\[(\d+)\]\s+(.*)$")
# "[n] Title — `where`(, retrieved WHEN)? (source `id`)"; "(unknown source) `id`" when missing.
_SOURCE_FIELDS = re.compile(r"^(?P<title>.*?) — `(?P<location>[^`]*)`(?:, retrieved (?P<retrieved>[^(]+?))?"
                            r" \(source `(?P<sid>[^`]+)`\)\s*$")
_UNKNOWN_SOURCE = re.compile(r"^\(unknown source\) `(?P<sid>[^`]+)`\s*$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Inline(_Frozen):
    """A run of a sentence: plain text, `code`, *emphasis*, or a citation [number]."""

    kind: Literal["text", "code", "emphasis", "citation"]
    text: str
    number: int | None = Field(default=None, description="for a citation: its n in [n]")


class Citation(_Frozen):
    number: int
    source_id: str | None = Field(description="None when the report's Sources list has no entry [n]")
    passage: Passage | None = Field(default=None, description="the passage of the source the sentence rests on")


class Sentence(_Frozen):
    text: str = Field(description="the sentence as plain text, without its [n] marks")
    inlines: list[Inline] = Field(description="the sentence as written, for rendering; joined they give the "
                                              "block's text")
    citations: list[Citation] = Field(default_factory=list)


class Block(_Frozen):
    kind: Literal["paragraph", "bullet"]
    sentences: list[Sentence]

    @property
    def inlines(self) -> list[Inline]:
        return [inline for sentence in self.sentences for inline in sentence.inlines]


class Section(_Frozen):
    heading: str
    level: int = Field(ge=2, le=6, description="2 for ##")
    blocks: list[Block] = Field(default_factory=list)


class SourceEntry(_Frozen):
    """One line of the report's Sources list, with what sources.json knows of it."""

    number: int
    source_id: str | None
    title: str
    location: str = Field(description="the document's path in the corpus, or a web page's URL")
    retrieved: str | None = Field(default=None, description="for a web page: when it was fetched")
    cited_passages: list[Passage] = Field(default_factory=list, description="the passages citations rest on, "
                                                                            "in the source's order")


class ReportDocument(_Frozen):
    format: Literal["briefroom.report/1"] = FORMAT_ID
    title: str
    language: Literal["en", "zh"]
    sections: list[Section]
    sources: list[SourceEntry]
    notes: list[Block] = Field(default_factory=list, description="what follows the report's closing rule: "
                                                                  "how it was made, the acceptance criteria")
    sources_heading: str = "Sources"

    def source(self, number: int) -> SourceEntry | None:
        return next((s for s in self.sources if s.number == number), None)

    def citations(self) -> list[Citation]:
        return [c for section in self.sections for block in section.blocks for sentence in block.sentences
                for c in sentence.citations]


def parse_inlines(text: str) -> list[Inline]:
    out: list[Inline] = []
    at = 0
    for m in _INLINE.finditer(text):
        if m.start() > at:
            out.append(Inline(kind="text", text=text[at:m.start()]))
        if m.group(1) is not None:
            out.append(Inline(kind="code", text=m.group(1)))
        elif m.group(2) is not None:
            out.append(Inline(kind="emphasis", text=m.group(2)))
        else:
            out.append(Inline(kind="citation", text=m.group(0), number=int(m.group(3))))
        at = m.end()
    if at < len(text):
        out.append(Inline(kind="text", text=text[at:]))
    return out


def split_sentences(text: str) -> list[str]:
    """The block's text cut after each sentence's citations; the pieces joined give `text` back."""
    # `code` and *emphasis* are never cut: a note in italics is one run, however many sentences.
    kept_whole = [(m.start(), m.end()) for m in _INLINE.finditer(text) if m.group(3) is None]
    pieces, at = [], 0
    for m in _SENTENCE_END.finditer(text):
        if any(start < m.start() < end - 1 for start, end in kept_whole):
            continue
        pieces.append(text[at:m.end()])
        at = m.end()
    if text[at:].strip():
        pieces.append(text[at:])
    elif pieces:
        pieces[-1] += text[at:]
    return pieces or [text]


def _plain(inlines: Sequence[Inline]) -> str:
    return " ".join("".join(i.text for i in inlines if i.kind != "citation").split())


def _claim(inlines: Sequence[Inline]) -> str:
    """What a citation vouches for: the sentence without quotes and attribution."""
    return _plain([i for i in inlines if i.kind != "emphasis"]).rstrip(" —").strip(" “”\"")


def passage_for(claim: str, record: SourceRecord | None) -> Passage | None:
    """The passage holding `claim` verbatim, else the one sharing most of its words."""
    if record is None or not record.passages:
        return None
    wanted = " ".join(claim.split())
    for passage in record.passages:
        if wanted and wanted in " ".join(passage.text.split()):
            return passage
    return max(record.passages, key=lambda p: relevance(p.text, claim))  # max keeps the first of equals


class _SourceIndex:
    """[n] → source id → record, from the report's own Sources list, else sources.json's order."""

    def __init__(self, entries: Mapping[int, str | None], cited: Sequence[str], records: Mapping[str, SourceRecord]):
        self.entries, self.cited, self.records = entries, cited, records

    def source_id(self, number: int) -> str | None:
        if number in self.entries:
            return self.entries[number]
        return self.cited[number - 1] if 0 < number <= len(self.cited) else None


def _sentences(text: str, index: _SourceIndex | None) -> list[Sentence]:
    out = []
    for piece in split_sentences(text):
        inlines = parse_inlines(piece)
        citations = []
        if index is not None:
            claim = _claim(inlines)
            for number in dict.fromkeys(i.number for i in inlines if i.kind == "citation" and i.number is not None):
                sid = index.source_id(number)
                record = index.records.get(sid) if sid is not None else None
                citations.append(Citation(number=number, source_id=sid, passage=passage_for(claim, record)))
        out.append(Sentence(text=_plain(inlines), inlines=inlines, citations=citations))
    return out


def _source_entry(number: int, rest: str, records: Mapping[str, SourceRecord],
                  retrieved: Mapping[str, str]) -> SourceEntry:
    fields = _SOURCE_FIELDS.match(rest)
    if fields:
        sid = fields.group("sid")
        when = fields.group("retrieved") or retrieved.get(sid)
        return SourceEntry(number=number, source_id=sid, title=fields.group("title"),
                           location=fields.group("location"), retrieved=when.strip() if when else None)
    unknown = _UNKNOWN_SOURCE.match(rest)
    if unknown:
        return SourceEntry(number=number, source_id=unknown.group("sid"), title="(unknown source)", location="")
    return SourceEntry(number=number, source_id=None, title=rest.strip(), location="")


def _blocks(lines: Sequence[str]) -> list[tuple[Literal["paragraph", "bullet"], str]]:
    """Lines into (kind, text): a bullet is one line, a paragraph runs to a blank line."""
    blocks: list[tuple[Literal["paragraph", "bullet"], str]] = []
    paragraph: list[str] = []

    def close() -> None:
        if paragraph:
            blocks.append(("paragraph", ("" if is_cjk("".join(paragraph)) else " ").join(paragraph)))
            paragraph.clear()

    for line in lines:
        stripped = line.strip()
        if stripped.startswith(("- ", "* ")):
            close()
            blocks.append(("bullet", stripped[2:].strip()))
        elif stripped:
            paragraph.append(stripped)
        else:
            close()
    close()
    return blocks


def parse_report(markdown: str, records: Mapping[str, SourceRecord], cited: Sequence[str] = (),
                 retrieved: Mapping[str, str] | None = None) -> ReportDocument:
    """report.md and the run's sources (sources.json's `sources`, `cited`, and for web
    pages when each was retrieved) as one `ReportDocument`."""
    title = ""
    body: list[tuple[str, int, list[str]]] = []  # heading, level, its lines
    notes: list[str] = []
    sources_lines: list[str] = []
    sources_heading = "Sources"
    where: list[str] | None = None
    after_rule = False
    for line in markdown.splitlines():
        stripped = line.strip()
        level = len(stripped) - len(stripped.lstrip("#"))
        if after_rule:
            notes.append(line)
        elif stripped == "---":
            after_rule = True
        elif level == 1 and stripped[1:2] == " " and not title:
            title = stripped[2:].strip()
        elif 2 <= level <= 6 and stripped[level:level + 1] == " ":
            heading = stripped[level + 1:].strip()
            if heading in SOURCES_HEADINGS:
                sources_heading, where = heading, sources_lines
            else:
                body.append((heading, level, []))
                where = body[-1][2]
        elif where is not None:
            where.append(line)
        elif stripped:  # text before the first section: a section of its own, without a heading
            body.append(("", 2, [line]))
            where = body[-1][2]
    entries = [_source_entry(int(m.group(1)), m.group(2), records, retrieved or {})
               for m in map(_SOURCE_ENTRY.match, (s.strip() for s in sources_lines)) if m]
    index = _SourceIndex({e.number: e.source_id for e in entries}, cited, records)
    sections = [Section(heading=h, level=lvl, blocks=[Block(kind=k, sentences=_sentences(t, index))
                                                       for k, t in _blocks(lines)])
                for h, lvl, lines in body]
    document = ReportDocument(title=title, language="zh" if is_cjk(title + markdown[:400]) else "en",
                              sections=sections, sources=[], sources_heading=sources_heading,
                              notes=[Block(kind=k, sentences=_sentences(t, None)) for k, t in _blocks(notes)])
    return document.model_copy(update={"sources": [_with_passages(e, document) for e in entries]})


def _with_passages(entry: SourceEntry, document: ReportDocument) -> SourceEntry:
    """An entry with the passages its citations rest on, each once, in the source's order."""
    used = {c.passage.chunk_id: c.passage for c in document.citations()
            if c.number == entry.number and c.passage is not None}
    ordered = sorted(used.values(), key=lambda p: (p.start, p.chunk_id))
    return entry.model_copy(update={"cited_passages": ordered})
