"""`briefroom migrate`'s long-term memory part: an embedder directory's SQLite rows and
chromadb vectors, row by row into its PostgreSQL schema (see `server/migrate.py`)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from briefroom.corpus.embeddings import LOCAL_EMBEDDERS, Embedder, make_embedder
from briefroom.server.migrate_report import Counts, MemoryMove, MigrationReport, Skipped

CHROMA_PAGE = 1000
MIGRATED_TABLE = "migrated"  # (source directory, id) of every row a migrate moved: ids only, no text


class _Rollback(Exception):
    """Raised inside a dry run's transaction to undo it."""


# --- the embedder a memory directory belongs to ---------------------------------------
def _folded(name: str) -> str:
    """The directory name `MemoryStore` gives an embedder's memory."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def embedder_spec(directory: str) -> str | None:
    """The `--embedder` spec whose memory lives in `memory/<directory>`, or None."""
    for spec, cls in LOCAL_EMBEDDERS.items():
        if _folded(cls.name) == directory:
            return spec
    if directory.startswith("openai_") and _folded("openai:" + directory[len("openai_"):]) == directory:
        return "openai:" + directory[len("openai_"):]
    return None


class _Embedder:
    """The embedder a schema is named after: its name at once, the model only when a
    vector must really be computed (a missing vector; a new schema with no vector to
    copy, whose width the model says)."""

    def __init__(self, spec: str, dims: int | None):
        self.spec = spec
        self.name = LOCAL_EMBEDDERS[spec].name if spec in LOCAL_EMBEDDERS else spec
        self.dims = dims
        self._real: Embedder | None = None
        self.embedded = 0

    def real(self) -> Embedder:
        if self._real is None:
            self._real = make_embedder(self.spec)
        return self._real

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.embedded += len(texts)
        return self.real().embed(texts)


# --- long-term memory -------------------------------------------------------------------
_COLUMNS = {
    "memories": ["id", "user", "session", "task", "kind", "text", "provenance", "importance", "created"],
    "facts": ["id", "user", "session", "task", "entity", "attribute", "value", "unit", "text", "source_ids",
              "confirmed_by", "run_id", "valid_from", "superseded_by", "status"],
    "skills": ["id", "user", "session", "task", "name", "applies_when", "steps", "successes", "failures",
               "evaluated_by", "retired", "created", "updated"],
}
_JSON = {"provenance", "source_ids", "confirmed_by", "steps", "evaluated_by"}


def migrate_memory(directory: Path, url: str, report: MigrationReport, dry_run: bool) -> None:
    from briefroom.postgres.memory import PgMemoryStore, schema_name

    db_path = directory / "memory.sqlite"
    if not db_path.is_file():
        report.skipped.append(Skipped(what=str(directory), reason="no memory.sqlite"))
        return
    spec = embedder_spec(directory.name)
    if spec is None:
        report.skipped.append(Skipped(what=str(directory), reason="no known embedder has this directory name "
                                      "(local, use, minilm, openai:<model>)"))
        return
    data_dir = directory.parent.parent
    src = sqlite3.connect(db_path, check_same_thread=False)
    src.row_factory = sqlite3.Row
    try:
        if src.execute("PRAGMA user_version").fetchone()[0] < 2 and _has_rows(src):
            if dry_run:
                report.skipped.append(Skipped(what=str(directory), reason="written by an older briefroom: a real "
                                              "migrate brings it up to date first (re-indexes facts and skills)"))
                return
            src.close()
            from briefroom.memory.store import MemoryStore

            MemoryStore(data_dir, make_embedder(spec)).close()  # its own upgrade, once
            src = sqlite3.connect(db_path, check_same_thread=False)
            src.row_factory = sqlite3.Row
        vectors = _chroma_vectors(directory / "chroma")
        dims = len(next(iter(vectors.values()))[1]) if vectors else None
        embedder = _Embedder(spec, dims)
        move = MemoryMove(directory=str(directory), embedder=embedder.name, schema_name=schema_name(embedder.name))
        report.memory.append(move)
        if not dry_run or _schema_exists(url, move.schema_name):
            if not dry_run:
                # the schema and its tables, as the store makes them (dims known: nothing embedded)
                PgMemoryStore(url, embedder, dims=embedder.dims).close()
            _copy_memory(src, vectors, embedder, url, move, dry_run)
        else:  # nothing there yet: everything would be copied
            move.dims = dims
            for table in ("memories", "facts", "skills"):
                move.counts[table] = Counts(copied=src.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            move.counts["applied"] = Counts(copied=src.execute("SELECT count(*) FROM applied").fetchone()[0])
            move.namespaces = _namespaces(src)
    finally:
        src.close()


def _has_rows(src: sqlite3.Connection) -> bool:
    return bool(src.execute("SELECT EXISTS (SELECT 1 FROM facts) OR EXISTS (SELECT 1 FROM skills)").fetchone()[0])


def _namespaces(src: sqlite3.Connection) -> int:
    return src.execute('SELECT count(*) FROM (SELECT user, session, task FROM memories UNION SELECT user, session, '
                       'task FROM facts UNION SELECT user, session, task FROM skills)').fetchone()[0]


def _chroma_vectors(path: Path) -> dict[str, tuple[dict, list[float]]]:
    """id -> (metadata, vector) of every collection of the memory's chromadb."""
    if not path.is_dir():
        return {}
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.PersistentClient(path=str(path), settings=ChromaSettings(anonymized_telemetry=False))
    out: dict[str, tuple[dict, list[float]]] = {}
    for coll in client.list_collections():
        coll = client.get_collection(coll.name if hasattr(coll, "name") else str(coll), embedding_function=None)
        offset = 0
        while True:
            page = coll.get(include=["embeddings", "metadatas"], limit=CHROMA_PAGE, offset=offset)
            metas: list[Any] = list(page["metadatas"] or [])
            embedded: list[Any] = list(page["embeddings"] if page["embeddings"] is not None else [])
            for item_id, meta, vector in zip(page["ids"], metas, embedded):
                out[item_id] = (dict(meta or {}), [float(x) for x in vector])
            if len(page["ids"]) < CHROMA_PAGE:
                break
            offset += CHROMA_PAGE
    return out


