"""Who may work on a run directory and on a data directory: one process each.

A run directory's lock keeps a second `resume` out of a run still going; the data
directory's keeps a second process away from the embedded stores, which are not safe
across processes.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from briefroom.errors import ConfigError

DATA_DIR_LOCK = "briefroom.lock"


@contextlib.contextmanager
def exclusive_run_dir(run_dir: Path) -> Iterator[None]:
    """One process per run directory: a second `resume` of a run still going fails at
    once instead of writing into the same log and checkpoint."""
    import fcntl

    with open(run_dir / "run.lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"{run_dir} is in use by another briefroom process") from None
        yield


@dataclass
class _Hold:
    lock: threading.Lock = field(default_factory=threading.Lock)
    count: int = 0
    release: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)


_HOLDS: dict[Path, _Hold] = {}
_HOLDS_LOCK = threading.Lock()


@contextlib.contextmanager
def data_dir_in_use(data_dir: Path, *, wait: float | None = None) -> Iterator[None]:
    """One process at a time on a data directory: chromadb's embedded client and the
    SQLite memory are not safe across processes (measured: a fresh reader missed 26% of
    another process's rows, and once hung). A second process waits up to `wait` seconds
    (BRIEFROOM_DATA_DIR_WAIT, default 60) for the first to finish, then stops with an
    error naming the holder; the server backend has no such limit.

    Runs within one process share the hold (the LangGraph server runs served runs side
    by side): in-process, chromadb's client is one per folder, and SQLite's busy timeout
    orders the writers. The file lock goes when the last of them ends."""
    with _HOLDS_LOCK:
        hold = _HOLDS.setdefault(data_dir.resolve(), _Hold())
    with hold.lock:
        if hold.count == 0:
            hold.release.enter_context(_data_dir_lock(data_dir, wait))
        hold.count += 1
    try:
        yield
    finally:
        with hold.lock:
            hold.count -= 1
            if hold.count == 0:
                hold.release.close()


@contextlib.contextmanager
def _data_dir_lock(data_dir: Path, wait: float | None) -> Iterator[None]:
    import fcntl
    import time as clock

    wait = float(os.environ.get("BRIEFROOM_DATA_DIR_WAIT", 60)) if wait is None else wait
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / DATA_DIR_LOCK, "a+") as fh:
        deadline = clock.monotonic() + wait
        told = False
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip() or "another process"
                if clock.monotonic() >= deadline:
                    raise ConfigError(f"data directory {data_dir} is in use by {holder}; wait for it to finish or "
                                      "use another --data-dir (the embedded stores are one process at a time)"
                                      ) from None
                if not told:  # said once, on stderr, where progress goes
                    sys.stderr.write(f"waiting for {holder} to release the data directory {data_dir}\n")
                    told = True
                clock.sleep(0.2)
        fh.seek(0)
        fh.truncate()
        fh.write(f"briefroom pid {os.getpid()}")
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
