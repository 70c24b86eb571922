"""Parallel searchers: wall time of one research run with `--parallel N` against one
searcher, over HTTP against an endpoint double that answers every call after a fixed
latency (the deterministic model's replies, so the reports can be compared).

    python -m bench.parallel [--latency 1.0] [--parallel 4]

Prints JSON: per setting, the whole run's wall time, the search phase's wall time (first
searcher call sent to last searcher reply) and the endpoint's most calls at once; and
whether the reports are identical.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from briefroom.config import Settings
from briefroom.events import LlmCall, read_events
from briefroom.models.endpoint_double import EndpointDouble
from briefroom.run import ResearchRequest, run_research

ROOT = Path(__file__).resolve().parent.parent
# Two parts: the Planner hands out each part plus its own two sub-questions, four in all.
QUESTION = "How big is the 2026 public cloud market and who is growing fastest?"
CORPUS = ROOT / "scenarios" / "cloud-market" / "corpus"


def search_phase(run_dir: Path) -> tuple[float, int]:
    """Seconds from the first searcher call sent to the last searcher reply; sub-tasks."""
    events = [e for e in read_events(run_dir / "run.jsonl")
              if isinstance(e, LlmCall) and e.agent.startswith("searcher")]
    start = min(e.elapsed_s - e.latency_ms / 1000 for e in events)
    end = max(e.elapsed_s for e in events)
    return end - start, len({e.agent for e in events})


def one_run(base_url: str, parallel: int, work: Path) -> dict:
    settings = Settings(model="double", base_url=base_url, api_key="not-needed", structured="json_object_schema",
                        data_dir=work / "data", memory=False, rounds=1, parallel=parallel)
    out = work / f"parallel-{parallel}"
    started = time.perf_counter()
    run_research(ResearchRequest(question=QUESTION, corpus=[CORPUS], out=out), settings)
    wall = time.perf_counter() - started
    phase, workers = search_phase(out)
    return {"parallel": parallel, "wall_s": round(wall, 2), "search_phase_s": round(phase, 2),
            "searcher_workers": workers, "report": (out / "report.md").read_text(encoding="utf-8")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--parallel", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EndpointDouble(latency=args.latency) as double:
        work = Path(tmp)
        one = one_run(double.base_url, 1, work)
        double.max_in_flight = 0
        many = one_run(double.base_url, args.parallel, work)
        result = {
            "latency_s": args.latency,
            "one_searcher": {k: v for k, v in one.items() if k != "report"},
            "parallel": {k: v for k, v in many.items() if k != "report"} | {"most_calls_at_once": double.max_in_flight},
            "search_phase_ratio": round(many["search_phase_s"] / one["search_phase_s"], 3),
            "wall_ratio": round(many["wall_s"] / one["wall_s"], 3),
            "same_report": one["report"] == many["report"],
        }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
