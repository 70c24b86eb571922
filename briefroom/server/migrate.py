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
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from briefroom import runs
from briefroom.database import public_url
from briefroom.server.migrate_memory import migrate_memory
from briefroom.server.migrate_report import Counts as Counts
from briefroom.server.migrate_report import MemoryMove as MemoryMove
from briefroom.server.migrate_report import MigrationReport as MigrationReport
from briefroom.server.migrate_report import RunMove as RunMove
from briefroom.server.migrate_report import Skipped as Skipped

MIGRATED_SUFFIX = ".migrated"
CHECKPOINTS_FILE = "checkpoints.sqlite"


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
                migrate_memory(directory, url, report, dry_run)
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
