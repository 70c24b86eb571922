"""The run's checkpointer by URL: SQLite in the run directory, or PostgreSQL.

`open_checkpointer(url)` takes a `postgresql://` (or `postgres://`) URL, a
`sqlite:///path` URL, or a plain path. Both savers use briefroom's serializer
(`graph/checkpoint.py`: the allow-list of state types, and redaction of every blob),
and both reach the kill test's crash point after each checkpoint write.

PostgresSaver keeps values of primitive types (str, int, float, bool, None) inline in
the checkpoint's JSONB column and the metadata in another, without the serializer: the
saver here redacts those two as well, so a secret that reached a string field of the
state never reaches the database. Like the SQLite saver, the caller closes `saver.conn`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from briefroom import faults
from briefroom.database import is_postgres_url
from briefroom.graph.checkpoint import open_checkpointer as open_sqlite
from briefroom.graph.checkpoint import serializer
from briefroom.protocol.redaction import redact_deep, redact_text


def open_checkpointer(url: str | Path) -> BaseCheckpointSaver:
    """A saver for `url`; Postgres tables are created (or migrated) on first use."""
    if is_postgres_url(url):
        return open_postgres(str(url))
    text = str(url)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///"):]  # sqlite:///relative/path, sqlite:////absolute/path
    elif "://" in text:
        raise ValueError(f"checkpoints: unknown URL scheme in {text!r} (use postgresql://, sqlite:/// or a path)")
    return open_sqlite(Path(text))


def open_postgres(url: str) -> BaseCheckpointSaver:
    import psycopg
    from psycopg.rows import dict_row

    conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)  # what the saver expects
    try:
        saver = _saver_class()(conn, serde=serializer())
        saver.setup()
    except BaseException:
        conn.close()
        raise
    return saver


_CLASS: Any = None


def _saver_class() -> Any:
    """RunPostgresSaver, built on first use so the module imports without the extra."""
    global _CLASS
    if _CLASS is None:
        from langgraph.checkpoint.postgres import PostgresSaver

        class RunPostgresSaver(PostgresSaver):
            """PostgresSaver with redaction of the inline values and the crash point."""

            def put(self, config, checkpoint, metadata, new_versions):  # type: ignore[no-untyped-def]
                checkpoint = {**checkpoint, "channel_values": {
                    k: redact_text(v) if isinstance(v, str) else v for k, v in checkpoint["channel_values"].items()}}
                saved = super().put(config, checkpoint, redact_deep(metadata), new_versions)  # type: ignore[arg-type]
                faults.reached("checkpoint")
                return saved

        _CLASS = RunPostgresSaver
    return _CLASS