def _schema_exists(url: str, schema: str) -> bool:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [f"{schema}.facts"]).fetchone()
        return bool(row and row[0])


@contextlib.contextmanager
def _pg(url: str, dry_run: bool) -> Iterator[Any]:
    """A connection inside one transaction, committed, or rolled back in a dry run."""
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg.rows import dict_row

    with psycopg.connect(url, row_factory=dict_row) as conn:
        register_vector(conn)
        try:
            with conn.transaction():
                yield conn
                if dry_run:
                    raise _Rollback
        except _Rollback:
            pass


def _copy_memory(src: sqlite3.Connection, vectors: dict[str, tuple[dict, list[float]]], embedder: _Embedder,
                 url: str, move: MemoryMove, dry_run: bool) -> None:
    """Every table of one memory directory in one transaction: the rows, the gates'
    bookkeeping, the fact term index and the vectors, then notes on what was not copied."""
    s = move.schema_name
    with _pg(url, dry_run) as conn:
        move.dims = conn.execute("SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) AND "
                                 "attname = 'embedding'", [f"{s}.vectors"]).fetchone()["atttypmod"]
        if vectors and embedder.dims != move.dims:
            move.notes.append(f"not copied: chromadb's vectors have {embedder.dims} dimensions, {s}.vectors "
                              f"{move.dims}")
            return
        users = sorted({r[0] for t in ("memories", "facts", "skills") for r in src.execute(f"SELECT user FROM {t}")})
        for user in users:  # the store's writers of these users wait until this transaction ends
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))", [f"{s}/{user}"])
        move.namespaces = _namespaces(src)
        same = _copy_rows(src, conn, move)
        _copy_applied(src, conn, move)
        _copy_fact_terms(src, conn, move, same["facts"])
        _copy_vectors(src, conn, move, vectors, embedder, same)
        _note_what_stayed(move, vectors)


def _copy_rows(src: sqlite3.Connection, conn: Any, move: MemoryMove) -> dict[str, set[str]]:
    """Memories, facts and skills, row by row; returns, per table, the ids now identical
    in the database, and records them as moved from this directory."""
    from psycopg.types.json import Jsonb

    s = move.schema_name
    # ids moved from this directory before: one forgotten since in the database stays forgotten
    conn.execute(f"CREATE TABLE IF NOT EXISTS {s}.{MIGRATED_TABLE} (source text NOT NULL, id text NOT NULL, "
                 "PRIMARY KEY (source, id))")
    source = str(Path(move.directory).resolve())
    moved_before = {r["id"] for r in conn.execute(f"SELECT id FROM {s}.{MIGRATED_TABLE} WHERE source = %s",
                                                  [source])}
    same: dict[str, set[str]] = {}  # table -> ids now identical in the database
    for table, columns in _COLUMNS.items():
        counts = move.counts[table] = Counts()
        same[table] = set()
        quoted = ", ".join(f'"{c}"' for c in columns)
        insert = (f"INSERT INTO {s}.{table} ({quoted}) VALUES ({', '.join(['%s'] * len(columns))}) "
                  "ON CONFLICT (id) DO NOTHING RETURNING id")
        for row in src.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY rowid"):
            values = {c: _value(c, row[c], table) for c in columns}
            if values["id"] not in moved_before and conn.execute(
                    insert, [Jsonb(v) if c in _JSON else v for c, v in values.items()]).fetchone():
                counts.copied += 1
                same[table].add(values["id"])
                continue
            there = conn.execute(f"SELECT {quoted} FROM {s}.{table} WHERE id = %s", [values["id"]]).fetchone()
            if there is None:
                counts.forgotten += 1
            elif there == values:
                counts.present += 1
                same[table].add(values["id"])
            else:
                counts.differing += 1
                move.differing_ids.append(values["id"])
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {s}.{MIGRATED_TABLE} VALUES (%s, %s) ON CONFLICT DO NOTHING",
                        [(source, item_id) for ids in same.values() for item_id in sorted(ids)])
    return same


