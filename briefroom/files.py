"""Files: written so that a crash leaves the old content or the new, never half; stores
opened so that a damaged one is named."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from briefroom.errors import ConfigError


def write_atomic(path: Path, text: str) -> None:
    """Write to a temporary file beside `path`, then rename it over `path` (atomic on
    POSIX): the run record, report files, artifacts and a resumed run's log rely on it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


@contextlib.contextmanager
def store_file(path: Path, what: str) -> Iterator[None]:
    """Opening a store: a file that is not what it should be (random bytes, a truncated
    copy) is named in a one-line error with what to do, not a bare 'file is not a database'."""
    try:
        yield
    except (sqlite3.DatabaseError, ValueError, RuntimeError) as exc:
        raise ConfigError(f"{path} ({what}) cannot be read: {str(exc).splitlines()[0][:120] if str(exc) else exc!r}; "
                          "move it aside to start that store afresh (what it held is lost) or restore a backup"
                          ) from exc
