"""A research run on the embedded engine, measured from its own run log: the share of
prompt tokens each role got from its slot's cache, how close briefroom's count of each
prompt is to the server's, and the search phase's wall time with `--parallel N`.

    .venv/bin/python -m bench.engine_run [--model FILE.gguf] [--rounds 2] [--parallel 1,3]

Prints JSON, one entry per `--parallel` setting, and whether their reports are the same.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from briefroom.config import Settings
from briefroom.events import LlmCall, read_events
from briefroom.run import ResearchRequest, run_research

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "How big is the 2026 public cloud market and who is growing fastest?"
CORPUS = ROOT / "scenarios" / "cloud-market" / "corpus"


def cache_by_role(calls: list[LlmCall]) -> dict[str, dict[str, object]]:
    by_role: dict[str, list[LlmCall]] = defaultdict(list)
    for call in calls:
        by_role[call.agent.split("/")[0]].append(call)
    out: dict[str, dict[str, object]] = {}
    for role, mine in sorted(by_role.items()):
        served = sum(c.served_prompt_tokens or 0 for c in mine)
        cached = sum(c.cached_tokens or 0 for c in mine)
        out[role] = {"calls": len(mine), "served_prompt_tokens": served, "cached_tokens": cached,
                     "cached_share": round(cached / served, 3) if served else None}
    return out


def count_error(calls: list[LlmCall]) -> dict[str, object]:
    errors = [(c.prompt_tokens - c.served_prompt_tokens) / c.served_prompt_tokens
              for c in calls if c.served_prompt_tokens]
    return {"calls": len(errors), "median_pct": round(100 * statistics.median(errors), 2) if errors else None,
            "max_abs_pct": round(100 * max(abs(e) for e in errors), 2) if errors else None}


def search_phase_s(calls: list[LlmCall]) -> float | None:
    """First searcher call sent to the last searcher reply, from the run's clock."""
    searcher = [c for c in calls if c.agent.startswith("searcher")]
    if not searcher:
        return None
    starts = [c.elapsed_s - c.latency_ms / 1000 for c in searcher]
    return round(max(c.elapsed_s for c in searcher) - min(starts), 1)


def one_run(model: str, rounds: int, parallel: int, work: Path) -> dict[str, object]:
    out = work / f"run-p{parallel}"
    settings = Settings(model=model, rounds=rounds, parallel=parallel, data_dir=work / "data", memory=False)
    started = time.perf_counter()
    run_research(ResearchRequest(question=QUESTION, corpus=[CORPUS], out=out), settings)
    wall = time.perf_counter() - started
    calls = [e for e in read_events(out / "run.jsonl") if isinstance(e, LlmCall)]
    served = sum(c.served_prompt_tokens or 0 for c in calls)
    cached = sum(c.cached_tokens or 0 for c in calls)
    return {"parallel": parallel, "wall_s": round(wall, 1), "search_phase_s": search_phase_s(calls),
            "calls": len(calls), "cached_share": round(cached / served, 3) if served else None,
            "by_role": cache_by_role(calls), "count_vs_server": count_error(calls),
            "report": (out / "report.md").read_text(encoding="utf-8")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="embedded", help="embedded, or a GGUF file")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--parallel", default="1")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = [one_run(args.model, args.rounds, int(p), Path(tmp)) for p in args.parallel.split(",")]
    reports = {r.pop("report") for r in runs}  # type: ignore[misc]
    print(json.dumps({"model": args.model, "rounds": args.rounds, "runs": runs,
                      "same_report": len(reports) == 1}, indent=2))


if __name__ == "__main__":
    main()
