"""The run's LangGraph checkpointer: SQLite in the run directory, restricted types.

Checkpoints are msgpack; LangGraph's default deserializer will rebuild any importable
class it is told to. We pass an explicit allow-list of our state value types, so a
tampered checkpoint cannot make `resume` instantiate anything else.

Checkpoints also pass through redaction: text is redacted where it enters the state
(documents at load, tool results in the envelope), and the serializer checks every
blob it writes once more, redacting the value before it reaches the disk if a secret
got through some other way.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from briefroom import faults
from briefroom.files import store_file
from briefroom.protocol.messages import AgentMessage, ArchivePolicy, Body, Header, Metadata, MsgType, Priority
from briefroom.protocol.payloads import (
    Answer,
    ArtifactRef,
    Conclusion,
    Critique,
    Instruction,
    Question,
    registered_payloads,
)
from briefroom.protocol.redaction import holds_secret, redact_deep
from briefroom.records import (
    Charter,
    Claim,
    DraftSection,
    Fact,
    Passage,
    Report,
    ReportDraft,
    RoundRecord,
    RoundSummary,
    SourceRecord,
    SummaryPoint,
    Worktable,
)

# MsgType is a string now; it stays listed so a checkpoint written when it was an enum
# still reads back.
STATE_TYPES = (Charter, Worktable, Fact, Passage, SourceRecord, Report, AgentMessage, Header, Body, Metadata,
               MsgType, Priority, ArchivePolicy, RoundRecord, RoundSummary, SummaryPoint,
               Instruction, ArtifactRef, Conclusion, Critique, Question, Answer, ReportDraft,
               DraftSection, Claim)


class RedactingSerializer:
    """LangGraph's serializer protocol (dumps_typed/loads_typed) with a redaction check."""

    def __init__(self, inner: JsonPlusSerializer):
        self.inner = inner

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = self.inner.dumps_typed(obj)
        if holds_secret(data):  # one scan of the bytes; the walk runs only on a hit
            kind, data = self.inner.dumps_typed(redact_deep(obj))
        return kind, data

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return self.inner.loads_typed(data)


def allowed_types() -> list[type]:
    """What a checkpoint may rebuild: the state's own types, and the payload classes roles
    registered (their own message types are state values too)."""
    return [*STATE_TYPES, *(cls for cls in registered_payloads() if cls not in STATE_TYPES)]


def serializer() -> RedactingSerializer:
    return RedactingSerializer(JsonPlusSerializer(allowed_msgpack_modules=allowed_types()))


class RunSaver(SqliteSaver):
    """The SQLite saver with the kill test's crash point after each checkpoint write."""

    def put(self, config, checkpoint, metadata, new_versions):  # type: ignore[no-untyped-def]
        saved = super().put(config, checkpoint, metadata, new_versions)
        faults.reached("checkpoint")
        return saved


def open_checkpointer(path: Path) -> SqliteSaver:
    """A SqliteSaver on `path`; the caller closes `saver.conn` when the run ends.
    synchronous=FULL: a checkpoint reported written survives a crash of the machine,
    not only of the process (the run is invoked with durability="sync")."""
    with store_file(path, "the run's checkpoints"):
        conn = sqlite3.connect(str(path), check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
    return RunSaver(conn, serde=serializer())
