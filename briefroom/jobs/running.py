"""Running one job in a worker: take its lease, run or resume its research run, and turn
how the run ended into what the queue records (and the outcomes table keeps)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from briefroom.config import Settings
from briefroom.database import first_line
from briefroom.job_review import JobWaiting, request_json, stored_answer, waiting_sql
from briefroom.jobs.base import HEARTBEAT_S, OUTCOMES_TABLE, RUN_LOCK_WAIT_S, JobInterruptedError, run_dir_of
from briefroom.jobs.lease import _LEASES, JobLease, LeaseHeldError


def _run_job(context: Any, question: str, corpus: list[str], runs_root: Path, settings: dict[str, Any],
             database_url: str, review: dict[str, bool] | None = None) -> str:
    """The task body (in a worker thread): take the lease, run or resume the run, and
    turn how it ended into what the queue records."""
    from procrastinate.exceptions import JobAborted

    from briefroom import runs

    job_id = int(context.job.id)
    lease = JobLease(database_url, job_id)
    try:
        if not lease.acquire():
            raise LeaseHeldError(f"job {job_id} is held by another live worker")
    except LeaseHeldError:
        raise
    except Exception as exc:  # the database is gone before the job began: back to the queue
        raise JobInterruptedError(f"job {job_id}: {first_line(exc, database_url)}") from exc
    _LEASES[job_id] = lease  # released once the queue has the job's status (_FencedJobManager)
    lease.keep(every=HEARTBEAT_S)
    try:
        report = _research(context, lease, question, corpus, runs_root, settings, database_url, review)
    except JobWaiting as exc:  # run.json says paused; the queue keeps it todo, far ahead (job_review.py)
        try:  # without its question stored, nobody could answer it: try again now instead
            lease.execute(waiting_sql(OUTCOMES_TABLE), (job_id, str(exc), request_json(exc.request)))
        except Exception as lost:
            raise JobInterruptedError(f"job {job_id}: {first_line(lost, database_url)}") from lost
        raise
    except BaseException as exc:
        status, reason, _ = runs.ending_of(exc)
        _record_outcome(lease, status, reason)
        if status == "cancelled":
            raise JobAborted(reason) from exc
        if status == "interrupted":
            raise JobInterruptedError(reason) from exc
        raise
    _record_outcome(lease, "done", None)
    return report


def _research(context: Any, lease: JobLease, question: str, corpus: list[str], runs_root: Path,
              settings: dict[str, Any], database_url: str, review: dict[str, bool] | None = None) -> str:
    from procrastinate.job_context import AbortReason

    from briefroom import runs
    from briefroom.review import ReviewOptions
    from briefroom.run import ResearchRequest, resume_research, run_research

    job_id = int(context.job.id)
    run_dir = run_dir_of(runs_root, job_id)

    def progress(*_: Any) -> None:  # every step of the run: where it stops when asked to
        if lease.lost.is_set():
            raise runs.RunInterrupted(f"job {job_id}: this worker lost its database connection, and with it the "
                                      "job's lease; the job goes on from its checkpoint")
        reason = context.abort_reason()
        if reason == AbortReason.USER_REQUEST:
            raise runs.RunCancelled(f"job {job_id} was cancelled (briefroom jobs cancel)")
        if reason == AbortReason.SHUTDOWN:
            raise runs.RunInterrupted(f"job {job_id}: its worker was stopped; the job is back in the queue")

    # The run keeps its checkpoints, memory and index in the queue's database, so any
    # worker can take it up after another died.
    if (run_dir / runs.RECORD_FILE).is_file():  # a retry after its worker died or stopped: go on
        _wait_for_run_lock(run_dir, RUN_LOCK_WAIT_S)
        with lease._lock:  # a run paused at a question goes on with the answer `jobs answer` kept
            answer = stored_answer(lease._conn, OUTCOMES_TABLE, job_id)
        result = resume_research(run_dir, {"database_url": database_url}, progress=progress, reviewer=answer)
    else:
        chosen = Settings.from_env(**settings, database_url=database_url)  # the job's choices, this worker's rest
        result = run_research(ResearchRequest(question=question, corpus=[Path(p) for p in corpus], out=run_dir,
                                              thread_id=run_dir.name, review=ReviewOptions(**(review or {}))),
                              chosen, progress=progress)
    if result.status == "paused" and result.waiting_for is not None:
        raise JobWaiting(result.waiting_for)
    return str(result.report)


def _wait_for_run_lock(run_dir: Path, timeout: float) -> None:
    """The lease says the job is ours; a process that lost it may still be finishing its
    step in the run directory (it stops at the step's end): wait for it."""
    import fcntl

    from briefroom import runs

    deadline = time.monotonic() + timeout
    with open(run_dir / "run.lock", "a") as fh:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fh, fcntl.LOCK_UN)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise runs.RunInterrupted(f"{run_dir} is still in use by the worker that lost it") from None
                time.sleep(0.2)


def _record_outcome(lease: JobLease, run_status: str, reason: str | None) -> None:
    """Best effort: with the database gone the run's own run.json still has it."""
    with contextlib.suppress(Exception):
        lease.execute(f"INSERT INTO {OUTCOMES_TABLE} (job_id, run_status, reason) VALUES (%s, %s, %s) "
                      "ON CONFLICT (job_id) DO UPDATE SET run_status = excluded.run_status, "
                      "reason = excluded.reason, request = NULL, answer = NULL, updated = now()",
                      (lease.job_id, run_status, reason))
