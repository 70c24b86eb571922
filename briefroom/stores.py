"""Which backend holds a run's checkpoints, corpus index and long-term memory: the
data directory (SQLite, chromadb) by default, PostgreSQL with `--database-url`. The
run and its commands ask here and get a port (a checkpoint saver, `CorpusIndex`,
`MemoryBackend`). The run, the job worker, the served graph and the `memory` commands
open their stores here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from briefroom.config import Settings
from briefroom.corpus.chroma import ChromaCorpusIndex
from briefroom.corpus.embeddings import Embedder, make_embedder
from briefroom.corpus.index import CorpusIndex
from briefroom.database import first_line, is_postgres_url, public_url
from briefroom.errors import BriefroomError, ConfigError
from briefroom.graph.checkpoint import open_checkpointer
from briefroom.memory.store import MemoryStore
from briefroom.memory.zones import MemoryBackend
from briefroom.web.index import WebIndex


def open_checkpoints(where: str | Path) -> Any:
    """SQLite in the run directory, or PostgreSQL for a `postgresql://` URL: a
    `BaseCheckpointSaver` whose `conn` the caller closes when the run ends."""
    if not is_postgres_url(where):
        return open_checkpointer(Path(where))
    try:
        from briefroom.postgres.checkpoints import open_postgres
    except ImportError:
        raise ConfigError("--database-url needs the server extra: pip install 'briefroom[server]'") from None
    url = str(where)
    try:
        return open_postgres(url)
    except Exception as exc:  # refused, wrong password, down
        raise ConfigError(f"PostgreSQL at {public_url(url)}: {first_line(exc, url)}") from None


def open_index(settings: Settings) -> CorpusIndex:
    """The corpus index in the data directory, or in PostgreSQL with --database-url
    (pgvector; shared by every process that reaches the database, each chunk embedded
    once even when several index at the same time)."""
    if settings.database_url:
        from briefroom.postgres.corpus import PgCorpusIndex

        return PgCorpusIndex(settings.database_url, make_embedder(settings.embedder))
    if settings.web or settings.mcp_config:  # the corpus index, which also takes fetched pages and MCP results
        return WebIndex(settings.data_dir, make_embedder(settings.embedder))
    return ChromaCorpusIndex(settings.data_dir, make_embedder(settings.embedder))


def open_memory(settings: Settings, embedder: Embedder) -> MemoryBackend:
    """Long-term memory in the data directory, or in PostgreSQL with --database-url
    (pgvector; shared by every worker that reaches the database)."""
    if settings.database_url:
        try:
            from briefroom.postgres.memory import PgMemoryStore
        except ImportError:
            raise ConfigError("--database-url needs the server extra: pip install 'briefroom[server]'") from None
        url = settings.database_url
        try:
            return PgMemoryStore(url, embedder)
        except BriefroomError:
            raise
        except Exception as exc:  # refused, wrong password, down
            raise ConfigError(f"PostgreSQL at {public_url(url)}: {first_line(exc, url)}") from None
    return MemoryStore(settings.data_dir, embedder)
