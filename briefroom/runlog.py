"""run.jsonl: one JSON object per line, each with an `event` field.

The run log is the audit trail: every model call with the exact messages sent and the
tokens per prompt section, every bus message, tool call and result, round ends and
errors. Writes are line-buffered and flushed, so a crash loses at most one line.

Every line is one of the event models of `briefroom/events.py`, logged with
`RunLog.write(model)`; there is no string-keyed write (tests/unit/test_typed_log_writes.py
keeps it so). The line is checked against its kind's model again before it is written
(after redaction), so a misspelt field or an unknown kind fails at the call, not in a
reader.

A resumed run reopens its log at the line count its last checkpoint recorded
(`RunLog.reopen`): what an interrupted step had logged moves to
`run.interrupted.jsonl` (kept for the audit, not lost), and the step logs again as it
runs again, so the main log has no event twice.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from briefroom.errors import ConfigError
from briefroom.events import (
    BadLine,
    ErrorEvent,
    Event,
    Interrupted,
    LlmCall,
    ResumedAfter,
    RunPaused,
    parse_event,
    read_events,
    validate_record,
)
from briefroom.files import write_atomic
from briefroom.protocol.redaction import redact_data

INTERRUPTED_FILE = "run.interrupted.jsonl"


class RunLog:
    def __init__(self, path: Path | None, on_event: Callable[[Event], None] | None = None,
                 *, seq: int = 0, elapsed: float = 0.0):
        self.path = path
        self._fh = open(path, "a", encoding="utf-8") if path else None
        self._start = time.monotonic() - elapsed  # a resumed run's clock goes on where it stopped
        self._seq = seq
        self._lock = threading.Lock()
        self.on_event = on_event
        self.events: list[Event] = []  # kept in memory for summaries and tests

    @classmethod
    def reopen(cls, path: Path, keep: int, on_event: Callable[[Event], None] | None = None
               ) -> tuple["RunLog", "MovedAside"]:
        """The log of a run continuing from a checkpoint that had written `keep` lines;
        returns it and what was moved aside: the lines after those, and how the attempt
        that wrote them ended."""
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
        stop: ResumedAfter | None = None
        for line in reversed(extra):
            try:
                event = parse_event(json.loads(line))
            except (json.JSONDecodeError, ValueError, TypeError):  # the line a kill cut short, or garbage
                continue
            if isinstance(event, ErrorEvent):
                stop = ResumedAfter(event=event.event, kind=event.kind, message=event.message)
            elif isinstance(event, (Interrupted, RunPaused)):
                stop = ResumedAfter(event=event.event)
            if stop is not None:
                break
        return log, MovedAside(lines=len(extra), stop=stop)

    @property
    def seq(self) -> int:
        """How many events this run has logged (the line count of run.jsonl)."""
        return self._seq

    def write(self, event: Event) -> Event:
        """Log one event (its `seq` and `elapsed_s` are this log's, whatever the model
        says); returns the event as written."""
        record = event.record()
        del record["seq"], record["elapsed_s"]
        return self._append(record)

    def _append(self, fields: dict[str, Any]) -> Event:
        # Instances of a fan-out role log from several threads at once: one line at a time.
        with self._lock:
            return self._append_locked(fields)

    def _append_locked(self, fields: dict[str, Any]) -> Event:
        seq = self._seq + 1
        record = {"event": fields["event"], "seq": seq, "elapsed_s": round(time.monotonic() - self._start, 3),
                  **{k: v for k, v in fields.items() if k != "event"}}
        redacted = redact_data(json.loads(json.dumps(record, ensure_ascii=False)))
        typed = validate_record(redacted)  # raises before anything is written or counted
        self._seq = seq
        self.events.append(typed)
        if self._fh:
            self._fh.write(json.dumps(redacted, ensure_ascii=False) + "\n")
            self._fh.flush()
        if self.on_event:
            self.on_event(typed)
        return typed

    def close(self) -> None:
        if self._fh:
            self._fh.close()
            self._fh = None


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False


@dataclass(frozen=True)
class MovedAside:
    """What `RunLog.reopen` set aside in run.interrupted.jsonl."""

    lines: int
    stop: ResumedAfter | None  # how that attempt ended; None: it was killed


# --- reading the log back: what inspect, `runs show` and eval count ----------------------
def load_events(run_dir: Path, on_bad_line: Callable[[BadLine], None] | None = None) -> list[Event]:
    """The run's events. A bad line goes to `on_bad_line` and the valid events are
    returned, or, without it, is a ConfigError naming it (`run.jsonl:N`).

    A last line a kill cut short mid-write is left out either way; with `on_bad_line`
    (what `briefroom inspect` passes, with or without --html) it is named there too. So
    inspect warns on stderr with its line number, still shows every event before it, and
    exits 1 as for any line that is not an event: a careful user wants the table and the
    page of what was written whole, and a script must not take them for the whole run
    (the lost line may be its last model call or its error). Readers that only count
    (`runs show`, eval) pass nothing and are not bothered by it."""
    path = run_dir / "run.jsonl"
    if not run_dir.is_dir():
        raise ConfigError(f"run directory not found: {run_dir}")
    if not path.is_file():
        raise ConfigError(f"no run.jsonl in {run_dir}")
    return read_events(path, on_bad_line=on_bad_line, on_torn_line=on_bad_line)


def calls_of(events: Sequence[Event]) -> list[LlmCall]:
    return [e for e in events if isinstance(e, LlmCall)]


@dataclass
class AgentTotals:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def totals_by_agent(calls: Sequence[LlmCall]) -> dict[str, AgentTotals]:
    totals: dict[str, AgentTotals] = defaultdict(AgentTotals)
    for c in calls:
        t = totals[c.agent]
        t.calls += 1
        t.prompt_tokens += c.prompt_tokens
        t.completion_tokens += c.completion_tokens
    return dict(totals)
