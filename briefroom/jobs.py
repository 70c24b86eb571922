"""Many research jobs at once, on procrastinate (a maintained Postgres task queue).

`briefroom submit` puts a research job in the queue; `briefroom worker` runs N worker
processes on any machine that reaches the database and the runs folder; `briefroom jobs
list|show|cancel` reads and steers the queue. A job's run directory is
`<runs>/job-<id>` and the graph's thread id is its name, so the job id names the thread.

A worker that dies (SIGKILL, a lost machine) stops sending heartbeats; every worker
looks for jobs whose worker went silent and puts them back in the queue, and the worker
that takes one resumes the run from its last checkpoint (`resume_research`): the report
is that of an uninterrupted run, the run log is cut back to the checkpoint before the
step runs again (no event twice), and the memory gates write once per run key.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from briefroom.config import Settings
from briefroom.database import is_postgres_url
from briefroom.errors import ConfigError

QUEUE = "research"
TASK = "briefroom.research"
# Heartbeats every few seconds; a worker silent for STALLED_AFTER seconds is dead and
# its job goes back to the queue. Small enough that a killed job resumes soon.
HEARTBEAT_S = 2.0
STALLED_AFTER_S = 10.0
SWEEP_EVERY_S = 2.0


class JobAbortedError(Exception):
    """`briefroom jobs cancel` asked a running job to stop (checked at every step)."""


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

    @app.task(name=TASK, queue=QUEUE, pass_context=True)
    def research(context: Any, question: str, corpus: list[str], runs_root: str, settings: dict[str, Any]) -> str:
        return _run_job(context, question, corpus, Path(runs_root), settings, database_url)

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


def submit(database_url: str, question: str, corpus: Sequence[Path], runs_root: Path,
           choices: dict[str, Any] | None = None) -> int:
    """Queue one research job; returns its id (its run directory is `runs_root/job-<id>`).
    `choices`: the settings the submitter chose (model, rounds, ...); everything else,
    keys and endpoints included, comes from the worker's own environment."""
    for folder in corpus:
        if not Path(folder).is_dir():
            raise ConfigError(f"corpus folder not found: {folder}")
    chosen = {k: v for k, v in (choices or {}).items() if v is not None}
    unknown = set(chosen) - set(Settings.model_fields) | set(chosen) & {"api_key", "database_url"}
    if unknown:
        raise ConfigError(f"a job cannot carry {', '.join(sorted(unknown))}: workers take it from their environment")
    Settings.from_env({}, **chosen)  # a bad choice fails here, not on a worker
    with queue(database_url) as app:
        job_id = app.tasks[TASK].defer(question=question, corpus=[str(Path(p).resolve()) for p in corpus],
                                       runs_root=str(runs_root.resolve()),
                                       settings={k: str(v) if isinstance(v, Path) else v for k, v in chosen.items()})
    return int(job_id)


def run_dir_of(runs_root: Path, job_id: int) -> Path:
    return runs_root / f"job-{job_id}"


def _run_job(context: Any, question: str, corpus: list[str], runs_root: Path, settings: dict[str, Any],
             database_url: str) -> str:
    from briefroom import runs
    from briefroom.run import ResearchRequest, resume_research, run_research

    run_dir = run_dir_of(runs_root, int(context.job.id))

    def progress(*_: Any) -> None:  # every step of the run: a cancel request stops it here
        if context.should_abort():
            raise JobAbortedError(f"job {context.job.id} was cancelled")

    # The run keeps its checkpoints, memory and index in the queue's database, so any
    # worker can take it up after another died.
    if (run_dir / runs.RECORD_FILE).is_file():  # a retry after its worker died: go on
        result = resume_research(run_dir, {"database_url": database_url}, progress=progress)
    else:
        chosen = Settings.from_env(**settings, database_url=database_url)  # the job's choices, this worker's rest
        result = run_research(ResearchRequest(question=question, corpus=[Path(p) for p in corpus], out=run_dir,
                                              thread_id=run_dir.name), chosen, progress=progress)
    return str(result.report)


# --- workers -------------------------------------------------------------------------

def work(database_url: str, processes: int = 1, *, stalled_after: float = STALLED_AFTER_S,
         heartbeat: float = HEARTBEAT_S, wait: bool = True) -> None:
    """Run `processes` worker processes, one job at a time each, until interrupted
    (or, with `wait=False`, until the queue is empty)."""
    if processes == 1:
        _worker_process(database_url, stalled_after, heartbeat, wait)
        return
    ctx = multiprocessing.get_context("spawn")  # no inherited locks, threads or open stores
    children = [ctx.Process(target=_worker_process, args=(database_url, stalled_after, heartbeat, wait),
                            name=f"briefroom-worker-{n}") for n in range(processes)]
    for child in children:
        child.start()
    try:
        for child in children:
            child.join()
    except KeyboardInterrupt:
        for child in children:
            if child.pid:
                os.kill(child.pid, signal.SIGTERM)
        for child in children:
            child.join()


def _worker_process(database_url: str, stalled_after: float, heartbeat: float, wait: bool) -> None:
    asyncio.run(_work_async(database_url, stalled_after, heartbeat, wait))


async def _work_async(database_url: str, stalled_after: float, heartbeat: float, wait: bool) -> None:
    app = _app(database_url, sync=False)
    async with app.open_async():
        sweeper = asyncio.create_task(_sweep(app, stalled_after))
        try:
            await app.run_worker_async(queues=[QUEUE], concurrency=1, wait=wait, update_heartbeat_interval=heartbeat,
                                       stalled_worker_timeout=stalled_after, install_signal_handlers=True)
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper


async def _sweep(app: Any, stalled_after: float) -> None:
    """Put back in the queue every job whose worker stopped sending heartbeats."""
    while True:
        for job in await app.job_manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=stalled_after):
            await app.job_manager.retry_job(job)
        await asyncio.sleep(SWEEP_EVERY_S)


# --- reading and steering the queue --------------------------------------------------

@dataclass(frozen=True)
class JobRow:
    id: int
    status: str  # todo | doing | succeeded | failed | cancelled | aborting | aborted
    question: str
    attempts: int
    run_dir: str


def list_jobs(database_url: str, status: str | None = None, job_id: int | None = None) -> list[JobRow]:
    with queue(database_url) as app:
        return _rows(app, status, job_id)


def _rows(app: Any, status: str | None = None, job_id: int | None = None) -> list[JobRow]:
    jobs = app.job_manager.list_jobs(queue=QUEUE, status=status, id=job_id)
    return [JobRow(id=int(j.id), status=str(j.status), question=str(j.task_kwargs.get("question", "")),
                   attempts=int(j.attempts),
                   run_dir=str(run_dir_of(Path(j.task_kwargs.get("runs_root", ".")), int(j.id))))
            for j in jobs]


def show_job(database_url: str, job_id: int) -> JobRow:
    found = list_jobs(database_url, job_id=job_id)
    if not found:
        raise ConfigError(f"no job {job_id} in the queue")
    return found[0]


def cancel_job(database_url: str, job_id: int) -> bool:
    """A waiting job is cancelled; a running one is asked to stop at its next step."""
    with queue(database_url) as app:
        if not _rows(app, job_id=job_id):
            raise ConfigError(f"no job {job_id} in the queue")
        return bool(app.job_manager.cancel_job_by_id(job_id, abort=True))


def wait_until(predicate: Callable[[], bool], timeout: float, every: float = 0.5) -> bool:
    """For callers that poll the queue (tests, `jobs show --wait`): True once `predicate`
    holds, False after `timeout` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return predicate()
