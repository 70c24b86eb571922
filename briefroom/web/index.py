"""The run's index when web research is on: the corpus index, which also takes pages.

A fetched page is a Document like a file of the corpus (content-hash source id, title,
path = its URL), chunked, embedded and stored the same way, in the same stores, and
joins the run's scope: `local_search` finds its passages from then on, `read_source`
reads it, and the claim checks find its text like any document's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from briefroom.corpus.chroma import ChromaCorpusIndex
from briefroom.corpus.chunking import chunk_text
from briefroom.corpus.documents import Document
from briefroom.corpus.index import CANDIDATES, EMBED_BATCH, Hit
from briefroom.corpus.lexical import LexicalIndex, fuse
from briefroom.errors import EngineeringFailure

if TYPE_CHECKING:
    from chromadb.api.types import Where


class WebIndex(ChromaCorpusIndex):
    def add_document(self, doc: Document) -> None:
        """Index `doc` (once per content: a page fetched again embeds nothing) and add
        it to this run's scope."""
        with self._lock:
            known = self._db.execute("SELECT 1 FROM documents WHERE source_id = ?", (doc.source_id,)).fetchone()
            if not known:
                chunks = chunk_text(doc.source_id, doc.text)
                step = max(1, min(self._client.get_max_batch_size(), EMBED_BATCH))
                for at in range(0, len(chunks), step):
                    batch = chunks[at:at + step]
                    self._chunks.upsert(
                        ids=[c.chunk_id for c in batch],
                        embeddings=np.asarray(self.embedder.embed([c.text for c in batch]), dtype=np.float32),
                        documents=[c.text for c in batch],
                        metadatas=[{"source_id": c.source_id, "start": c.start, "end": c.end} for c in batch])
                # after the vectors, as in sync(): a crash in between re-embeds, never loses chunks
                self._db.execute("INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?)",
                                 (doc.source_id, doc.title, doc.path, doc.text))
                self._db.commit()
            if doc.source_id not in self._scope:
                self._scope = sorted([*self._scope, doc.source_id])

    def passages(self, source_id: str, query: str, k: int) -> list[Hit]:
        """The `k` passages of one indexed document most relevant to `query` (vector and
        BM25 fused, as in `search`); its opening passages when the query is empty."""
        with self._lock:
            doc = self._document(source_id)
            if doc is None:
                return []
            chunks = chunk_text(source_id, doc.text)
            self._chunk_cache.update({c.chunk_id: c for c in chunks})
            if not query.strip() or len(chunks) <= k:
                ranked = [c.chunk_id for c in chunks[:k]]
                return [self._hit(cid, None) for cid in ranked]
            where: Where = {"source_id": source_id}
            try:
                found = self._chunks.query(query_embeddings=np.asarray(self.embedder.embed([query]), dtype=np.float32),
                                           n_results=min(len(chunks), k * CANDIDATES), where=where,
                                           include=["distances"])
            except Exception as exc:  # chromadb raises many types; the caller needs one
                raise EngineeringFailure(f"index query failed: {exc}", tool="fetch_url", transient=True) from exc
            distance = dict(zip(found["ids"][0], (found["distances"] or [[]])[0]))
            lexical = LexicalIndex.build([(c.chunk_id, c.text) for c in chunks]).search(query, k * CANDIDATES)
            ranked = fuse([list(found["ids"][0]), [cid for cid, _ in lexical]], k)
            return [self._hit(cid, distance.get(cid)) for cid in ranked if cid in self._chunk_cache]
