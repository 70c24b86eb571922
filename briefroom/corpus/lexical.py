"""BM25 over the chunks in scope: the exact words a vector model may not know.

all-MiniLM-L6-v2 was trained on English; for a Chinese question it ranks Chinese
passages close to chance, and in any language it blurs exact names and figures
("Amber Line", "2025"). Lexical scores on words and CJK character pairs catch what
the vectors miss; `fuse` merges both rankings by reciprocal rank.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from briefroom.protocol.extraction import content_words

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
K1, B = 1.2, 0.75
RRF_K = 60  # the usual damping constant of reciprocal rank fusion


def terms(text: str) -> list[str]:
    """Content words, CJK character pairs and numbers (a year or a figure is often the key)."""
    return [*content_words(text), *_NUMBER.findall(text)]


@dataclass
class LexicalIndex:
    ids: list[str]
    lengths: list[int]
    postings: dict[str, list[tuple[int, int]]]  # term -> (doc position, term frequency)

    @classmethod
    def build(cls, chunks: list[tuple[str, str]]) -> "LexicalIndex":
        postings: dict[str, list[tuple[int, int]]] = {}
        lengths = []
        for pos, (_, text) in enumerate(chunks):
            counts = Counter(terms(text))
            lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                postings.setdefault(term, []).append((pos, tf))
        return cls([cid for cid, _ in chunks], lengths, postings)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        if not self.ids:
            return []
        n = len(self.ids)
        avg = sum(self.lengths) / n or 1.0
        scores: dict[int, float] = {}
        for term in set(terms(query)):
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
            for pos, tf in posting:
                norm = tf * (K1 + 1) / (tf + K1 * (1 - B + B * self.lengths[pos] / avg))
                scores[pos] = scores.get(pos, 0.0) + idf * norm
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [(self.ids[pos], score) for pos, score in best]


def fuse(rankings: list[list[str]], k: int) -> list[str]:
    """Reciprocal rank fusion: an id ranked high by either list rises; ties keep list order."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, cid in enumerate(ranking):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (RRF_K + rank + 1)
    order = {cid: n for n, cid in enumerate(cid for ranking in rankings for cid in ranking)}
    return sorted(scores, key=lambda cid: (-scores[cid], order[cid]))[:k]
