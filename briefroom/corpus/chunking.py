"""Split a document into passages with character offsets into the original text.

Paragraphs are packed up to a word limit; a paragraph longer than the limit is split
at sentence ends. Offsets let a citation point at the exact passage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# English sentences end at . ! ? and a space; Chinese ones at 。！？ with no space after.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


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


# Bumped when chunk boundaries change (2: Chinese sentence ends and sizes).
CHUNKER_VERSION = 2
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _size(text: str) -> int:
    """Words, counting two CJK characters as one: Chinese has no spaces to count."""
    return len(text.split()) + len(_CJK_CHAR.findall(text)) // 2


def chunk_text(source_id: str, text: str, max_words: int = 120) -> list[Chunk]:
    pieces: list[tuple[int, int]] = []
    for start, end in _spans(text, re.compile(r"\n\s*\n"), 0, len(text)):
        if _size(text[start:end]) <= max_words:
            pieces.append((start, end))
        else:
            pieces.extend(_spans(text, _SENTENCE_END, start, end))
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
