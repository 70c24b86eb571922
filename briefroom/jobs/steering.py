"""Reading and steering the queue: `briefroom jobs list|show|cancel|answer`, each job with
its run's status, and whether the queue and run.json tell the same story (`agrees`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from briefroom.errors import ConfigError
from briefroom.job_review import WAITING, answer_job
from briefroom.jobs.app import queue
from briefroom.jobs.base import OUTCOMES_TABLE, QUEUE, run_dir_of

# procrastinate's `aborted` is a running job that was cancelled: to the user, cancelled.
_SHOWN_STATUS = {"aborted": "cancelled", "aborting": "cancelled"}
# What run.json may say while the job has each status (None: no run.json yet). A job
# back in the queue was interrupted, or its worker was killed before it could say so.
# A waiting job's run is paused at its question; answered, it is todo with its run still paused.
_RUN_STATUS_OF: dict[str, set[str | None]] = {
    "todo": {None, "interrupted", "running", "paused"}, "doing": {None, "running", "interrupted", "paused"},
    WAITING: {"paused"}, "succeeded": {"done"}, "failed": {None, "failed"}, "cancelled": {None, "cancelled"}}


@dataclass(frozen=True)
class JobRow:
    id: int
    status: str  # todo | doing | waiting (for `jobs answer`) | succeeded | failed | cancelled
    question: str
    attempts: int
    run_dir: str | None  # None until a worker made it
    run_status: str | None  # run.json's status, None without one
    reason: str | None  # why it failed, was cancelled or interrupted, or what it waits for
    waiting_for: dict[str, Any] | None = None  # the question a waiting job's run asks (review.py's request)


def agrees(job_status: str, run_status: str | None) -> bool:
    """The queue and run.json tell the same story about a job."""
    return run_status in _RUN_STATUS_OF.get(job_status, set())


def list_jobs(database_url: str, status: str | None = None, job_id: int | None = None) -> list[JobRow]:
    with queue(database_url) as app:
        return _rows(app, status, job_id)


def _rows(app: Any, status: str | None = None, job_id: int | None = None) -> list[JobRow]:
    asked = "todo" if status == WAITING else status  # procrastinate's status of a waiting job
    wanted = [asked, *[raw for raw, shown in _SHOWN_STATUS.items() if shown == asked]] if asked else [None]
    found = [j for s in wanted for j in app.job_manager.list_jobs(queue=QUEUE, status=s, id=job_id)]
    outcomes = _outcomes(app, [int(j.id) for j in found])
    rows = [_row(j, outcomes.get(int(j.id), {})) for j in sorted(found, key=lambda j: int(j.id))]
    return [r for r in rows if r.status == status] if status in (WAITING, "todo") else rows


def _outcomes(app: Any, ids: list[int]) -> dict[int, dict[str, Any]]:
    if not ids:
        return {}
    rows = app.connector.execute_query_all(f"SELECT job_id, run_status, reason, request, answer FROM {OUTCOMES_TABLE} "
                                           "WHERE job_id = ANY(%(ids)s)", ids=ids)
    return {int(r["job_id"]): r for r in rows}


def _row(job: Any, outcome: dict[str, Any]) -> JobRow:
    from briefroom import runs

    run_dir = run_dir_of(Path(job.task_kwargs.get("runs_root", ".")), int(job.id))
    record = None
    with contextlib.suppress(ConfigError):
        record = runs.load(run_dir) if (run_dir / runs.RECORD_FILE).is_file() else None
    status = str(getattr(job.status, "value", job.status))
    # todo, not yet answered, its run paused at the question the outcome row keeps: waiting
    waiting = status == "todo" and outcome.get("run_status") == WAITING and outcome.get("answer") is None
    reason = outcome.get("reason")
    return JobRow(id=int(job.id), status=WAITING if waiting else _SHOWN_STATUS.get(status, status),
                  question=str(job.task_kwargs.get("question", "")), attempts=int(job.attempts),
                  run_dir=str(run_dir) if run_dir.is_dir() else None,
                  run_status=record.status if record else None,
                  reason=reason or (record.error if record else None),
                  waiting_for=outcome.get("request") if waiting else None)


def show_job(database_url: str, job_id: int) -> JobRow:
    found = list_jobs(database_url, job_id=job_id)
    if not found:
        raise ConfigError(f"no job {job_id} in the queue")
    return found[0]


def cancel_job(database_url: str, job_id: int) -> bool:
    """A job not yet running is cancelled; a running one is asked to stop at its next
    step (it ends `cancelled`, its run.json too, and keeps its checkpoint)."""
    from briefroom import runs

    with queue(database_url) as app:
        found = _rows(app, job_id=job_id)
        if not found:
            raise ConfigError(f"no job {job_id} in the queue")
        cancelled = bool(app.job_manager.cancel_job_by_id(job_id, abort=True))
        row = _rows(app, job_id=job_id)[0]
        # A job paused at its question has no worker to write run.json: this does, once the
        # queue says it is cancelled (a todo job cancels at once; no worker can take it now).
        if cancelled and row.status == "cancelled" and row.run_status == "paused" and row.run_dir:
            run_dir = Path(row.run_dir)
            runs.update(run_dir, runs.load(run_dir), status="cancelled", resumable=True,
                        error="cancelled while waiting for its user (briefroom jobs cancel)")
        return cancelled


def answer(database_url: str, job_id: int, answers: dict[str, Any]) -> Any:
    """`briefroom jobs answer`: the answer to the question a waiting job asks, checked and
    kept, and the job back in the queue (`job_review.answer_job`); returns the request."""
    with queue(database_url):  # the schema, the first time
        pass
    return answer_job(database_url, OUTCOMES_TABLE, job_id, answers)


def wait_until(predicate: Callable[[], bool], timeout: float, every: float = 0.5) -> bool:
    """For callers that poll the queue (tests, `jobs show --wait`): True once `predicate`
    holds, False after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return predicate()
