"""Many research jobs at once: throughput of 1 worker process against N, on the job
queue (procrastinate on a PostgreSQL started here, on loopback), with an endpoint double
answering every model call after a fixed latency.

    python -m bench.jobs [--jobs 8] [--workers 2] [--latency 1.0] [--rounds 1]

Prints JSON: per setting, the wall time from the first job queued to the last finished,
jobs per minute, and the ratio. Each setting gets a fresh database and runs folder; the
workers are real `briefroom worker` processes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from briefroom import jobs
from briefroom.models.endpoint_double import EndpointDouble
from briefroom.postgres.server import local_postgres

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "scenarios" / "cloud-market" / "corpus"
QUESTIONS = ["How big is the 2026 public cloud market?", "Which cloud provider grows fastest?",
             "What do rival forecasts say about cloud spending in 2026?", "How fast did Azure grow?",
             "How fast did AWS grow?", "What drives public cloud spending?", "How big was cloud storage spending?",
             "Which region spends most on public cloud?"]


def one_setting(url: str, workers: int, n_jobs: int, settings: dict, work: Path) -> dict:
    runs_root = work / f"runs-{workers}"
    ids = [jobs.submit(url, QUESTIONS[i % len(QUESTIONS)], [CORPUS], runs_root, settings) for i in range(n_jobs)]
    started = time.perf_counter()
    env = {**os.environ, "BRIEFROOM_DATABASE_URL": url}
    proc = subprocess.Popen([str(Path(sys.executable).parent / "briefroom"), "worker", "-n", str(workers)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        done = jobs.wait_until(lambda: all(jobs.show_job(url, i).status in ("succeeded", "failed") for i in ids),
                               timeout=3600, every=1.0)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=120)
    wall = time.perf_counter() - started
    statuses = [jobs.show_job(url, i).status for i in ids]
    return {"workers": workers, "jobs": n_jobs, "finished": done, "succeeded": statuses.count("succeeded"),
            "wall_s": round(wall, 1), "jobs_per_min": round(60 * n_jobs / wall, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, local_postgres() as pg, EndpointDouble(latency=args.latency) as double:
        work = Path(tmp)
        # what each job chooses; the workers reach the database, where the runs keep their
        # checkpoints and corpus index (each setting gets a fresh database, indexed by its first job)
        settings = {"model": "double", "base_url": double.base_url, "structured": "json_object_schema",
                    "rounds": args.rounds, "data_dir": work / "data", "memory": False}
        one = one_setting(pg.database("one"), 1, args.jobs, settings, work)
        many = one_setting(pg.database("many"), args.workers, args.jobs, settings, work)
    print(json.dumps({"latency_s": args.latency, "one_worker": one, "workers": many,
                      "throughput_ratio": round(many["jobs_per_min"] / one["jobs_per_min"], 2)}, indent=1))


if __name__ == "__main__":
    main()
