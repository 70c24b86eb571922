"""ChromaCorpusIndex: the `CorpusIndex` of a data directory: chunks in chromadb, full
documents in SQLite, keyed by content hash.

Embedding is the slow step, so a chunk is embedded once per distinct content: a second
run over the same folder (or the same file copied elsewhere) embeds nothing.

The directory is named after the embedder, and `documents.sqlite` records the embedder
that built it (`index.embedder_stamp`); an index found recording another one is emptied
and rebuilt by the next `sync` (`index.stamp_mismatch`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from briefroom.corpus.chunking import CHUNKER_VERSION, chunk_text
from briefroom.corpus.documents import Document, Skipped, load_corpus
from briefroom.corpus.embeddings import Embedder
from briefroom.corpus.index import (
    EMBED_BATCH,
    PROGRESS_EVERY_S,
    HybridIndex,
    SyncStats,
    embedder_stamp,
    stamp_mismatch,
)
from briefroom.files import store_file

if TYPE_CHECKING:
    from chromadb.api.types import Where

COLLECTION = "corpus_chunks"


class ChromaCorpusIndex(HybridIndex):
    def __init__(self, data_dir: Path, embedder: Embedder):
        super().__init__()
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
        with store_file(self.root / "documents.sqlite", "the corpus index's documents"):
            self._db = sqlite3.connect(self.root / "documents.sqlite", check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.execute("CREATE TABLE IF NOT EXISTS documents (source_id TEXT PRIMARY KEY, title TEXT, "
                             "path TEXT, text TEXT)")
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        self.rebuilt: str | None = self._check_embedder()

    def _check_embedder(self) -> str | None:
        """Empty the index when its vectors come from another embedder (or from one it
        cannot name); stamp it with this one. Returns why it was emptied, or None."""
        want = embedder_stamp(self._embedder)
        recorded = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        why = stamp_mismatch(recorded, want, lambda: bool(
            self._db.execute("SELECT COUNT(*) FROM documents").fetchone()[0] or self._chunks.count()))
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

    def _nearest(self, query: str, scope: list[str], n: int) -> list[tuple[str, float]]:
        any_of: dict[Literal["$in", "$nin"], list[str | int | float | bool]] = {"$in": list(scope)}
        where: Where = {"source_id": any_of} if len(scope) > 1 else {"source_id": scope[0]}
        found = self._chunks.query(query_embeddings=np.asarray(self._embedder.embed([query]), dtype=np.float32),
                                   n_results=n, where=where, include=["distances"])
        return list(zip(found["ids"][0], (found["distances"] or [[]])[0]))

    def _document(self, source_id: str) -> Document | None:
        row = self._db.execute("SELECT source_id, title, path, text FROM documents WHERE source_id = ?",
                               (source_id,)).fetchone()
        return Document(*row) if row else None


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
