"""The corpus index as the run uses it: the `CorpusIndex` port, the hybrid ranking every
backend shares (`HybridIndex`: vectors and BM25 fused), and the embedder stamp rule.

Backends keep only their storage: `corpus/chroma.py` (chromadb and SQLite in the data
directory) and `postgres/corpus.py` (pgvector); `stores.open_index` picks one.

Vectors of two models must never share an index: each backend records the embedder
(name and version) that built it, and an index found recording another one, or none
while holding documents, is emptied and rebuilt (`CorpusIndex.rebuilt` says why).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from briefroom.corpus.chunking import Chunk, chunk_text
from briefroom.corpus.documents import Document, Skipped
from briefroom.corpus.embeddings import Embedder, embedder_version
from briefroom.corpus.lexical import LexicalIndex, fuse
from briefroom.errors import EngineeringFailure

CANDIDATES = 4  # each ranking offers k * CANDIDATES chunks to the fusion
EMBED_BATCH = 256  # chunks embedded and stored per step: bounded memory for a large document
PROGRESS_EVERY_S = 5.0


@dataclass(frozen=True)
class Hit:
    chunk_id: str
    source_id: str
    title: str
    path: str
    start: int
    end: int
    text: str
    score: float


@dataclass(frozen=True)
class SyncStats:
    documents: int
    embedded_chunks: int
    reused_documents: int
    skipped: tuple[Skipped, ...] = ()


class CorpusIndex(Protocol):
    """What the run, the corpus tools and memory's reader need of an index."""

    rebuilt: str | None  # why the index was emptied when opened, or None

    @property
    def embedder(self) -> Embedder: ...

    @property
    def scope(self) -> list[str]: ...

    def sync(self, folders: list[Path], progress: Callable[[str], None] | None = None) -> SyncStats: ...

    def search(self, query: str, k: int = 5) -> list[Hit]: ...

    def document(self, source_id: str) -> Document | None: ...

    def close(self) -> None: ...


def embedder_stamp(embedder: Embedder) -> dict[str, str]:
    """What an index records about the embedder that built it."""
    return {"embedder": embedder.name, "embedder_version": embedder_version(embedder)}


def stamp_mismatch(recorded: dict[str, str], want: dict[str, str], holds_anything: Callable[[], bool]) -> str | None:
    """Why an index stamped `recorded` cannot serve the embedder stamped `want`, or None.
    An index that records no embedder is trusted only while it is empty."""
    if "embedder" not in recorded:
        return "the index does not record the embedder that built it" if holds_anything() else None
    if any(recorded.get(k) != v for k, v in want.items()):
        return (f"the index was built with {recorded.get('embedder')} {recorded.get('embedder_version', '')}"
                .rstrip() + f", not {want['embedder']} {want['embedder_version']}".rstrip())
    return None


class HybridIndex:
    """The search every backend runs: the vector ranking (the backend's `_nearest`) and
    BM25 over the scope's chunks (built here from the stored documents) fused by `fuse`.
    A backend sets `_embedder` and implements `_nearest` and `_document`."""

    _embedder: Embedder

    def __init__(self) -> None:
        # Tools run in a worker thread (for timeouts); calls are serialised, so sharing is safe.
        self._lock = threading.RLock()
        self._scope: list[str] = []
        self._lexical_index: tuple[tuple[str, ...], LexicalIndex] | None = None
        self._chunk_cache: dict[str, Chunk] = {}

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def scope(self) -> list[str]:
        return list(self._scope)

    def _nearest(self, query: str, scope: list[str], n: int) -> list[tuple[str, float]]:
        """(chunk id, cosine distance) of the n chunks of `scope` nearest to `query`."""
        raise NotImplementedError

    def _document(self, source_id: str) -> Document | None:
        raise NotImplementedError

    def search(self, query: str, k: int = 5) -> list[Hit]:
        # Tool calls of one reply run in parallel; one connection must not be used by two threads at once.
        with self._lock:
            return self._search(query, k)

    def _search(self, query: str, k: int) -> list[Hit]:
        """Vector and lexical rankings fused: meaning from the embedder, exact words,
        names, figures and Chinese from BM25 (see corpus/lexical.py)."""
        if not self._scope:
            return []
        wide = k * CANDIDATES
        try:
            nearest = self._nearest(query, list(self._scope), wide)
        except Exception as exc:  # backends raise many types; the caller needs one
            raise EngineeringFailure(f"index query failed: {exc}", tool="local_search", transient=True) from exc
        distance = dict(nearest)
        lexical = self._lexical().search(query, wide)
        ranked = fuse([[cid for cid, _ in nearest], [cid for cid, _ in lexical]], k)
        return [self._hit(cid, distance.get(cid)) for cid in ranked if cid in self._chunk_cache]

    def _lexical(self) -> LexicalIndex:
        """Built once per scope from the stored documents (chunking is deterministic)."""
        key = tuple(self._scope)
        if self._lexical_index is None or self._lexical_index[0] != key:
            chunks = []
            for sid in self._scope:
                doc = self._document(sid)
                if doc is not None:
                    pieces = chunk_text(sid, doc.text)
                    chunks += [(c.chunk_id, c.text) for c in pieces]
                    self._chunk_cache.update({c.chunk_id: c for c in pieces})
            self._lexical_index = (key, LexicalIndex.build(chunks))
        return self._lexical_index[1]

    def _hit(self, chunk_id: str, distance: float | None) -> Hit:
        chunk = self._chunk_cache[chunk_id]
        doc = self._document(chunk.source_id)
        # score: the vector similarity where the vectors found it, else 0 (found by its words)
        score = round(1.0 - float(distance), 4) if distance is not None else 0.0
        return Hit(chunk_id=chunk_id, source_id=chunk.source_id, title=doc.title if doc else "",
                   path=doc.path if doc else "", start=chunk.start, end=chunk.end, text=chunk.text, score=score)

    def document(self, source_id: str) -> Document | None:
        with self._lock:
            return self._document(source_id)


