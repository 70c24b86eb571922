"""Long-term memory: the benefit on a related question, read and lookup latency, gate cost.

    .venv/bin/python -m bench.memory            # all of it (100k memories: a few minutes)
    .venv/bin/python -m bench.memory --n 20000  # smaller store
    .venv/bin/python -m bench.memory --model embedded --n 1000  # the pair with the local model

1. Benefit: the shipped scenario pair (`scenarios/memory-pair/pair.yaml`). In a fresh
   data directory, user A researches the first question, then the related one; user B
   asks the related question with no memory. Same corpus, same model (the
   deterministic `test` provider by default), so every difference is memory's doing.
2. Vector read: `MemoryStore.recall` (a real query embedding, chromadb filtered by
   namespace, threshold, rows read back from SQLite) with N memories stored. The N
   vectors are random unit vectors loaded in bulk (embedding 100k texts would take
   the benchmark's whole budget and changes nothing about read cost).
   The same read also finds facts by their terms (`find_facts`) among N fact rows:
   sentences of 8 words from a 3,000-word vocabulary, in which the queries' own words
   (cloud, market, provider...) each stand in 1% of the facts; `worst_read_ms_p95` is a
   read whose word stands in every fact of the user.
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
from briefroom.events import BusMessage, LlmCall, MemoryGates, MemoryReuse, RunEnd, ToolCall, read_events  # noqa: E402
from briefroom.memory.namespace import Namespace  # noqa: E402
from briefroom.memory.store import MemoryStore  # noqa: E402
from briefroom.run import ResearchRequest, run_research  # noqa: E402

PAIR = ROOT / "scenarios" / "memory-pair"


def load_pair(folder: Path) -> dict:
    import yaml

    data = yaml.safe_load((folder / "pair.yaml").read_text(encoding="utf-8"))
    return {**data, "corpus": (folder / data["corpus"]).resolve()}


def _summary(run_dir: Path, report: str) -> dict:
    ev = read_events(run_dir / "run.jsonl")
    memory_facts = [e for e in ev if isinstance(e, MemoryReuse)]
    gates = next((e.seconds for e in ev if isinstance(e, MemoryGates)), 0.0)
    wall = next(e.elapsed_s for e in ev if isinstance(e, RunEnd))
    return {"tool_calls": sum(isinstance(e, ToolCall) for e in ev),
            "llm_calls": sum(isinstance(e, LlmCall) for e in ev),
            "questions_searched": sum(isinstance(e, BusMessage) and e.agent == "planner" for e in ev),
            "questions_answered_from_memory": len(memory_facts),
            "memory_facts_in_report": sum(1 for e in memory_facts if e.source in report),
            "gates_s": gates, "run_s": wall, "gates_share": round(gates / wall, 4) if wall else 0.0}


def benefit(tmp: Path, pair: dict, model: str = "test") -> dict:
    base = Settings(model=model, rounds=pair["rounds"], data_dir=tmp / "data", session="bench")

    def run(name: str, question: str, **update) -> dict:
        result = run_research(ResearchRequest(question=question, corpus=[pair["corpus"]], out=tmp / name),
                              base.model_copy(update=update))
        return _summary(tmp / name, result.report)

    first = run("a-first", pair["first"], user="a")
    with_memory = run("a-related", pair["related"], user="a")
    without = run("b-related", pair["related"], user="b", memory=False)
    return {"model": model, "first_run": first, "with_memory": with_memory, "without_memory": without}


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
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choice(letters) for _ in range(7)) for _ in range(3000)]
    query_words = ["cloud", "market", "provider", "public", "grows", "fastest", "waste", "survey"]

    def fact_text(i: int) -> str:
        words = [rng.choice(vocab) for _ in range(7)] + [rng.choice(query_words) if rng.random() < 0.08 else "ledger"]
        return f"{' '.join(words).capitalize()} {i}."

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
                          fact_text(i), "[]", "[]", "r", time.time(), None, "current"))
        for user in users:  # vectors go where the store keeps them: one collection per user and session
            mine = [j for j, m in enumerate(metas) if m["user"] == user.user]
            store._coll(user.user, user.session).add(
                ids=[ids[j] for j in mine], embeddings=[vectors[j] for j in mine], metadatas=[metas[j] for j in mine])
        store._db.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        store._db.executemany("INSERT INTO facts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", facts)
        for fact in facts:
            store._index_fact(fact[0], fact[1], fact[4], fact[8])
        store._db.commit()
    load_s = time.perf_counter() - started
    queries = ["how big is the public cloud market", "which provider grows fastest", "cloud waste survey"]
    store.recall(queries[0], users[0])  # warm the embedder and the index

    def timed_reads(texts: list[str]) -> list[float]:
        out = []
        for i in range(reads):
            t = time.perf_counter()
            store.recall(texts[i % len(texts)], users[0], "user")
            out.append((time.perf_counter() - t) * 1000)
        return sorted(out)

    read_ms = timed_reads(queries)
    worst_ms = timed_reads(["ledger entity survey", "ledger entity of the cloud market"])
    lookup_ms = []
    for i in range(1000):
        t = time.perf_counter()
        j = (i * 7919) % n
        store.facts_about(f"entity {j}", owner(j))
        lookup_ms.append((time.perf_counter() - t) * 1000)
    store.close()
    lookup_ms.sort()
    return {"memories": n, "heavy_user_memories": sum(1 for i in range(n) if i % 10), "load_s": round(load_s, 1),
            "vector_read_ms_p50": round(statistics.median(read_ms), 2),
            "vector_read_ms_p95": round(read_ms[int(len(read_ms) * 0.95)], 2),
            "worst_read_ms_p95": round(worst_ms[int(len(worst_ms) * 0.95)], 2),
            "fact_lookup_ms_p50": round(statistics.median(lookup_ms), 4),
            "fact_lookup_ms_p95": round(lookup_ms[int(len(lookup_ms) * 0.95)], 4)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories and fact rows in the latency store")
    parser.add_argument("--pair", type=Path, default=PAIR, help="folder with pair.yaml")
    parser.add_argument("--model", default="test", help="test (default) or embedded, or a model on your endpoint")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = {"bench": "memory", **benefit(Path(tmp), load_pair(args.pair), args.model),
               **latency(Path(tmp), args.n)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
