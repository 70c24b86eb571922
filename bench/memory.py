"""Long-term memory: the benefit on a related question, read and lookup latency, gate cost.

    .venv/bin/python -m bench.memory            # all of it (100k memories: a few minutes)
    .venv/bin/python -m bench.memory --n 20000  # smaller store

1. Benefit: in a fresh data directory, user A researches a question, then a related
   one; user B asks the related question with no memory. Same corpus, same
   deterministic `test` provider, so every difference is memory's doing.
2. Vector read: `MemoryStore.recall` (a real query embedding, chromadb filtered by
   namespace, threshold, rows read back from SQLite) with N memories stored. The N
   vectors are random unit vectors loaded in bulk (embedding 100k texts would take
   the benchmark's whole budget and changes nothing about read cost).
3. Fact lookup by entity with N fact rows.
4. Gates: the `memory_gates` event's seconds against the run's wall time (the test
   provider makes all of a run's time non-model time).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from briefroom.config import Settings  # noqa: E402
from briefroom.corpus.embeddings import make_embedder  # noqa: E402
from briefroom.memory.namespace import Namespace  # noqa: E402
from briefroom.memory.store import MemoryStore  # noqa: E402
from briefroom.run import ResearchRequest, run_research  # noqa: E402

CORPUS = ROOT / "scenarios" / "cloud-market" / "corpus"
FIRST = "How big will the public cloud market be in 2026?"
RELATED = "How big is the 2026 public cloud market, and which provider grows fastest?"


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "run.jsonl").read_text().splitlines()]


def _summary(run_dir: Path, report: str) -> dict:
    ev = _events(run_dir)
    memory_facts = [e for e in ev if e["event"] == "memory_reuse"]
    gates = next((e["seconds"] for e in ev if e["event"] == "memory_gates"), 0.0)
    wall = next(e["elapsed_s"] for e in ev if e["event"] == "run_end")
    return {"tool_calls": sum(e["event"] == "tool_call" for e in ev),
            "llm_calls": sum(e["event"] == "llm_call" for e in ev),
            "questions_searched": sum(e["event"] == "bus_message" and e["agent"] == "planner" for e in ev),
            "questions_answered_from_memory": len(memory_facts),
            "memory_facts_in_report": sum(1 for e in memory_facts if e["source"] in report),
            "gates_s": gates, "run_s": wall, "gates_share": round(gates / wall, 4) if wall else 0.0}


def benefit(tmp: Path) -> dict:
    data = tmp / "data"
    base = Settings(model="test", rounds=1, data_dir=data, session="bench")

    def run(name: str, question: str, **update) -> dict:
        result = run_research(ResearchRequest(question=question, corpus=[CORPUS], out=tmp / name),
                              base.model_copy(update=update))
        return _summary(tmp / name, result.report)

    run("a-first", FIRST, user="a")
    with_memory = run("a-related", RELATED, user="a")
    without = run("b-related", RELATED, user="b", memory=False)
    return {"with_memory": with_memory, "without_memory": without}


def latency(tmp: Path, n: int, reads: int = 50) -> dict:
    embedder = make_embedder("local")
    store = MemoryStore(tmp / "lat", embedder)
    rng = random.Random(1)
    # The worst case for a read: one heavy user holds 90% of the memories (9 others share
    # the rest), and every read is that user's.
    users = [Namespace(f"user{i}", "s1", "t1") for i in range(10)]

    def owner(i: int) -> Namespace:
        return users[0] if i % 10 else users[1 + (i // 10) % 9]

    dim = len(embedder.embed(["probe"])[0])
    started = time.perf_counter()
    for lo in range(0, n, 5000):
        ids, vectors, metas, rows, facts = [], [], [], [], []
        for i in range(lo, min(lo + 5000, n)):
            ns = owner(i)
            vec = [rng.gauss(0, 1) for _ in range(dim)]
            norm = sum(v * v for v in vec) ** 0.5
            ids.append(f"v{i:015d}")
            vectors.append([v / norm for v in vec])
            metas.append({"user": ns.user, "session": ns.session, "task": ns.task, "zone": "vector"})
            rows.append((ids[-1], ns.user, ns.session, ns.task, "task", f"memory {i}", "{}", 0.8, time.time()))
            facts.append((f"f{i:015d}", ns.user, ns.session, ns.task, f"entity {i}", "value", str(i), "",
                          f"Entity {i} is {i}.", "[]", "[]", "r", time.time(), None, "current"))
        for user in users:  # vectors go where the store keeps them: one collection per user and session
            mine = [j for j, m in enumerate(metas) if m["user"] == user.user]
            store._coll("memories", user.user, user.session).add(
                ids=[ids[j] for j in mine], embeddings=[vectors[j] for j in mine], metadatas=[metas[j] for j in mine])
        store._db.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        store._db.executemany("INSERT INTO facts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", facts)
        store._db.commit()
    load_s = time.perf_counter() - started
    queries = ["how big is the public cloud market", "which provider grows fastest", "cloud waste survey"]
    store.recall(queries[0], users[0])  # warm the embedder and the index
    read_ms = []
    for i in range(reads):
        t = time.perf_counter()
        store.recall(queries[i % len(queries)], users[0], "user", threshold=0.0)
        read_ms.append((time.perf_counter() - t) * 1000)
    lookup_ms = []
    for i in range(1000):
        t = time.perf_counter()
        j = (i * 7919) % n
        store.facts_about(f"entity {j}", owner(j))
        lookup_ms.append((time.perf_counter() - t) * 1000)
    store.close()
    read_ms.sort()
    lookup_ms.sort()
    return {"memories": n, "heavy_user_memories": sum(1 for i in range(n) if i % 10), "load_s": round(load_s, 1),
            "vector_read_ms_p50": round(statistics.median(read_ms), 2),
            "vector_read_ms_p95": round(read_ms[int(len(read_ms) * 0.95)], 2),
            "fact_lookup_ms_p50": round(statistics.median(lookup_ms), 4),
            "fact_lookup_ms_p95": round(lookup_ms[int(len(lookup_ms) * 0.95)], 4)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories and fact rows in the latency store")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = {"bench": "memory", **benefit(Path(tmp)), **latency(Path(tmp), args.n)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
