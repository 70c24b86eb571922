"""What every part of the job queue agrees on: the queue's and task's names, the
timings of heartbeats, sweeps and reconnects, the outcomes table, where a job's run
directory is, and how a job attempt says it was interrupted."""

from __future__ import annotations

from pathlib import Path

QUEUE = "research"
TASK = "briefroom.research"
# Heartbeats every few seconds; a worker silent for STALLED_AFTER seconds may be dead,
# and its job goes back to the queue if its lease is free. Small enough that a killed
# job resumes soon.
HEARTBEAT_S = 2.0
STALLED_AFTER_S = 10.0
SWEEP_EVERY_S = 2.0
# How long a worker waits for a run directory whose previous owner (which lost its
# lease) is still winding down, before it gives the job back to the queue.
RUN_LOCK_WAIT_S = 60.0
RECONNECT_EVERY_S = 1.0
OUTCOMES_TABLE = "briefroom_job_outcomes"

# Why each job ended, written by its worker: `jobs show` gives the reason even for a
# job that failed before it had a run directory.
_OUTCOMES_DDL = f"""CREATE TABLE IF NOT EXISTS {OUTCOMES_TABLE} (
    job_id bigint PRIMARY KEY, run_status text NOT NULL, reason text, updated timestamptz NOT NULL DEFAULT now())"""


class JobInterruptedError(Exception):
    """The run stopped through no fault of its own (worker stopping, database gone):
    the job goes back to the queue and resumes from its checkpoint."""


def run_dir_of(runs_root: Path, job_id: int) -> Path:
    return runs_root / f"job-{job_id}"
