"""Writing a file so that a crash leaves the old content or the new, never half."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write to a temporary file beside `path`, then rename it over `path` (atomic on
    POSIX): the run record, report files, artifacts and a resumed run's log rely on it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
