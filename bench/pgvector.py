"""Long-term memory on PostgreSQL + pgvector: server start, vector read, fact lookup, forget.

    .venv/bin/python -m bench.pgvector                 # 100,000 memories and facts (a few minutes)
    .venv/bin/python -m bench.pgvector --n 20000       # smaller
    .venv/bin/python -m bench.pgvector --no-langgraph  # without LangGraph's PostgresStore beside it

Needs the `server` extra. Prints one JSON object.

1. Start: `briefroom.postgres.server.local_postgres` (initdb in a temp dir, postgres on a
   loopback port, ready to accept connections), `--starts` times, median and max.
2. Load: N memories (vectors of `--dims`, random unit vectors as in bench/memory.py) and
   N facts (8-word sentences, indexed by their terms), owned as in bench/memory.py: one
   heavy user holds 90%, nine others the rest; every read is the heavy user's. Loaded
   with COPY, then the HNSW index is built (m=16, ef_construction=64, pgvector's default).
   The server is durable here (fsync and synchronous commit on).
3. Vector read: `PgMemoryStore.recall` (HNSW with the namespace filter and iterative
   scan, joined with the rows, threshold, scoring; the query's vector comes from the
   store's cache, as after a run's first read), p50/p95; and the recall@10 of the
   index against an exact scan of the same namespace.
4. Fact lookup: `facts_about(entity)`, p50/p95; `find_facts` (terms) p95.
5. Writes: `put_memory` one at a time (one transaction each, durable), per second.
6. Forget: one `forget` with N rows stored (its VACUUM FULL of the text tables and the
   WAL checkpoint are most of it).
7. LangGraph's PostgresStore with the same N items (value JSONB with the same fields,
   vectors in its store_vectors with its HNSW index): `search(namespace, query)` and
   `search(namespace, filter={"entity": ...})`, the latter being how a fact would be
   found by entity there; and how many of k results a filtered search returns.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from briefroom.memory.namespace import Namespace  # noqa: E402
from briefroom.memory.rules import terms  # noqa: E402
from briefroom.postgres.memory import PgMemoryStore  # noqa: E402
from briefroom.postgres.server import local_postgres  # noqa: E402


class FixedEmbedder:
    """Hands out prepared vectors for the benchmark's queries (no model in the timing)."""

    name = "bench-fixed"

    def __init__(self, dims: int, rng: np.random.Generator):
        self.dims, self.rng, self.known = dims, rng, {}

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            if text not in self.known:
                v = self.rng.standard_normal(self.dims).astype(np.float32)
                self.known[text] = (v / np.linalg.norm(v)).tolist()
            out.append(self.known[text])
        return out


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def ms(values: list[float]) -> dict:
    return {"p50": round(statistics.median(values), 3), "p95": round(pct(values, 0.95), 3)}


def timed(fn, times: int) -> list[float]:
    out = []
    for i in range(times):
        t = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t) * 1000)
    return out


def starts(count: int) -> dict:
    took = []
    for _ in range(count):
        with local_postgres() as pg:
            took.append(pg.started_in)
            version = pg.version
    return {"version": version, "start_s_median": round(statistics.median(took), 3), "start_s_max": max(took),
            "starts": count}


