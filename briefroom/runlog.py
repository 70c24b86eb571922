"""run.jsonl: one JSON object per line, each with an `event` field.

The run log is the audit trail: every model call with the exact messages sent and the
tokens per prompt section, every bus message, tool call and result, round ends and
errors. Writes are line-buffered and flushed, so a crash loses at most one line.

A resumed run reopens its log at the line count its last checkpoint recorded
(`RunLog.reopen`): what an interrupted step had logged moves to
`run.interrupted.jsonl` (kept for the audit, not lost), and the step logs again as it
runs again, so the main log has no event twice.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel

from briefroom.files import write_atomic
from briefroom.protocol.redaction import redact_data


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return str(value)


INTERRUPTED_FILE = "run.interrupted.jsonl"


class RunLog:
    def __init__(self, path: Path | None, on_event: Callable[[dict[str, Any]], None] | None = None,
                 *, seq: int = 0, elapsed: float = 0.0):
        self.path = path
        self._fh = open(path, "a", encoding="utf-8") if path else None
        self._start = time.monotonic() - elapsed  # a resumed run's clock goes on where it stopped
        self._seq = seq
        self.on_event = on_event
        self.events: list[dict[str, Any]] = []  # kept in memory for summaries and tests

    @classmethod
    def reopen(cls, path: Path, keep: int, on_event: Callable[[dict[str, Any]], None] | None = None
               ) -> tuple["RunLog", list[dict[str, Any]]]:
        """The log of a run continuing from a checkpoint that had written `keep` lines;
        returns it and the events after those, which were moved aside."""
        raw = path.read_bytes() if path.is_file() else b""
        lines = raw.decode("utf-8", errors="replace").splitlines(keepends=True)
        kept, extra = lines[:keep], lines[keep:]
        # A line a crash tore (no newline) or garbled goes aside with everything after it:
        # appending after it would glue the next event onto it and corrupt the log.
        for i, line in enumerate(kept):
            if not line.endswith("\n") or not _is_json_object(line):
                kept, extra = kept[:i], kept[i:] + extra
                break
        if extra:
            with open(path.with_name(INTERRUPTED_FILE), "a", encoding="utf-8") as fh:
                fh.writelines(line if line.endswith("\n") else line + "\n" for line in extra)
        write_atomic(path, "".join(kept))
        last: dict[str, Any] = {}
        for line in reversed(kept):
            try:
                last = json.loads(line)
                break
            except json.JSONDecodeError:
                continue
        log = cls(path, on_event, seq=int(last.get("seq", len(kept))), elapsed=float(last.get("elapsed_s", 0.0)))
        moved = []
        for line in extra:
            try:
                moved.append(json.loads(line))
            except json.JSONDecodeError:  # the line a kill cut short
                moved.append({"event": "partial_line"})
        return log, moved

    @property
    def seq(self) -> int:
        """How many events this run has logged (the line count of run.jsonl)."""
        return self._seq

    def event(self, event: str, **fields: Any) -> dict[str, Any]:
        self._seq += 1
        record = {"event": event, "seq": self._seq, "elapsed_s": round(time.monotonic() - self._start, 3), **fields}
        record = redact_data(json.loads(json.dumps(record, default=_default, ensure_ascii=False)))
        self.events.append(record)
        if self._fh:
            self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._fh.flush()
        if self.on_event:
            self.on_event(record)
        return record

    def close(self) -> None:
        if self._fh:
            self._fh.close()
            self._fh = None


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False
