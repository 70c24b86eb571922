"""The run's LangGraph checkpointer: SQLite in the run directory, restricted types.

Checkpoints are msgpack; LangGraph's default deserializer will rebuild any importable
class it is told to. We pass an explicit allow-list of our state value types, so a
tampered checkpoint cannot make `resume` instantiate anything else.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from briefroom.graph.state import (
    Charter,
    Fact,
    Passage,
    Report,
    RoundRecord,
    RoundSummary,
    SourceRecord,
    SummaryPoint,
    Worktable,
)
from briefroom.protocol.messages import (
    AgentMessage,
    ArchivePolicy,
    Body,
    Header,
    Metadata,
    MsgType,
    Priority,
)

STATE_TYPES = (Charter, Worktable, Fact, Passage, SourceRecord, Report, AgentMessage, Header, Body, Metadata,
               MsgType, Priority, ArchivePolicy, RoundRecord, RoundSummary, SummaryPoint)


def serializer() -> JsonPlusSerializer:
    return JsonPlusSerializer(allowed_msgpack_modules=list(STATE_TYPES))


def open_checkpointer(path: Path) -> SqliteSaver:
    """A SqliteSaver on `path`; the caller closes `saver.conn` when the run ends."""
    conn = sqlite3.connect(str(path), check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    return SqliteSaver(conn, serde=serializer())
