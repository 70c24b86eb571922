"""Following a run as it goes: new lines of its run.jsonl, as the page shows them.

Every run writes its typed events to run.jsonl (`runlog.py`), flushed per line, whoever
runs it (this ui's worker thread, the CLI, a job worker): tailing the file follows all of
them alike. A resumed run rewrites its log to the lines its checkpoint had written
(`RunLog.reopen`, atomically: a new file) and appends from there; the tail notices the
new file and reads it again from the start, passing on only lines it has not sent.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from briefroom.events import (
    BudgetStop,
    BusMessage,
    Clarification,
    Compaction,
    ErrorEvent,
    Event,
    Finishing,
    LlmCall,
    PlanReview,
    ReportAccepted,
    RoundEnd,
    RunEnd,
    RunPaused,
    RunStart,
    ToolResult,
    parse_event,
)

TEXT_CHARS = 600  # a message's text on the page; the run page has all of it
DRAFT_CHARS = 40_000  # the Writer's draft is shown whole as it is written, before the run ends


def compact(event: Event) -> dict[str, Any]:
    """What the live view shows of one event: who, what, and what it cost."""
    base: dict[str, Any] = {"seq": event.seq, "event": event.event, "elapsed_s": event.elapsed_s}
    if isinstance(event, BusMessage):
        header = event.message.header
        return {**base, "kind": "message", "round": event.round, "from": header.sender, "to": event.recipients,
                "type": header.msg_type.value, "id": header.msg_id,
                "text": event.message.body.content[:DRAFT_CHARS if header.msg_type.value == "report" else TEXT_CHARS]}
    if isinstance(event, LlmCall):
        return {**base, "kind": "call", "agent": event.agent, "round": event.round, "purpose": event.purpose,
                "sections": event.sections, "prompt_tokens": event.prompt_tokens,
                "completion_tokens": event.completion_tokens, "budget": event.budget, "use_pct": event.use_pct}
    if isinstance(event, ToolResult):
        return {**base, "kind": "tool", "agent": event.agent, "round": event.round, "tool": event.tool,
                "ok": event.ok, "bytes": event.bytes}
    if isinstance(event, PlanReview):
        return {**base, "kind": "review", "accepted": event.accepted, "note": event.note,
                "after": [t.model_dump() for t in event.after]}
    if isinstance(event, Clarification):
        return {**base, "kind": "review", "questions": event.questions, "answers": event.answers}
    if isinstance(event, (BudgetStop, Compaction, Finishing)):
        detail = {k: v for k, v in event.record().items() if k not in ("event", "seq", "elapsed_s")}
        return {**base, "kind": "budget", "detail": json.dumps(detail, ensure_ascii=False)[:300]}
    if isinstance(event, RunEnd):
        return {**base, "kind": "end", "tokens_used": event.tokens_used, "budget": event.budget,
                "cited": event.cited, "rounds": event.rounds}
    if isinstance(event, RunPaused):
        return {**base, "kind": "paused", "round": event.round, "waiting_for": event.waiting_for}
    if isinstance(event, ErrorEvent):
        return {**base, "kind": "error", "message": event.message[:TEXT_CHARS]}
    if isinstance(event, (RunStart, RoundEnd, ReportAccepted)):
        return {**base, "kind": "step"}
    return {**base, "kind": "other"}


class LogTail:
    """The lines of one run.jsonl not yet passed on, each once (see the module docstring)."""

    def __init__(self, path: Path):
        self.path = path
        self._inode: int | None = None
        self._offset = 0
        self._partial = b""
        self._sent: set[bytes] = set()

    def read(self) -> list[dict[str, Any]]:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return []
        if stat.st_ino != self._inode or stat.st_size < self._offset:
            self._inode, self._offset, self._partial = stat.st_ino, 0, b""
        if stat.st_size == self._offset:
            return []
        with open(self.path, "rb") as fh:
            fh.seek(self._offset)
            chunk = fh.read()
        self._offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()  # a line still being written waits for its newline
        out = []
        for line in lines:
            digest = hashlib.blake2b(line, digest_size=16).digest()
            if not line.strip() or digest in self._sent:
                continue
            self._sent.add(digest)
            try:
                event = parse_event(json.loads(line))
            except (json.JSONDecodeError, ValidationError, TypeError, ValueError):
                continue  # not an event: `briefroom inspect` says which line; the live view skips it
            out.append(compact(event))
        return out
