"""PgCorpusIndex: the corpus index in PostgreSQL with pgvector, shared by every process
that reaches the server.

A `CorpusIndex` (`corpus/index.py`) with the same results as the data directory's
(`corpus/chroma.py`): chunking is `chunk_text`, the hybrid ranking, the lexical side
and the hits are `HybridIndex`'s, the embedder rule is `stamp_mismatch`; only the
storage differs:

- One schema per embedder and chunker version (`corpus_<name>_c<CHUNKER_VERSION>`), as
  the embedded index has one directory per both. `meta` records the embedder's name and
  version; an index recording another one (or none while holding documents) is emptied
  and restamped when opened (`rebuilt` says why), under an exclusive advisory lock.
  Every write takes the same lock shared and checks the stamp first, so a process still
  holding the old embedder fails its write instead of mixing vectors into the new index.
- `documents` holds the full texts (content-hash ids); `chunks` holds one vector per
  chunk (`vector(dims)`, HNSW, cosine) with its document and offsets. Searches filter on
  the run's scope with `hnsw.iterative_scan = strict_order`, so a filtered read still
  returns the nearest chunks of the scope.
- Writes are transactions: a batch of chunks lands whole or not at all, and a document
  row is written after its chunks (a crash in between re-embeds, never loses chunks).
  A batch is embedded under a transaction-level advisory lock on its first chunk id, so
  two processes indexing the same document embed it once: the second finds it stored.
  `ON CONFLICT` makes every write idempotent; three concurrent indexing processes lose
  no row (tests/server/test_corpus_server.py; bench/corpus_server.py measures it).

A server that cannot be reached raises `CorpusServerUnavailable` (one line, the URL
without its password); a query that fails during a run is an `EngineeringFailure`
(transient), as the embedded index's are.

    index = PgCorpusIndex(url, make_embedder("local"))
    index.sync([Path("docs")]); index.search("...", 5)
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from briefroom.corpus.chunking import CHUNKER_VERSION, Chunk, chunk_text
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
from briefroom.database import first_line, public_url
from briefroom.errors import BriefroomError, EngineeringFailure

CONNECT_TIMEOUT_S = 5

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {s}.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.documents (
  source_id text PRIMARY KEY, title text NOT NULL, path text NOT NULL, text text NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.chunks (
  chunk_id text PRIMARY KEY, source_id text NOT NULL, start integer NOT NULL, "end" integer NOT NULL,
  embedding vector({dims}) NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_source ON {s}.chunks (source_id);
CREATE INDEX IF NOT EXISTS chunks_hnsw ON {s}.chunks USING hnsw (embedding vector_cosine_ops);
"""


class CorpusServerUnavailable(BriefroomError):
    """The corpus index's server cannot be reached or used; the message says which and why."""


def schema_name(embedder_name: str) -> str:
    """`corpus_` + the embedder's name folded to [a-z0-9_] (a hash when folding lost
    something) + the chunker's version: vectors of chunks cut another way never mix."""
    folded = re.sub(r"[^a-z0-9_]", "_", embedder_name.lower())[:40]
    if folded != embedder_name:
        folded += "_" + hashlib.sha256(embedder_name.encode()).hexdigest()[:8]
    return f"corpus_{folded}_c{CHUNKER_VERSION}"


def _lock_key(schema: str) -> str:
    return f"briefroom-corpus/{schema}"