def _copy_applied(src: sqlite3.Connection, conn: Any, move: MemoryMove) -> None:
    """The gates' bookkeeping: a resumed run finds its writes done."""
    from psycopg.types.json import Jsonb

    s = move.schema_name
    applied = move.counts["applied"] = Counts()
    for key, result in src.execute("SELECT key, result FROM applied ORDER BY key"):
        if conn.execute(f"INSERT INTO {s}.applied VALUES (%s, %s) ON CONFLICT (key) DO NOTHING RETURNING key",
                        [key, Jsonb(json.loads(result))]).fetchone():
            applied.copied += 1
        elif conn.execute(f"SELECT result FROM {s}.applied WHERE key = %s", [key]).fetchone()["result"] \
                == json.loads(result):
            applied.present += 1
        else:
            applied.differing += 1
            move.differing_ids.append(key)


def _copy_fact_terms(src: sqlite3.Connection, conn: Any, move: MemoryMove, same_facts: set[str]) -> None:
    """The fact term index, for the facts that are now the same on both sides."""
    s = move.schema_name
    terms = move.counts["fact_terms"] = Counts()
    by_fact: dict[tuple[str, str], list[str]] = {}
    for user, term, fact_id in src.execute("SELECT user, term, fact_id FROM fact_terms ORDER BY fact_id, term"):
        if fact_id in same_facts:
            by_fact.setdefault((user, fact_id), []).append(term)
    for (user, fact_id), words in by_fact.items():
        added = conn.execute(
            f'WITH added AS (INSERT INTO {s}.fact_terms SELECT %(u)s, t, %(f)s FROM unnest(%(t)s::text[]) t '
            "ON CONFLICT DO NOTHING RETURNING term), "
            f"counted AS (INSERT INTO {s}.term_counts AS c SELECT %(u)s, term, 1 FROM added ORDER BY term "
            'ON CONFLICT ("user", term) DO UPDATE SET n = c.n + 1 RETURNING 1) '
            "SELECT count(*) AS n FROM counted", {"u": user, "f": fact_id, "t": words}).fetchone()["n"]
        terms.copied += added
        terms.present += len(words) - added


def _copy_vectors(src: sqlite3.Connection, conn: Any, move: MemoryMove,
                  vectors: dict[str, tuple[dict, list[float]]], embedder: _Embedder,
                  same: dict[str, set[str]]) -> None:
    """Vectors copied from chromadb; embedded again only where chromadb has none."""
    import numpy as np

    s = move.schema_name
    counted = move.counts["vectors"] = Counts()
    wanted = [("vector", r) for r in src.execute("SELECT id, user, session, task, text FROM memories")
              if r["id"] in same["memories"]]
    wanted += [("skill", r) for r in src.execute("SELECT id, user, session, task, applies_when AS text, retired "
                                                 "FROM skills") if r["id"] in same["skills"]]
    missing = 0
    for zone, r in wanted:
        found = vectors.get(r["id"])
        if found is None:
            if zone == "skill" and r["retired"]:
                continue  # never read again: the SQLite store kept none either
            missing += 1
            vector = embedder.embed([r["text"]])[0]
        else:
            vector = found[1]
        if conn.execute(f'INSERT INTO {s}.vectors (id, "user", session, task, zone, embedding) VALUES '
                        "(%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING id",
                        [r["id"], r["user"], r["session"], r["task"], zone,
                         np.asarray(vector, dtype=np.float32)]).fetchone():
            counted.copied += 1
        else:
            counted.present += 1
    move.re_embedded = missing


def _note_what_stayed(move: MemoryMove, vectors: dict[str, tuple[dict, list[float]]]) -> None:
    """What the report should say was embedded again, not copied, or kept as the database had it."""
    if move.re_embedded:
        move.notes.append(f"{move.re_embedded} vectors were missing in chromadb and were embedded again from their "
                          "text (a task memory's vector was its question; its text stands in)")
    fact_vectors = sum(1 for meta, _ in vectors.values() if meta.get("zone") == "fact")
    if fact_vectors:
        move.notes.append(f"{fact_vectors} fact vectors of an older data directory not copied: facts are found "
                          "by their terms")
    if move.differing_ids:
        move.notes.append(f"{len(move.differing_ids)} ids already in the database with other content kept the "
                          f"database's version: {', '.join(move.differing_ids[:10])}")


def _value(column: str, value: Any, table: str) -> Any:
    """A SQLite value as PostgreSQL holds it (JSON text parsed, 0/1 as a boolean)."""
    if column in _JSON:
        return json.loads(value)
    if table == "skills" and column == "retired":
        return bool(value)
    if column in ("importance", "created", "valid_from", "updated"):
        return float(value)
    return value
