"""`briefroom migrate --to URL`: an embedded data directory and its runs, moved to PostgreSQL.

What moves, and how:

- **Long-term memory**, every embedder directory under `<data-dir>/memory/` into its
  schema (`postgres.memory.schema_name`), every namespace (user, session, task). Row level, so
  nothing the API would recompute changes: ids, texts, timestamps (`created`,
  `valid_from`, `updated`), fact status and supersede/compete chains, confirmations,
  run ids, skill counts and retired state, the fact term index (`fact_terms`, and
  `term_counts` raised by the terms actually added) and the gates' `applied` keys (a
  resumed run finds its writes done and writes nothing twice). Vectors are **copied**
  from chromadb as they are (no re-embedding); a memory or live skill whose vector is
  missing there is embedded again with the same embedder (counted as `re-embedded`).
  Vectors that facts had in data directories of older versions are not copied: facts are
  found by their terms in both stores.
- **Checkpoints** of every run directory given, through the savers' own APIs (`list`,
  `put`, `put_writes`), oldest first, every checkpoint and every pending write. Then
  run.json says where they are (`settings["database"]`, the URL without its password,
  so `briefroom resume` needs BRIEFROOM_DATABASE_URL), and `checkpoints.sqlite` is
  renamed `checkpoints.sqlite.migrated`, never deleted. Order: copy, record, rename; a
  migrate killed in between is finished by the next one.
- **Not moved**: the corpus index (a cache, rebuilt from the documents by the next run
  that needs it), and the data directory's own memory, left as it was.

Idempotent: rows go in with `ON CONFLICT DO NOTHING` and are counted as copied or as
already there; a row whose id is in the database with other content keeps the
database's version and is listed. The schema's `migrated` table keeps the ids (no text)
each source directory gave, so a row forgotten in the database after a migrate is not
brought back by the next one. Checkpoints already in the database are not written
again; a run already moved is skipped with the reason. `dry_run` does all of it inside
transactions that are rolled back (and writes nothing to the run directories), so its
counts are what a real migrate would do.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from briefroom import runs
from briefroom.corpus.embeddings import LOCAL_EMBEDDERS, Embedder, make_embedder
from briefroom.database import public_url

MIGRATED_SUFFIX = ".migrated"
CHECKPOINTS_FILE = "checkpoints.sqlite"
CHROMA_PAGE = 1000
MIGRATED_TABLE = "migrated"  # (source directory, id) of every row a migrate moved: ids only, no text


class Counts(BaseModel):
    copied: int = 0  # written by this migrate
    present: int = 0  # already in the database, the same
    differing: int = 0  # already in the database with other content: the database's row kept
    forgotten: int = 0  # moved by an earlier migrate and forgotten since: not brought back


class MemoryMove(BaseModel):
    directory: str
    embedder: str
    schema_name: str
    dims: int | None = None
    namespaces: int = 0  # distinct (user, session, task) among the rows
    counts: dict[str, Counts] = Field(default_factory=dict)
    re_embedded: int = 0
    differing_ids: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class RunMove(BaseModel):
    run_dir: str
    thread_id: str
    checkpoints: Counts = Field(default_factory=Counts)
    writes: Counts = Field(default_factory=Counts)
    status: str = ""  # the run's status in run.json


class Skipped(BaseModel):
    what: str
    reason: str


class MigrationReport(BaseModel):
    database: str  # the URL without its password
    dry_run: bool = False
    memory: list[MemoryMove] = Field(default_factory=list)
    runs: list[RunMove] = Field(default_factory=list)
    skipped: list[Skipped] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def copied(self) -> int:
        """Everything this migrate wrote (0 on a second run)."""
        return (sum(c.copied for m in self.memory for c in m.counts.values())
                + sum(r.checkpoints.copied + r.writes.copied for r in self.runs))

    def lines(self) -> list[str]:
        """What the CLI prints: one line per memory schema and per run, then what was skipped."""
        verb = "would copy" if self.dry_run else "copied"

        def said(c: Counts) -> str:
            return (f"{c.copied}" + (f" (+{c.present} already there)" if c.present else "")
                    + (f" ({c.differing} differ: the database's kept)" if c.differing else "")
                    + (f" ({c.forgotten} forgotten since the last migrate: not brought back)" if c.forgotten else ""))

        out = [f"{'dry run: ' if self.dry_run else ''}migrating to {self.database}"]
        for m in self.memory:
            out.append(f"memory {m.directory} -> {m.schema_name} ({m.namespaces} namespaces), {verb}: "
                       + ", ".join(f"{kind} {said(c)}" for kind, c in m.counts.items())
                       + (f"; {m.re_embedded} vectors embedded again" if m.re_embedded else ""))
            out += [f"  note: {n}" for n in m.notes]
        for r in self.runs:
            out.append(f"run {r.run_dir} ({r.status}, thread {r.thread_id}), {verb}: checkpoints "
                       f"{said(r.checkpoints)}, writes {said(r.writes)}")
        out += [f"skipped {s.what}: {s.reason}" for s in self.skipped]
        out += [f"note: {n}" for n in self.notes]
        return out


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


# --- entry point ----------------------------------------------------------------------
def migrate(data_dir: Path, url: str, runs_dirs: list[Path], *, dry_run: bool = False) -> MigrationReport:
    """Move long-term memory of `data_dir` and the checkpoints of the runs under
    `runs_dirs` (run directories, or folders of them) into the PostgreSQL at `url`."""
    from briefroom.run import data_dir_in_use

    report = MigrationReport(database=public_url(url), dry_run=dry_run)
    report.notes.append("the corpus index is not moved: it is a cache, rebuilt from the documents by the next run "
                        "that needs it (it stays in the data directory, where runs on PostgreSQL keep it too)")
    data_dir = data_dir.expanduser()
    memory_root = data_dir / "memory"
    if memory_root.is_dir():
        with data_dir_in_use(data_dir, wait=0):  # no run writes memory while it moves
            for directory in sorted(p for p in memory_root.iterdir() if p.is_dir()):
                _migrate_memory(directory, url, report, dry_run)
        if not dry_run:
            report.notes.append(f"the memory in {memory_root} is left as it was; runs with BRIEFROOM_DATABASE_URL "
                                "read and write PostgreSQL")
    else:
        report.skipped.append(Skipped(what=str(memory_root), reason="no long-term memory in this data directory"))
    seen: set[Path] = set()
    for root in runs_dirs:
        try:
            found = runs.find_runs(root)
        except Exception as exc:  # ConfigError: no such folder
            report.skipped.append(Skipped(what=str(root), reason=str(exc)))
            continue
        for run_dir, record in sorted(found, key=lambda f: str(f[0])):
            if run_dir.resolve() in seen:
                continue
            seen.add(run_dir.resolve())
            if record is None:
                report.skipped.append(Skipped(what=str(run_dir), reason="no readable run.json"))
                continue
            _migrate_run(run_dir, record, url, data_dir, report, dry_run)
    return report


# --- long-term memory -------------------------------------------------------------------
_COLUMNS = {
    "memories": ["id", "user", "session", "task", "kind", "text", "provenance", "importance", "created"],
    "facts": ["id", "user", "session", "task", "entity", "attribute", "value", "unit", "text", "source_ids",
              "confirmed_by", "run_id", "valid_from", "superseded_by", "status"],
    "skills": ["id", "user", "session", "task", "name", "applies_when", "steps", "successes", "failures",
               "evaluated_by", "retired", "created", "updated"],
}
_JSON = {"provenance", "source_ids", "confirmed_by", "steps", "evaluated_by"}


def _migrate_memory(directory: Path, url: str, report: MigrationReport, dry_run: bool) -> None:
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
    import numpy as np
    from psycopg.types.json import Jsonb

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
        # the gates' bookkeeping: a resumed run finds its writes done
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
        # the fact term index, for the facts that are now the same on both sides
        terms = move.counts["fact_terms"] = Counts()
        by_fact: dict[tuple[str, str], list[str]] = {}
        for user, term, fact_id in src.execute("SELECT user, term, fact_id FROM fact_terms ORDER BY fact_id, term"):
            if fact_id in same["facts"]:
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
        # vectors: copied from chromadb; embedded again only where chromadb has none
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
        if missing:
            move.notes.append(f"{missing} vectors were missing in chromadb and were embedded again from their text "
                              "(a task memory's vector was its question; its text stands in)")
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


# --- runs -------------------------------------------------------------------------------
@contextlib.contextmanager
def _run_lock(run_dir: Path) -> Iterator[bool]:
    """The lock `briefroom resume` takes; False if a process holds it (the run is going)."""
    import fcntl

    with open(run_dir / "run.lock", "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


def _migrate_run(run_dir: Path, record: runs.RunRecord, url: str, data_dir: Path, report: MigrationReport,
                 dry_run: bool) -> None:
    where = report.database
    path = run_dir / CHECKPOINTS_FILE
    moved_already = (run_dir / (CHECKPOINTS_FILE + MIGRATED_SUFFIX)).exists()
    recorded = record.settings.get("database")
    if recorded and recorded != where:
        report.skipped.append(Skipped(what=str(run_dir), reason=f"its checkpoints are in another database ({recorded})"))
        return
    if not path.is_file():
        reason = ("already migrated" if recorded == where and moved_already else
                  "already on this database" if recorded == where else "no checkpoints.sqlite (the run never "
                  "checkpointed; a resume starts it over)")
        report.skipped.append(Skipped(what=str(run_dir), reason=reason))
        return
    if record.recording:
        report.skipped.append(Skipped(what=str(run_dir), reason="a recording (cannot be resumed)"))
        return
    with _run_lock(run_dir) as free:
        if not free:
            report.skipped.append(Skipped(what=str(run_dir), reason="in use by another briefroom process"))
            return
        source = _open_sqlite(path)
        try:
            target = _open_postgres(url, dry_run)
            try:
                move = _copy_thread(run_dir, record, source, target, dry_run)
            finally:
                if target is not None:
                    target.conn.close()
        finally:
            with contextlib.suppress(sqlite3.Error):
                source.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            source.conn.close()
        if move is None:
            report.skipped.append(Skipped(what=str(run_dir), reason=f"thread {record.thread_id} and its fallback are "
                                          "already in the database with other checkpoints"))
            return
        move.status = record.status
        report.runs.append(move)
        if dry_run:
            return
        if record.settings.get("data_dir") and Path(record.settings["data_dir"]).resolve() != data_dir.resolve():
            report.notes.append(f"{run_dir} used the data directory {record.settings['data_dir']}, whose memory was "
                                "not part of this migrate; from now on its memory is in PostgreSQL")
        # record, then rename: run.json never points at checkpoints that are not there
        runs.update(run_dir, record, thread_id=move.thread_id, settings={**record.settings, "database": where})
        for suffix in ("", "-wal", "-shm"):
            part = run_dir / (CHECKPOINTS_FILE + suffix)
            if part.exists():
                part.rename(run_dir / (CHECKPOINTS_FILE + MIGRATED_SUFFIX + suffix))


def _open_sqlite(path: Path) -> Any:
    from briefroom.graph.checkpoint import open_checkpointer

    return open_checkpointer(path)


def _open_postgres(url: str, dry_run: bool) -> Any:
    """The database's saver (its tables made or brought up to date); None in a dry run on
    a database that has no checkpoint tables yet (a dry run creates nothing)."""
    from briefroom.postgres.checkpoints import open_postgres

    if dry_run:
        import psycopg

        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT to_regclass('checkpoints') IS NOT NULL").fetchone()
            if not (row and row[0]):
                return None
    return open_postgres(url)


def _thread_in_use(target: Any, thread_id: str, ours: set[tuple[str, str]]) -> bool:
    """The database holds checkpoints of `thread_id` that are not this run's."""
    return target is not None and any((t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"]) not in ours
               for t in target.list({"configurable": {"thread_id": thread_id}}))


def _copy_thread(run_dir: Path, record: runs.RunRecord, source: Any, target: Any, dry_run: bool) -> RunMove | None:
    """Every checkpoint of the run's thread, oldest first, and their pending writes."""
    from langgraph.checkpoint.base import WRITES_IDX_MAP

    threads = [r[0] for r in source.conn.execute("SELECT DISTINCT thread_id FROM checkpoints")]
    # the file's thread is the run's; a run recorded by a migrate that stopped before the rename has its new name
    source_thread = record.thread_id if record.thread_id in threads or len(threads) != 1 else threads[0]
    tuples = list(source.list({"configurable": {"thread_id": source_thread}}))
    tuples.reverse()  # list() gives the newest first; parents go in before children
    ours = {(t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"]) for t in tuples}
    thread_id = record.thread_id
    if _thread_in_use(target, thread_id, ours):
        if record.thread_id != source_thread:  # named by an earlier migrate, and taken since: leave it to a person
            return None
        # a thread of that name from another machine's run: this run takes a name of its own, the same on every try
        thread_id = f"{source_thread}-{hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:8]}"
        if _thread_in_use(target, thread_id, ours):
            return None
    move = RunMove(run_dir=str(run_dir), thread_id=thread_id)
    # what the database holds already: checkpoint -> the tasks whose writes are there (a task's writes go in together)
    there = {(t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"]):
             {w[0] for w in t.pending_writes or []}
             for t in (target.list({"configurable": {"thread_id": thread_id}}) if target is not None else [])}
    paths = dict(source.conn.execute("SELECT DISTINCT task_id, task_path FROM writes WHERE thread_id = ?",
                                     [source_thread]).fetchall())

    def renamed(config: dict | None) -> dict | None:
        if config is None:
            return None
        return {"configurable": {**config["configurable"], "thread_id": thread_id}}

    for t in tuples:
        ns, checkpoint_id = t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"]
        if (ns, checkpoint_id) in there:
            move.checkpoints.present += 1
        else:
            move.checkpoints.copied += 1
            if not dry_run:
                parent = renamed(t.parent_config) or {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
                target.put(parent, t.checkpoint, t.metadata, dict(t.checkpoint["channel_versions"]))
        done = there.get((ns, checkpoint_id), set())
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in t.pending_writes or []:
            if task_id in done:
                move.writes.present += 1
            else:
                by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            move.writes.copied += len(writes)
            if dry_run:
                continue
            config = renamed(t.config)
            # special channels (errors, interrupts) have fixed indexes; the others are numbered in order
            normal = [w for w in writes if w[0] not in WRITES_IDX_MAP]
            special = [w for w in writes if w[0] in WRITES_IDX_MAP]
            for part in (normal, special):
                if part:
                    target.put_writes(config, part, task_id, paths.get(task_id, ""))
    return move
