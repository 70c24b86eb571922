"""`briefroom worker`: worker processes that run the queue's research jobs (`jobs/`),
one job at a time each, outliving database restarts, and the stall sweep that gives a
job whose worker went silent back to the queue only if its lease is free."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import re
import signal
import sys
from typing import Any

from briefroom.database import connection_lost, first_line, is_postgres_url, public_url, scrub
from briefroom.errors import ConfigError
from briefroom.job_review import columns_ddl
from briefroom.jobs.app import _app
from briefroom.jobs.base import (
    _OUTCOMES_DDL,
    HEARTBEAT_S,
    OUTCOMES_TABLE,
    QUEUE,
    RECONNECT_EVERY_S,
    STALLED_AFTER_S,
    SWEEP_EVERY_S,
)
from briefroom.jobs.lease import _lease_key

# --- workers -------------------------------------------------------------------------

def work(database_url: str, processes: int = 1, *, stalled_after: float = STALLED_AFTER_S,
         heartbeat: float = HEARTBEAT_S, wait: bool = True) -> None:
    """Run `processes` worker processes, one job at a time each, until interrupted
    (or, with `wait=False`, until no job is waiting or running)."""
    _check_reachable(database_url)  # one clear line for a database that is not there
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


def _check_reachable(database_url: str) -> None:
    """The queue's database answers, or a ConfigError in one line (no pool retrying for
    30 s and logging every attempt)."""
    if not is_postgres_url(database_url):
        raise ConfigError("the job queue needs a PostgreSQL URL (postgresql://...)")
    try:
        import psycopg
    except ImportError:
        raise ConfigError("the job queue needs the server extra: pip install 'briefroom[server]'") from None
    try:
        psycopg.connect(database_url, connect_timeout=10).close()
    except Exception as exc:
        raise ConfigError(f"the job queue at {public_url(database_url)}: {first_line(exc, database_url)}") from None


class _OneLine(logging.Formatter):
    """Library log records as one line each, without tracebacks or the database password."""

    def __init__(self, database_url: str):
        super().__init__()
        self._url = database_url

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if _DATABASE_LOST.search(message):
            # procrastinate's own recovery (its listener, its pool) after a restart of the
            # database: the same news as `_say_database_went_away`, whichever part noticed first
            said = " ".join(message.replace("\\n", " ").split())[:200]
            return scrub(f"worker {os.getpid()}: the database went away ({said}); the worker goes on and "
                         "reconnects", self._url)
        lines = message.strip().splitlines() or [""]
        return scrub(f"worker {os.getpid()}: {record.levelname.lower()}: {lines[0][:300]}", self._url)


# What procrastinate and psycopg log when the database restarts or drops the connection.
_DATABASE_LOST = re.compile(r"ConnectorException|Database error|server closed the connection|terminating connection|"
                            r"connection (?:is )?(?:lost|closed|broken)", re.I)


def _quiet_logs(database_url: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine(database_url))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)  # we say it once, in _work_async


def _worker_process(database_url: str, stalled_after: float, heartbeat: float, wait: bool) -> None:
    _quiet_logs(database_url)
    asyncio.run(_work_async(database_url, stalled_after, heartbeat, wait))


async def _work_async(database_url: str, stalled_after: float, heartbeat: float, wait: bool) -> None:
    """Work until stopped (SIGTERM, Ctrl-C) or, with `wait=False`, until the queue is
    empty; a database that goes away is waited for, then the worker starts again."""
    stop = asyncio.Event()
    current: list[Any] = []  # the procrastinate worker of this connection, to stop it

    def on_stop() -> None:
        stop.set()
        for worker in current:
            worker.stop()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_stop)
    while not stop.is_set():
        try:
            if await _work_connected(database_url, stalled_after, heartbeat, wait, stop, current):
                return
            _say_database_went_away(None, database_url)
        except Exception as exc:
            if not connection_lost(exc) and not _is_pool_timeout(exc):
                raise
            _say_database_went_away(exc, database_url)
        finally:
            current.clear()
        await _wait_until_reachable(database_url, stop)


def _say_database_went_away(exc: BaseException | None, database_url: str) -> None:
    why = f" ({first_line(exc, database_url)})" if exc is not None else ""
    sys.stderr.write(f"worker {os.getpid()}: the database went away{why}; waiting for it to come back, then the "
                     "worker starts again and its job resumes from its checkpoint\n")
    sys.stderr.flush()


def _is_pool_timeout(exc: BaseException) -> bool:
    try:
        from psycopg_pool import PoolTimeout
    except ImportError:
        return False
    return isinstance(exc, PoolTimeout) or isinstance(exc.__cause__, PoolTimeout)


async def _wait_until_reachable(database_url: str, stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            await asyncio.to_thread(_check_reachable, database_url)
            return
        except ConfigError:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), RECONNECT_EVERY_S)


async def _work_connected(database_url: str, stalled_after: float, heartbeat: float, wait: bool,
                          stop: asyncio.Event, current: list[Any]) -> bool:
    """One connection's worth of work; True when the worker is done (stopped, or the
    queue is empty with `wait=False`), False when it lost the database."""
    from procrastinate.worker import Worker

    app = _app(database_url, sync=False)
    async with app.open_async():
        await app.connector.execute_query_async(_OUTCOMES_DDL)
        await app.connector.execute_query_async(columns_ddl(OUTCOMES_TABLE))
        while not stop.is_set():
            # shutdown_graceful_timeout=0: on SIGTERM the running job stops at its next step
            # and goes back to the queue, rather than holding the worker for the whole run.
            worker = Worker(app, queues=[QUEUE], concurrency=1, wait=wait, update_heartbeat_interval=heartbeat,
                            stalled_worker_timeout=stalled_after, install_signal_handlers=False,
                            shutdown_graceful_timeout=0, fetch_job_polling_interval=min(5.0, stalled_after))
            app.job_manager.on_write_failed = worker.stop
            current[:] = [worker]
            sweeper = asyncio.create_task(_sweep(app, database_url, stalled_after))
            try:
                await worker.run()
            finally:
                sweeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sweeper
            if stop.is_set():
                return True
            if wait:  # it stopped by itself: a side task (heartbeat, listener) lost the database
                return False
            if not await _work_left(app):
                return True
            # a job is still `doing`: its worker lives (wait for it) or stalled (the sweep re-queues it)
            await _sweep_once(app, database_url, stalled_after)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), SWEEP_EVERY_S)
    return True


async def _work_left(app: Any) -> bool:
    row = await app.connector.execute_query_one_async(
        "SELECT count(*) AS n FROM procrastinate_jobs WHERE queue_name = %(queue)s AND status IN ('todo', 'doing') "
        "AND (scheduled_at IS NULL OR scheduled_at <= now())", queue=QUEUE)  # a waiting job is no work
    return bool(row["n"])


async def _sweep(app: Any, database_url: str, stalled_after: float) -> None:
    while True:
        with contextlib.suppress(Exception):  # a sweep that fails is tried again; the worker notices the database
            await _sweep_once(app, database_url, stalled_after)
        await asyncio.sleep(SWEEP_EVERY_S)


async def _sweep_once(app: Any, database_url: str, stalled_after: float) -> None:
    """Put back in the queue every job whose worker went silent and whose lease is free."""
    stalled = await app.job_manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=stalled_after)
    for job in stalled:
        await asyncio.to_thread(_requeue_if_free, database_url, int(job.id))


def _requeue_if_free(database_url: str, job_id: int) -> bool:
    """In one transaction: the lease is free (so no live process holds the job), the job
    is still `doing`, back to `todo`. The transaction's own hold on the lease ends at
    commit, when the job is there for any worker."""
    import psycopg

    with psycopg.connect(database_url, connect_timeout=10) as conn, conn.transaction():
        free = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (_lease_key(job_id),)).fetchone()
        if not (free and free[0]):
            return False
        row = conn.execute("SELECT status FROM procrastinate_jobs WHERE id = %s FOR UPDATE", (job_id,)).fetchone()
        if not row or row[0] != "doing":
            return False
        conn.execute("SELECT procrastinate_retry_job_v2(%s, now(), NULL, NULL, NULL)", (job_id,))
        return True