def load(store: PgMemoryStore, n: int, dims: int, owner, rng: np.random.Generator, fact_text) -> dict:
    conn, s = store._conn, store.schema
    conn.execute(f"DROP INDEX {s}.vectors_hnsw")
    t0 = time.perf_counter()
    now = time.time()
    for lo in range(0, n, 10_000):
        hi = min(lo + 10_000, n)
        vecs = rng.standard_normal((hi - lo, dims)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        with conn.cursor() as cur:
            with cur.copy(f'COPY {s}.vectors (id, "user", session, task, zone, embedding) FROM STDIN') as copy:
                for j, i in enumerate(range(lo, hi)):
                    ns = owner(i)
                    copy.write_row((f"v{i:015d}", ns.user, ns.session, ns.task, "vector", vecs[j]))
            with cur.copy(f"COPY {s}.memories FROM STDIN") as copy:
                for i in range(lo, hi):
                    ns = owner(i)
                    copy.write_row((f"v{i:015d}", ns.user, ns.session, ns.task, "task", f"memory {i} about a market",
                                    "{}", 0.8, now))
            with cur.copy(f"COPY {s}.facts FROM STDIN") as copy:
                for i in range(lo, hi):
                    ns = owner(i)
                    copy.write_row((f"f{i:015d}", ns.user, ns.session, ns.task, f"entity {i}", "value", str(i), "",
                                    fact_text(i), '["S1"]', '["critic"]', "r", now, None, "current"))
            with cur.copy(f"COPY {s}.fact_terms FROM STDIN") as copy:
                for i in range(lo, hi):
                    for term in sorted(terms(f"entity {i} {fact_text(i)}")):
                        copy.write_row((owner(i).user, term, f"f{i:015d}"))
    conn.execute(f'INSERT INTO {s}.term_counts SELECT "user", term, count(*) FROM {s}.fact_terms GROUP BY 1, 2')
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    conn.execute("SET maintenance_work_mem = '1GB'")
    conn.execute(f"CREATE INDEX vectors_hnsw ON {s}.vectors USING hnsw (embedding vector_cosine_ops)")
    conn.execute(f"VACUUM ANALYZE {s}.vectors, {s}.memories, {s}.facts, {s}.fact_terms, {s}.term_counts")
    return {"load_s": round(load_s, 1), "hnsw_build_s": round(time.perf_counter() - t0, 1)}


def recall_at_10(store: PgMemoryStore, ns: Namespace, queries: list[list[float]]) -> float:
    conn, s = store._conn, store.schema
    sql = (f'SELECT id FROM {s}.vectors WHERE zone = %s AND "user" = %s ORDER BY embedding <=> %s LIMIT 10')
    hits = 0
    for q in queries:
        v = np.asarray(q, dtype=np.float32)
        approx = {r["id"] for r in conn.execute(sql, ["vector", ns.user, v])}
        with conn.transaction():
            conn.execute("SET LOCAL enable_indexscan = off")
            conn.execute("SET LOCAL enable_bitmapscan = off")
            exact = {r["id"] for r in conn.execute(sql, ["vector", ns.user, v])}
        hits += len(approx & exact)
    return round(hits / (10 * len(queries)), 3)


def langgraph_store(url: str, n: int, dims: int, owner, rng: np.random.Generator, fact_text,
                    embedder: FixedEmbedder, queries: list[str], reads: int) -> dict:
    import psycopg
    from langgraph.store.postgres import PostgresStore
    from pgvector.psycopg import register_vector
    from psycopg.rows import dict_row

    with psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
        store = PostgresStore(conn, index={"dims": dims, "embed": embedder.embed, "fields": ["text"]})
        store.setup()
        register_vector(conn)
        conn.execute("DROP INDEX IF EXISTS store_vectors_embedding_idx")
        t0 = time.perf_counter()
        for lo in range(0, n, 10_000):
            hi = min(lo + 10_000, n)
            vecs = rng.standard_normal((hi - lo, dims)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            with conn.cursor() as cur:
                with cur.copy("COPY store (prefix, key, value) FROM STDIN") as copy:
                    for i in range(lo, hi):
                        ns = owner(i)
                        copy.write_row((f"{ns.user}.{ns.session}.{ns.task}", f"f{i:015d}", json.dumps(
                            {"text": fact_text(i), "entity": f"entity {i}", "value": str(i), "zone": "fact"})))
                with cur.copy("COPY store_vectors (prefix, key, field_name, embedding) FROM STDIN") as copy:
                    for j, i in enumerate(range(lo, hi)):
                        ns = owner(i)
                        copy.write_row((f"{ns.user}.{ns.session}.{ns.task}", f"f{i:015d}", "text", vecs[j]))
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("CREATE INDEX store_vectors_embedding_idx ON store_vectors USING hnsw "
                      "(embedding vector_cosine_ops)")
        conn.execute("VACUUM ANALYZE store, store_vectors")
        build_s = time.perf_counter() - t0
        heavy = owner(1)
        light = owner(0)
        store.search((heavy.user,), query=queries[0], limit=5)
        vec_ms = timed(lambda i: store.search((heavy.user,), query=queries[i % len(queries)], limit=5), reads)
        light_found = [len(store.search((light.user,), query=q, limit=10)) for q in queries[:20]]
        look_ms = timed(lambda i: store.search((owner((i * 7919) % n).user,),
                                               filter={"entity": f"entity {(i * 7919) % n}"}, limit=10), 200)
    return {"n": n, "load_s": round(load_s, 1), "hnsw_build_s": round(build_s, 1),
            "vector_read_ms": ms(vec_ms), "fact_lookup_by_filter_ms": ms(look_ms),
            "light_user_results_of_10": round(statistics.mean(light_found), 2)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories and fact rows")
    parser.add_argument("--dims", type=int, default=512, help="vector size (512: the default local embedder)")
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--no-langgraph", action="store_true", help="skip LangGraph's PostgresStore")
    args = parser.parse_args(argv)
    out: dict = {"bench": "pgvector", "n": args.n, "dims": args.dims, **starts(args.starts)}
    rng = np.random.default_rng(1)
    words = random.Random(1)
    users = [Namespace(f"user{i}", "s1", "t1") for i in range(10)]

    def owner(i: int) -> Namespace:
        return users[0] if i % 10 else users[1 + (i // 10) % 9]

    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(words.choice(letters) for _ in range(7)) for _ in range(3000)]
    query_words = ["cloud", "market", "provider", "public", "grows", "fastest", "waste", "survey"]
    texts = [" ".join([words.choice(vocab) for _ in range(7)] +
                      [words.choice(query_words) if words.random() < 0.08 else "ledger"]).capitalize() + "."
             for _ in range(4096)]

    def fact_text(i: int) -> str:
        return f"{texts[i % len(texts)]} {i}"

    embedder = FixedEmbedder(args.dims, rng)
    queries = [f"query {i} about the public cloud market" for i in range(50)]
    with local_postgres(durable=True, settings={"shared_buffers": "512MB"}) as pg:
        store = PgMemoryStore(pg.database("bench"), embedder, dims=args.dims)
        out.update(load(store, args.n, args.dims, owner, rng, fact_text))
        heavy = users[0]
        store.recall(queries[0], heavy, threshold=0.0)  # warm
        out["vector_read_ms"] = ms(timed(lambda i: store.recall(queries[i % len(queries)], heavy, "user",
                                                                threshold=0.0), args.reads))
        out["light_user_vector_read_ms"] = ms(timed(lambda i: store.recall(queries[i % len(queries)], users[1],
                                                                           "user", threshold=0.0), args.reads))
        out["recall_at_10_heavy_user"] = recall_at_10(store, heavy, [embedder.embed([q])[0] for q in queries[:20]])
        out["recall_at_10_light_user"] = recall_at_10(store, users[1], [embedder.embed([q])[0] for q in queries[:20]])
        out["fact_lookup_ms"] = ms(timed(lambda i: store.facts_about(f"entity {(i * 7919) % args.n}",
                                                                     owner((i * 7919) % args.n)), 1000))
        out["find_facts_ms"] = ms(timed(lambda i: store.find_facts("public cloud market provider", heavy), 100))
        t0 = time.perf_counter()
        for i in range(200):
            store.put_memory(Namespace("writer"), "task", f"a new memory {i}", {"run": "w"}, 0.5)
        out["put_memory_per_s"] = round(200 / (time.perf_counter() - t0), 1)
        t0 = time.perf_counter()
        store.forget(f"f{7:015d}", owner(7))
        out["forget_s"] = round(time.perf_counter() - t0, 2)
        out["forget_compaction"] = store.last_compaction
        store.close()
        if not args.no_langgraph:
            out["langgraph_postgres_store"] = langgraph_store(pg.database("lg"), args.n, args.dims, owner, rng,
                                                              fact_text, embedder, queries, args.reads)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
