"""run.jsonl: one JSON object per line, each with an `event` field.

The run log is the audit trail: every model call with the exact messages sent and the
tokens per prompt section, every bus message, tool call and result, round ends and
errors. Writes are line-buffered and flushed, so a crash loses at most one line.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel

from briefroom.protocol.redaction import redact_data


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return str(value)


class RunLog:
    def __init__(self, path: Path | None, on_event: Callable[[dict[str, Any]], None] | None = None):
        self.path = path
        self._fh = open(path, "a", encoding="utf-8") if path else None
        self._start = time.monotonic()
        self._seq = 0
        self.on_event = on_event
        self.events: list[dict[str, Any]] = []  # kept in memory for summaries and tests

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
