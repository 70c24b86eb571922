"""Many research jobs at once, on procrastinate (a maintained Postgres task queue).

`briefroom submit` puts a research job in the queue, after the checks `briefroom
research` makes (the question, the corpus, the model); `briefroom worker` runs N worker
processes on any machine that reaches the database and the runs folder; `briefroom jobs
list|show|cancel` reads and steers the queue. A job's run directory is `<runs>/job-<id>`
and the graph's thread id is its name, so the job id names the thread.

One job, one owner. The worker running a job holds its *lease*: a PostgreSQL advisory
lock on a connection of its own, which the server frees the moment that connection goes
(the process was killed, its machine lost, the database restarted) and never while the
process lives, paused or not. A job whose worker stopped sending heartbeats goes back
to the queue only if its lease is free (`job_workers.py`, `_requeue_if_free`), so a worker paused past
the stall timeout keeps its job; and only the lease holder writes the job's final
status (`_FencedJobManager`), so a worker that lost its lease cannot overwrite the
status of the worker that took the job over. The worker that takes a job up resumes
the run from its last checkpoint (`resume_research`).

Every way a job ends is written to run.json before the queue hears of it, and the two
agree (`agrees`): done/succeeded, failed/failed (with the reason, kept for `jobs show`
even when the run never started), cancelled/cancelled, interrupted/todo (re-queued: the
worker was stopped, or the database went away under it). A worker outlives a database
restart: it says so in one line, waits for the database, and starts again.

A job submitted with `--review-plan` or `--clarify` pauses at its question *waiting*
for `briefroom jobs answer` (waiting/paused), then resumes on any worker
(`job_review.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from briefroom.config import Settings
from briefroom.database import first_line, is_postgres_url
from briefroom.errors import ConfigError
from briefroom.job_review import (
    WAITING,
    JobWaiting,
    answer_job,
    columns_ddl,
    request_json,
    retry_strategy,
    stored_answer,
    waiting_sql,
)

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
# Advisory lock keys are one bigint for the whole server: briefroom's leases live in
# their own range so they cannot collide with another application's locks.
_LEASE_SPACE = 0x6272_6966 << 32
OUTCOMES_TABLE = "briefroom_job_outcomes"

log = logging.getLogger("briefroom.jobs")


class JobInterruptedError(Exception):
    """The run stopped through no fault of its own (worker stopping, database gone):
    the job goes back to the queue and resumes from its checkpoint."""


class LeaseHeldError(Exception):
    """Another live process holds this job's lease: this attempt does not touch it."""


def _lease_key(job_id: int) -> int:
    return _LEASE_SPACE + job_id


def _app(database_url: str, *, sync: bool) -> Any:
    """A procrastinate App on `database_url` with briefroom's research task registered."""
    if not is_postgres_url(database_url):  # the URL may hold a password: not repeated
        raise ConfigError("the job queue needs a PostgreSQL URL (postgresql://...)")
    try:
        import procrastinate
    except ImportError:
        raise ConfigError("the job queue needs the server extra: pip install 'briefroom[server]'") from None
    connector = (procrastinate.SyncPsycopgConnector(conninfo=database_url) if sync
                 else procrastinate.PsycopgConnector(conninfo=database_url))
    app = procrastinate.App(connector=connector)
    if not sync:
        app.job_manager = _fenced_manager(connector, database_url)
    # An interrupted run goes back to the queue as often as it is interrupted; an error
    # does not (it would fail again); a run waiting for its user waits there.
    retry = retry_strategy(JobInterruptedError)

    @app.task(name=TASK, queue=QUEUE, pass_context=True, retry=retry)
    def research(context: Any, question: str, corpus: list[str], runs_root: str, settings: dict[str, Any],
                 review: dict[str, bool] | None = None) -> str:
        return _run_job(context, question, corpus, Path(runs_root), settings, database_url, review)

    return app


@contextlib.contextmanager
def queue(database_url: str) -> Iterator[Any]:
    """The queue for short synchronous work (submit, list, cancel); creates its schema
    the first time."""
    app = _app(database_url, sync=True)
    with app.open():
        _ensure_schema(app)
        yield app


def _ensure_schema(app: Any) -> None:
    row = app.connector.execute_query_one("SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS present")
    if not row["present"]:
        app.schema_manager.apply_schema()
    app.connector.execute_query(_OUTCOMES_DDL)
    app.connector.execute_query(columns_ddl(OUTCOMES_TABLE))


# Why each job ended, written by its worker: `jobs show` gives the reason even for a
# job that failed before it had a run directory.
_OUTCOMES_DDL = f"""CREATE TABLE IF NOT EXISTS {OUTCOMES_TABLE} (
    job_id bigint PRIMARY KEY, run_status text NOT NULL, reason text, updated timestamptz NOT NULL DEFAULT now())"""


# --- submitting ----------------------------------------------------------------------

def check_job(question: str, corpus: Sequence[Path], chosen: dict[str, Any]) -> str:
    """What `briefroom research` would refuse, refused before the job is queued, with the
    same checks: the question (returned as a run uses it), the corpus, the settings and
    the models (a model that needs an endpoint none is set for, a missing GGUF file)."""
    from briefroom.agents.registry import discover
    from briefroom.graph.summary import SUMMARIZER
    from briefroom.llm import embedded_model_file, needs_embedded_server
    from briefroom.run import clean_question

    cleaned = clean_question(question)
    if not corpus:
        raise ConfigError("no corpus: pass --corpus DIR")
    for folder in corpus:
        if not Path(folder).is_dir():
            raise ConfigError(f"corpus folder not found: {folder}")
    unknown = set(chosen) - set(Settings.model_fields) | set(chosen) & {"api_key", "database_url"}
    if unknown:
        raise ConfigError(f"a job cannot carry {', '.join(sorted(unknown))}: workers take it from their environment")
    settings = Settings.from_env(**chosen)  # this machine's environment, as `research` reads it
    roles = [r.name for r in discover([])] + [SUMMARIZER.name]
    if needs_embedded_server(settings, roles):  # raises for a model with no endpoint
        embedded_model_file(settings, roles)
    return cleaned


