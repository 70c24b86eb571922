"""Split a document into passages with character offsets into the original text.

Paragraphs are packed up to a word limit; a paragraph longer than the limit is split
at sentence ends (English . ! ? before a space; Chinese 。！？；… with no space after,
a closing quote or bracket staying with its sentence), and a sentence still longer than
the limit at its clause marks (， 、 ： , ; :) or, failing those, by size. Offsets let a
citation point at the exact passage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Marks that close a quotation or a bracket: they belong to the sentence they close.
CLOSERS = "”’」』）》〉】\"')"
# English sentences end at . ! ? (and a closer) before a space; Chinese ones at
# 。！？；… (and a closer) with no space after; a run of marks ("！？", "……") is one end.
_SENTENCE_END = re.compile(
    rf"(?<=[.!?])\s+|(?<=[.!?][{CLOSERS}])\s+"
    rf"|(?<=[。！？；…][{CLOSERS}])(?![{CLOSERS}])\s*|(?<=[。！？；…])(?![。！？；…{CLOSERS}])\s*")
# Inside an overlong sentence: after a clause mark (full-width or ASCII).
_CLAUSE_END = re.compile(r"(?<=[，、：])\s*|(?<=[,;:])\s+")


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    source_id: str
    start: int
    end: int
    text: str


def _spans(text: str, pattern: re.Pattern[str], start: int, end: int) -> list[tuple[int, int]]:
    spans, pos = [], start
    for m in pattern.finditer(text, start, end):
        if m.start() > pos:
            spans.append((pos, m.start()))
        pos = m.end()
    if pos < end:
        spans.append((pos, end))
    return spans


# Bumped when chunk boundaries change (2: Chinese sentence ends and sizes; 3: ； … and
# closing quotes end Chinese sentences, overlong sentences cut at clauses).
CHUNKER_VERSION = 3
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _size(text: str) -> int:
    """Words, counting two CJK characters as one: Chinese has no spaces to count."""
    return len(text.split()) + len(_CJK_CHAR.findall(text)) // 2


def _fit(text: str, start: int, end: int, max_words: int) -> list[tuple[int, int]]:
    """Spans of text[start:end] no larger than `max_words`: at clause marks, then by size."""
    if _size(text[start:end]) <= max_words:
        return [(start, end)]
    out: list[tuple[int, int]] = []
    clauses = _spans(text, _CLAUSE_END, start, end)
    if len(clauses) > 1:
        for a, b in clauses:
            out.extend(_fit(text, a, b, max_words))
        return out
    pos = start
    while pos < end:  # no mark to cut at: the longest prefix that fits, ending at a space if any
        lo, hi = pos + 1, end
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if _size(text[pos:mid]) <= max_words else (lo, mid - 1)
        cut = lo
        space = text.rfind(" ", pos + 1, cut)
        if cut < end and space > pos:
            cut = space
        out.append((pos, cut))
        pos = cut
        while pos < end and text[pos].isspace():
            pos += 1
    return out


def chunk_text(source_id: str, text: str, max_words: int = 120) -> list[Chunk]:
    pieces: list[tuple[int, int]] = []
    for start, end in _spans(text, re.compile(r"\n\s*\n"), 0, len(text)):
        if _size(text[start:end]) <= max_words:
            pieces.append((start, end))
        else:
            for a, b in _spans(text, _SENTENCE_END, start, end):
                pieces.extend(_fit(text, a, b, max_words))
    chunks: list[Chunk] = []
    cur_start: int | None = None
    cur_end = 0
    words = 0
    for start, end in pieces:
        n = _size(text[start:end])
        if cur_start is not None and words + n > max_words:
            chunks.append(Chunk(f"{source_id}:{len(chunks)}", source_id, cur_start, cur_end, text[cur_start:cur_end]))
            cur_start, words = None, 0
        if cur_start is None:
            cur_start = start
        cur_end, words = end, words + n
    if cur_start is not None:
        chunks.append(Chunk(f"{source_id}:{len(chunks)}", source_id, cur_start, cur_end, text[cur_start:cur_end]))
    return chunks
