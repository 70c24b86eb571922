"""CorpusIndex: chunks in chromadb, full documents in SQLite, keyed by content hash.

Embedding is the slow step, so a chunk is embedded once per distinct content: a second
run over the same folder (or the same file copied elsewhere) embeds nothing.

Vectors of two models must never share an index: the directory is named after the
embedder, and `documents.sqlite` records the embedder (name and version) that built it.
An index found recording another one, or none while holding documents, is emptied and
rebuilt by the next `sync` (`CorpusIndex.rebuilt` says why).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from briefroom.corpus.chunking import CHUNKER_VERSION, Chunk, chunk_text
from briefroom.corpus.documents import Document, Skipped, load_corpus
from briefroom.corpus.embeddings import Embedder, embedder_version
from briefroom.corpus.lexical import LexicalIndex, fuse
from briefroom.errors import EngineeringFailure
from briefroom.files import store_file

if TYPE_CHECKING:
    from chromadb.api.types import Where

COLLECTION = "corpus_chunks"
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


class CorpusIndex:
    def __init__(self, data_dir: Path, embedder: Embedder):
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        # The chunker's version is part of the path: vectors of chunks cut another way
        # would not match the passages the lexical side cuts now.
        self.root = data_dir / "index" / f"{_safe(embedder.name)}-chunks{CHUNKER_VERSION}"
        self.root.mkdir(parents=True, exist_ok=True)
        self._embedder = embedder
        with store_file(self.root / "chroma", "the corpus index's vectors"):
            self._client = chromadb.PersistentClient(path=str(self.root / "chroma"),
                                                     settings=ChromaSettings(anonymized_telemetry=False))
            self._chunks = self._client.get_or_create_collection(
                COLLECTION, metadata={"hnsw:space": "cosine"}, embedding_function=None)
        # Tools run in a worker thread (for timeouts); calls are serialised, so sharing is safe.
        self._lock = threading.RLock()
        with store_file(self.root / "documents.sqlite", "the corpus index's documents"):
            self._db = sqlite3.connect(self.root / "documents.sqlite", check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.execute("CREATE TABLE IF NOT EXISTS documents (source_id TEXT PRIMARY KEY, title TEXT, "
                             "path TEXT, text TEXT)")
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        self.rebuilt: str | None = self._check_embedder()
        self._scope: list[str] = []
        self._lexical_index: tuple[tuple[str, ...], LexicalIndex] | None = None
        self._chunk_cache: dict[str, Chunk] = {}

    def _check_embedder(self) -> str | None:
        """Empty the index when its vectors come from another embedder (or from one it
        cannot name); stamp it with this one. Returns why it was emptied, or None."""
        want = {"embedder": self._embedder.name, "embedder_version": embedder_version(self._embedder)}
        recorded = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        why = None
        if "embedder" not in recorded:
            held = self._db.execute("SELECT COUNT(*) FROM documents").fetchone()[0] or self._chunks.count()
            if held:
                why = "the index does not record the embedder that built it"
        elif any(recorded.get(k) != v for k, v in want.items()):
            why = (f"the index was built with {recorded.get('embedder')} {recorded.get('embedder_version', '')}"
                   .rstrip() + f", not {want['embedder']} {want['embedder_version']}".rstrip())
        if why:
            self._client.delete_collection(COLLECTION)
            self._chunks = self._client.get_or_create_collection(
                COLLECTION, metadata={"hnsw:space": "cosine"}, embedding_function=None)
            self._db.execute("DELETE FROM documents")
        if why or recorded != want:
            self._db.execute("DELETE FROM meta")
            self._db.executemany("INSERT INTO meta VALUES (?, ?)", list(want.items()))
            self._db.commit()
        return why

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    def close(self) -> None:
        self._db.close()

    def sync(self, folders: list[Path], progress: Callable[[str], None] | None = None) -> SyncStats:
        """Index every document in `folders`; later searches only see these documents.

        Chunks are embedded and stored in batches; a batch already stored (a retry after a
        kill) is not embedded again, so a large document resumes where it stopped.
        `progress` gets a line now and then: chunks done of the total, and time left."""
        docs: dict[str, Document] = {}
        skipped: list[Skipped] = []
        for folder in folders:
            for doc in load_corpus(folder, skipped):
                docs.setdefault(doc.source_id, doc)
        known = {row[0] for row in self._db.execute("SELECT source_id FROM documents")}
        fresh = [d for d in docs.values() if d.source_id not in known]
        embedded = 0
        planned = [(doc, chunk_text(doc.source_id, doc.text)) for doc in fresh]
        total = sum(len(chunks) for _, chunks in planned)
        done, started, said = 0, time.monotonic(), time.monotonic()
        for doc, chunks in planned:
            # chromadb refuses more than its max batch size in one add; a large document has more chunks
            step = max(1, min(self._client.get_max_batch_size(), EMBED_BATCH))
            for at in range(0, len(chunks), step):
                batch = chunks[at:at + step]
                done += len(batch)
                stored = self._chunks.get(ids=[c.chunk_id for c in batch], include=[])["ids"]
                if len(stored) == len(batch):
                    continue  # stored by an earlier attempt: ids are content-derived, so it is the same text
                if progress and total > step and time.monotonic() - said >= PROGRESS_EVERY_S:
                    said = time.monotonic()
                    left = (said - started) / max(done, 1) * (total - done)
                    progress(f"embedding chunks: {done:,} of {total:,}, about {left:.0f} s left")
                embedded += len(batch)
                self._chunks.upsert(
                    ids=[c.chunk_id for c in batch],
                    embeddings=np.asarray(self._embedder.embed([c.text for c in batch]), dtype=np.float32),
                    documents=[c.text for c in batch],
                    metadatas=[{"source_id": c.source_id, "start": c.start, "end": c.end} for c in batch],
                )
            # Written after the vectors: a crash in between re-embeds, never loses chunks.
            self._db.execute("INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?)",
                             (doc.source_id, doc.title, doc.path, doc.text))
            self._db.commit()
        # Paths can change while content stays: keep the latest location.
        for doc in docs.values():
            self._db.execute("UPDATE documents SET path = ?, title = ? WHERE source_id = ?",
                             (doc.path, doc.title, doc.source_id))
        self._db.commit()
        self._scope = sorted(docs)
        return SyncStats(documents=len(docs), embedded_chunks=embedded, reused_documents=len(docs) - len(fresh),
                         skipped=tuple(skipped))

    @property
    def scope(self) -> list[str]:
        return list(self._scope)

    def search(self, query: str, k: int = 5) -> list[Hit]:
        # Tool calls of one reply run in parallel; one SQLite connection must not be
        # used by two threads at once.
        with self._lock:
            return self._search(query, k)

    def _search(self, query: str, k: int) -> list[Hit]:
        """Vector and lexical rankings fused: meaning from the embedder, exact words,
        names, figures and Chinese from BM25 (see corpus/lexical.py)."""
        if not self._scope:
            return []
        any_of: dict[Literal["$in", "$nin"], list[str | int | float | bool]] = {"$in": list(self._scope)}
        where: Where = {"source_id": any_of} if len(self._scope) > 1 else {"source_id": self._scope[0]}
        wide = k * CANDIDATES
        try:
            found = self._chunks.query(query_embeddings=np.asarray(self._embedder.embed([query]), dtype=np.float32),
                                       n_results=wide, where=where, include=["distances"])
        except Exception as exc:  # chromadb raises many types; the caller needs one
            raise EngineeringFailure(f"index query failed: {exc}", tool="local_search", transient=True) from exc
        distance = dict(zip(found["ids"][0], (found["distances"] or [[]])[0]))
        lexical = self._lexical().search(query, wide)
        ranked = fuse([list(found["ids"][0]), [cid for cid, _ in lexical]], k)
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

    def _document(self, source_id: str) -> Document | None:
        row = self._db.execute("SELECT source_id, title, path, text FROM documents WHERE source_id = ?",
                               (source_id,)).fetchone()
        return Document(*row) if row else None


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