class PgCorpusIndex(HybridIndex):
    """A `CorpusIndex` with its documents and vectors in PostgreSQL (see the module doc)."""

    def __init__(self, url: str, embedder: Embedder, *, connect_timeout: int = CONNECT_TIMEOUT_S):
        import psycopg
        from pgvector.psycopg import register_vector

        super().__init__()
        self.url = url
        self.schema = schema_name(embedder.name)
        self._embedder = embedder
        self.rebuilt: str | None = None
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout)
        except psycopg.Error as exc:
            raise CorpusServerUnavailable(f"the corpus index server at {public_url(url)} cannot be reached: "
                                          f"{first_line(exc, self.url)}") from exc
        try:
            self._conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(self._conn)
            self._conn.execute("SET hnsw.iterative_scan = strict_order")
            self.rebuilt = self._check_embedder()
        except psycopg.Error as exc:
            self._conn.close()
            raise CorpusServerUnavailable(f"the corpus index at {public_url(url)} cannot be opened: "
                                          f"{first_line(exc, self.url)}") from exc
        except BaseException:
            self._conn.close()
            raise

    # --- storage ------------------------------------------------------------------------
    def _sql(self, query: str, params: Any = None) -> Any:
        return self._conn.execute(query.replace("{s}", self.schema), params)  # type: ignore[arg-type]

    def _want(self) -> dict[str, str]:
        return embedder_stamp(self._embedder)

    def _check_embedder(self) -> str | None:
        """Create the schema if needed; empty it when its vectors come from another
        embedder (or from one it cannot name); stamp it with this one. Returns why it
        was emptied, or None. Exclusive: writers hold the same lock shared."""
        want = self._want()
        own = len(self._embedder.embed(["dimensions"])[0])  # this embedder's size, measured once, unlocked
        with self._lock, self._conn.transaction():
            self._sql("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [_lock_key(self.schema)])
            dims = self._stored_dims()
            if dims is None:  # first use: the tables (an existing index needs no DDL on each open)
                dims = own
                self._sql("CREATE SCHEMA IF NOT EXISTS {s}")
                for statement in _SCHEMA.format(s=self.schema, dims=dims).split(";"):
                    if statement.strip():
                        self._sql(statement)
            recorded = dict(self._sql("SELECT key, value FROM {s}.meta").fetchall())
            why = stamp_mismatch(recorded, want, lambda: bool(self._sql(
                "SELECT EXISTS (SELECT 1 FROM {s}.documents) OR EXISTS (SELECT 1 FROM {s}.chunks)").fetchone()[0]))
            if why:
                self._sql("TRUNCATE {s}.documents, {s}.chunks")
                if own != dims:  # same name, another size: the column is made again
                    self._sql("DROP TABLE {s}.chunks")
                    for statement in _SCHEMA.format(s=self.schema, dims=own).split(";"):
                        if statement.strip():
                            self._sql(statement)
            if why or recorded != want:
                self._sql("DELETE FROM {s}.meta")
                for key, value in want.items():
                    self._sql("INSERT INTO {s}.meta VALUES (%s, %s)", [key, value])
            return why

    def _stored_dims(self) -> int | None:
        row = self._conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
            [f"{self.schema}.chunks"]).fetchone()
        return int(row[0]) if row else None

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """A write transaction: the embedder lock shared, and the stamp still this embedder's."""
        with self._lock, self._conn.transaction():
            self._sql("SELECT pg_advisory_xact_lock_shared(hashtextextended(%s, 0))", [_lock_key(self.schema)])
            recorded = dict(self._sql("SELECT key, value FROM {s}.meta").fetchall())
            if recorded != self._want():
                raise CorpusServerUnavailable(
                    f"the corpus index {self.schema} was rebuilt for {recorded.get('embedder')} "
                    f"{recorded.get('embedder_version', '')} while this process indexes with {self._embedder.name}; "
                    "start again")
            yield

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # --- indexing -----------------------------------------------------------------------
    def sync(self, folders: list[Path], progress: Callable[[str], None] | None = None) -> SyncStats:
        """Index every document in `folders`; later searches only see these documents
        (what `CorpusIndex.sync` does, in transactions other processes can share)."""
        import psycopg

        docs: dict[str, Document] = {}
        skipped: list[Skipped] = []
        for folder in folders:
            for doc in load_corpus(folder, skipped):
                docs.setdefault(doc.source_id, doc)
        try:
            return self._sync(docs, skipped, progress)
        except psycopg.Error as exc:
            raise CorpusServerUnavailable(f"indexing into {public_url(self.url)} failed: "
                                          f"{first_line(exc, self.url)}") from exc

    def _sync(self, docs: dict[str, Document], skipped: list[Skipped],
              progress: Callable[[str], None] | None) -> SyncStats:
        with self._lock:
            known = {r[0] for r in self._sql("SELECT source_id FROM {s}.documents WHERE source_id = ANY(%s)",
                                             [list(docs)])}
        fresh = [d for d in docs.values() if d.source_id not in known]
        planned = [(doc, chunk_text(doc.source_id, doc.text)) for doc in fresh]
        total = sum(len(chunks) for _, chunks in planned)
        embedded, done, started, said = 0, 0, time.monotonic(), time.monotonic()
        for doc, chunks in planned:
            for at in range(0, len(chunks), EMBED_BATCH):
                batch = chunks[at:at + EMBED_BATCH]
                done += len(batch)
                if progress and total > EMBED_BATCH and time.monotonic() - said >= PROGRESS_EVERY_S:
                    said = time.monotonic()
                    left = (said - started) / max(done, 1) * (total - done)
                    progress(f"embedding chunks: {done:,} of {total:,}, about {left:.0f} s left")
                embedded += self._store_batch(batch)
            # Written after the vectors: a crash in between re-embeds, never loses chunks.
            with self._writing():
                self._sql("INSERT INTO {s}.documents VALUES (%s, %s, %s, %s) ON CONFLICT (source_id) DO UPDATE "
                          "SET title = EXCLUDED.title, path = EXCLUDED.path",
                          [doc.source_id, doc.title, doc.path, doc.text])
        # Paths can change while content stays: keep the latest location.
        reused = [d for d in docs.values() if d.source_id in known]
        if reused:
            with self._writing():
                self._conn.cursor().executemany(
                    f"UPDATE {self.schema}.documents SET path = %s, title = %s WHERE source_id = %s "  # type: ignore[arg-type]
                    "AND (path <> %s OR title <> %s)",
                    [(d.path, d.title, d.source_id, d.path, d.title) for d in reused])
        self._scope = sorted(docs)
        return SyncStats(documents=len(docs), embedded_chunks=embedded, reused_documents=len(reused),
                         skipped=tuple(skipped))

    def _store_batch(self, batch: list[Chunk]) -> int:
        """Embed and store one batch unless it is stored already; returns how many chunks
        were embedded. Two processes on the same batch take turns: the second skips it."""
        ids = [c.chunk_id for c in batch]
        with self._writing():
            self._sql("SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))", [f"{self.schema}/{ids[0]}"])
            stored = self._sql("SELECT COUNT(*) FROM {s}.chunks WHERE chunk_id = ANY(%s)", [ids]).fetchone()[0]
            if stored == len(batch):
                return 0  # stored by another process or an earlier attempt: ids are content-derived
            vectors = np.asarray(self._embedder.embed([c.text for c in batch]), dtype=np.float32)
            with self._conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO {self.schema}.chunks VALUES (%s, %s, %s, %s, %s) "  # type: ignore[arg-type]
                    "ON CONFLICT (chunk_id) DO NOTHING",
                    [(c.chunk_id, c.source_id, c.start, c.end, v) for c, v in zip(batch, vectors)])
            return len(batch)

    # --- reading ------------------------------------------------------------------------
    def _nearest(self, query: str, scope: list[str], n: int) -> list[tuple[str, float]]:
        vector = np.asarray(self._embedder.embed([query]), dtype=np.float32)[0]
        rows = self._sql(
            "SELECT chunk_id, embedding <=> %(q)s AS distance FROM {s}.chunks WHERE source_id = ANY(%(scope)s) "
            "ORDER BY embedding <=> %(q)s LIMIT %(n)s", {"q": vector, "scope": scope, "n": n}).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def _document(self, source_id: str) -> Document | None:
        import psycopg

        try:
            row = self._sql("SELECT source_id, title, path, text FROM {s}.documents WHERE source_id = %s",
                            [source_id]).fetchone()
        except psycopg.Error as exc:
            raise EngineeringFailure(f"index read failed ({public_url(self.url)}): {first_line(exc, self.url)}",
                                     tool="read_source", transient=True) from exc
        return Document(*row) if row else None

    def counts(self) -> dict[str, int]:
        """Documents and chunks stored on the server (every process's)."""
        with self._lock:
            docs = self._sql("SELECT COUNT(*) FROM {s}.documents").fetchone()[0]
            chunks = self._sql("SELECT COUNT(*) FROM {s}.chunks").fetchone()[0]
            return {"documents": int(docs), "chunks": int(chunks)}