def submit(database_url: str, question: str, corpus: Sequence[Path], runs_root: Path,
           choices: dict[str, Any] | None = None, review: dict[str, bool] | None = None) -> int:
    """Queue one research job; returns its id (its run directory is `runs_root/job-<id>`).
    `choices`: the settings the submitter chose (model, rounds, ...); everything else,
    keys and endpoints included, comes from the worker's own environment. `review`:
    {"plan": ..., "clarify": ...}, what the run asks its user (`job_review.py`)."""
    chosen = {k: v for k, v in (choices or {}).items() if v is not None}
    cleaned = check_job(question, corpus, chosen)
    with queue(database_url) as app:
        job_id = app.tasks[TASK].defer(question=cleaned, corpus=[str(Path(p).resolve()) for p in corpus],
                                       runs_root=str(runs_root.resolve()),
                                       settings={k: str(v) if isinstance(v, Path) else v for k, v in chosen.items()},
                                       review={k: bool(v) for k, v in (review or {}).items() if k in ("plan", "clarify")})
    return int(job_id)


def run_dir_of(runs_root: Path, job_id: int) -> Path:
    return runs_root / f"job-{job_id}"


# --- the lease -----------------------------------------------------------------------

class JobLease:
    """The job's lease: an advisory lock held on a connection of its own. A thread pings
    it every `every` seconds; once the connection is gone the lock may be someone
    else's, and `lost` is set (the run stops at its next step)."""

    def __init__(self, database_url: str, job_id: int):
        self.job_id = job_id
        self._url = database_url
        self._conn: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.lost = threading.Event()

    def acquire(self) -> bool:
        """True if this process now holds the lease; False if a live process does."""
        import psycopg

        self._conn = psycopg.connect(self._url, autocommit=True, connect_timeout=10)
        row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (_lease_key(self.job_id),)).fetchone()
        if not (row and row[0]):
            self.release()
            return False
        return True

    def keep(self, every: float) -> None:
        def watch() -> None:
            while not self._stop.wait(every):
                if not self.alive():
                    self.lost.set()
                    return
        threading.Thread(target=watch, name=f"lease-{self.job_id}", daemon=True).start()

    def alive(self) -> bool:
        """Held right now: its connection answers (the server keeps the lock as long)."""
        with self._lock:
            if self._conn is None or self.lost.is_set():
                return False
            try:
                self._conn.execute("SELECT 1")
                return True
            except Exception:
                return False

    def execute(self, query: str, params: tuple[Any, ...]) -> None:
        with self._lock:
            self._conn.execute(query, params)

    def release(self) -> None:
        """Closing the connection frees the lock."""
        self._stop.set()
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None


_LEASES: dict[int, JobLease] = {}  # the jobs this process holds, until their status is written


def _claim_for_write(database_url: str, job: Any) -> bool:
    """True if this process may write `job`'s status: it holds the lease still, or can
    take it now and the job is still the one it fetched (`doing`, no other worker's)."""
    held = _LEASES.get(int(job.id))
    if held is not None and held.alive():
        return True
    if held is not None:
        held.release()
    lease = JobLease(database_url, int(job.id))
    if not lease.acquire():
        return False
    with lease._lock:
        row = lease._conn.execute("SELECT status, worker_id FROM procrastinate_jobs WHERE id = %s",
                                  (int(job.id),)).fetchone()
    if not row or row[0] != "doing" or row[1] not in (None, job.worker_id):
        lease.release()
        return False
    _LEASES[int(job.id)] = lease
    return True


def _release(job_id: int) -> None:
    lease = _LEASES.pop(job_id, None)
    if lease is not None:
        lease.release()


def _fenced_manager(connector: Any, database_url: str) -> Any:
    """procrastinate's JobManager, writing a job's final status only for the lease holder."""
    from procrastinate.manager import JobManager

    class FencedJobManager(JobManager):
        on_write_failed: Callable[[], None] = staticmethod(lambda: None)

        async def _fenced(self, job: Any, write: Callable[[], Any]) -> None:
            try:
                if await asyncio.to_thread(_claim_for_write, database_url, job):
                    await write()
            except Exception as exc:
                # The database is gone: this worker starts again once it is back, and the
                # job, left `doing` with a free lease, goes back to the queue then.
                log.warning("job %s: its status could not be written (%s)", job.id, first_line(exc, database_url))
                self.on_write_failed()
            finally:
                await asyncio.to_thread(_release, int(job.id))

        async def finish_job(self, job: Any, status: Any, delete_job: bool) -> None:
            await self._fenced(job, lambda: super(FencedJobManager, self).finish_job(job, status, delete_job))

        async def retry_job(self, job: Any, retry_at: Any = None, priority: Any = None, queue: Any = None,
                            lock: Any = None) -> None:
            await self._fenced(job, lambda: super(FencedJobManager, self).retry_job(
                job, retry_at=retry_at, priority=priority, queue=queue, lock=lock))

    return FencedJobManager(connector=connector)


# --- running one job -----------------------------------------------------------------

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


# --- reading and steering the queue --------------------------------------------------

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
