"""One job, one owner: the lease a worker holds on its job (a PostgreSQL advisory lock
on a connection of its own), and procrastinate's job manager fenced by it, so only the
lease holder writes a job's final status."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from briefroom.database import first_line

# Advisory lock keys are one bigint for the whole server: briefroom's leases live in
# their own range so they cannot collide with another application's locks.
_LEASE_SPACE = 0x6272_6966 << 32

log = logging.getLogger("briefroom.jobs")


class LeaseHeldError(Exception):
    """Another live process holds this job's lease: this attempt does not touch it."""


def _lease_key(job_id: int) -> int:
    return _LEASE_SPACE + job_id


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
