"""`migrate`: an embedded data directory built by real runs, and a run stopped by its
budget, moved to PostgreSQL: every memory row the same (ids, texts, times, status,
chains), recall and fact lookups answering as before, the run resumed from its
checkpoint on PostgreSQL, a second migrate copying nothing, forget working there."""

from __future__ import annotations

import json
import sqlite3

import psycopg
import pytest
from psycopg.rows import dict_row

from briefroom.config import Settings
from briefroom.corpus.embeddings import make_embedder
from briefroom.errors import FatalBreaker
from briefroom.events import read_events
from briefroom.memory.namespace import Namespace
from briefroom.memory.store import MemoryStore
from briefroom.memory.zones import FactRow
from briefroom.postgres.checkpoints import open_postgres
from briefroom.postgres.memory import PgMemoryStore, schema_name
from briefroom.run import ResearchRequest, resume_research, run_research
from briefroom.server.migrate import migrate

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"
NOW = 1_900_000_000.0  # one clock for both stores: recency scores are comparable
TABLES = {"memories": "id", "facts": "id", "skills": "id", "applied": "key"}
JSON_COLUMNS = {"provenance", "source_ids", "confirmed_by", "steps", "evaluated_by", "result"}


def _embedded(tmp_path, small_corpus):
    """A data directory written by real runs (two users' namespaces, two sessions), a
    superseded and a competing fact, a retired skill, and a run its budget stopped."""
    data = tmp_path / "data"
    runs_root = tmp_path / "runs"
    base = Settings(model="test", rounds=1, data_dir=data, memory=True, user="mig", session="s1")
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=runs_root / "r1"), base)
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=runs_root / "r2"), base)  # confirms
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=runs_root / "r3"),
                 base.model_copy(update={"session": "s2"}))
    with pytest.raises(FatalBreaker):  # stopped part way: a checkpoint to resume from
        run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=runs_root / "stopped"),
                     base.model_copy(update={"rounds": 3, "max_tokens": 3000}))
    store = MemoryStore(data, make_embedder(base.embedder))
    try:
        ns = Namespace("mig", "s1", "manual")
        first = store.put_fact(ns, FactRow("Contoso", "revenue", "10", "USD bn", "Contoso earned 10 billion USD.",
                                           ("src-a",), ("critic",), "manual-1"))
        newer = store.put_fact(ns, FactRow("Contoso", "revenue", "12", "USD bn", "Contoso earned 12 billion USD.",
                                           ("src-a", "src-b"), ("critic", "writer"), "manual-2"))
        rival = store.put_fact(ns, FactRow("Contoso", "revenue", "11", "USD bn", "Contoso earned 11 billion USD.",
                                           ("src-c",), ("critic",), "manual-3"))
        assert [first[1], newer[1], rival[1]] == ["insert", "supersede", "competing"]
        skill_id, _ = store.put_skill(ns, "check twice", "When a number looks off", ["read it", "read it again"],
                                      ["critic"])
        for _ in range(3):
            store.record_use(skill_id, ns, success=False)
        assert store.items(ns, scope="task", zone="skill")[0]["retired"]
    finally:
        store.close()
    return data, runs_root, base, {"superseded": first[0], "current": newer[0], "competing": rival[0],
                                   "retired": skill_id}


def _sqlite_rows(data, embedder_name) -> dict[str, dict[str, dict]]:
    directory = "".join(c if c.isalnum() or c in "-_." else "_" for c in embedder_name)
    db = sqlite3.connect(data / "memory" / directory / "memory.sqlite")
    db.row_factory = sqlite3.Row
    out: dict[str, dict[str, dict]] = {}
    for table, key in TABLES.items():
        rows = {}
        for r in db.execute(f"SELECT * FROM {table}"):
            row = {c: (json.loads(r[c]) if c in JSON_COLUMNS else r[c]) for c in r.keys()}
            if table == "skills":
                row["retired"] = bool(row["retired"])
            rows[row[key]] = row
        out[table] = rows
    db.close()
    return out


def _pg_rows(url, embedder_name) -> dict[str, dict[str, dict]]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        return {table: {r[key]: dict(r) for r in conn.execute(f"SELECT * FROM {schema_name(embedder_name)}.{table}")}
                for table, key in TABLES.items()}


def _pg_count(url, embedder_name) -> dict[str, int]:
    s = schema_name(embedder_name)
    with psycopg.connect(url) as conn:
        if not conn.execute("SELECT to_regclass(%s) IS NOT NULL", [f"{s}.facts"]).fetchone()[0]:
            return {}
        return {t: conn.execute(f"SELECT count(*) FROM {s}.{t}").fetchone()[0]
                for t in ("memories", "facts", "skills", "applied", "vectors", "fact_terms", "term_counts")}


def _checkpoint_ids(saver, thread_id) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in saver.list({"configurable": {"thread_id": thread_id}})]


def test_migrate_moves_memory_and_a_stopped_run_then_a_second_migrate_copies_nothing(pg_url, small_corpus,
                                                                                    tmp_path, monkeypatch):
    monkeypatch.delenv("BRIEFROOM_DATABASE_URL", raising=False)
    data, runs_root, settings, ids = _embedded(tmp_path, small_corpus)
    embedder = make_embedder(settings.embedder)
    before = _sqlite_rows(data, embedder.name)
    assert {r["status"] for r in before["facts"].values()} >= {"current", "superseded", "competing"}
    assert any(len(r["confirmed_by"]) >= 2 for r in before["facts"].values())
    assert any(k.startswith("gates/mig/s1/") for k in before["applied"])
    sessions = {(r["user"], r["session"]) for t in ("memories", "facts", "skills") for r in before[t].values()}
    assert {("mig", "s1"), ("mig", "s2")} <= sessions
    stopped = runs_root / "stopped"
    stopped_record = json.loads((stopped / "run.json").read_text())
    assert stopped_record["status"] == "failed" and "database" not in stopped_record["settings"]
    local = sqlite3.connect(stopped / "checkpoints.sqlite")
    local_ids = [r[0] for r in local.execute("SELECT checkpoint_id FROM checkpoints ORDER BY checkpoint_id")]
    local_writes = local.execute("SELECT count(*) FROM writes").fetchone()[0]
    local.close()
    assert local_ids and local_writes

    # a dry run says what would move and moves nothing
    dry = migrate(data, pg_url, [runs_root], dry_run=True)
    assert dry.dry_run and dry.copied() > 0
    assert _pg_count(pg_url, embedder.name) == {} and (stopped / "checkpoints.sqlite").is_file()
    assert "database" not in json.loads((stopped / "run.json").read_text())["settings"]

    report = migrate(data, pg_url, [runs_root])
    [move] = report.memory
    assert move.schema_name == schema_name(embedder.name) and move.re_embedded == 0
    for table in ("memories", "facts", "skills", "applied"):
        assert move.counts[table].copied == len(before[table]), table
        assert move.counts[table].copied == dry.memory[0].counts[table].copied, table
    assert move.counts["vectors"].copied > 0 and move.counts["fact_terms"].copied > 0
    said = "\n".join(report.lines())
    assert "corpus index is not moved" in said and f"run {stopped} (failed" in said and "facts " in said
    moved = {r.run_dir: r for r in report.runs}
    assert str(stopped) in moved and moved[str(stopped)].checkpoints.copied == len(local_ids)
    assert moved[str(stopped)].writes.copied == local_writes
    assert sum(r.checkpoints.copied for r in report.runs) == sum(r.checkpoints.copied for r in dry.runs)

    # (a) every row of every namespace, the same in PostgreSQL: ids, text, status, chains, times, counts
    after = _pg_rows(pg_url, embedder.name)
    for table in TABLES:
        assert after[table] == before[table], table
    assert after["facts"][ids["superseded"]]["superseded_by"] == ids["current"]
    assert after["skills"][ids["retired"]]["retired"] is True
    local_store = MemoryStore(data, embedder, now=lambda: NOW)
    pg_store = PgMemoryStore(pg_url, embedder, now=lambda: NOW)
    try:
        for ns in (Namespace("mig", "s1", "x"), Namespace("mig", "s2", "x")):
            for query in (QUESTION, "public cloud spending 2026", "Contoso revenue"):
                old, new = local_store.recall(query, ns, "user"), pg_store.recall(query, ns, "user")
                assert [(r.item_id, r.zone, r.text) for r in new] == [(r.item_id, r.zone, r.text) for r in old]
                assert [r.score for r in new] == pytest.approx([r.score for r in old], abs=2e-3)
                assert pg_store.find_facts(query, ns, "user") == local_store.find_facts(query, ns, "user")
                assert [r.item_id for r in pg_store.skills_for(query, ns, "user")] == \
                       [r.item_id for r in local_store.skills_for(query, ns, "user")]
            assert pg_store.facts_about("Contoso", ns, "user") == local_store.facts_about("Contoso", ns, "user")
            assert sorted(json.dumps(i, sort_keys=True) for i in pg_store.items(ns, "session")) == \
                   sorted(json.dumps(i, sort_keys=True) for i in local_store.items(ns, "session"))
        assert any(r.zone == "vector" for r in pg_store.recall(QUESTION, Namespace("mig", "s1", "x"), "user"))
    finally:
        local_store.close()
        pg_store.close()

    # the run now lives in PostgreSQL: recorded without the password, its SQLite file kept aside
    record = json.loads((stopped / "run.json").read_text())
    password = pg_url.split(":")[2].split("@")[0]
    assert record["settings"]["database"].startswith("postgresql://") and password not in json.dumps(record)
    assert not (stopped / "checkpoints.sqlite").exists() and (stopped / "checkpoints.sqlite.migrated").is_file()
    saver = open_postgres(pg_url)
    try:
        assert sorted(_checkpoint_ids(saver, record["thread_id"])) == local_ids
        tuples = saver.list({"configurable": {"thread_id": record["thread_id"]}})
        assert sum(len(t.pending_writes or []) for t in tuples) == local_writes
    finally:
        saver.conn.close()

    # (c) a second migrate copies nothing and says why
    assert migrate(data, pg_url, [runs_root], dry_run=True).copied() == 0
    again = migrate(data, pg_url, [runs_root])
    assert again.copied() == 0 and not again.runs
    assert again.memory[0].counts["facts"].present == len(before["facts"])
    assert {s.what: s.reason for s in again.skipped}[str(stopped)] == "already migrated"
    assert f"skipped {stopped}: already migrated" in again.lines()
    assert _pg_rows(pg_url, embedder.name) == after

    # (b) the migrated run resumes from its checkpoint on PostgreSQL
    monkeypatch.setenv("BRIEFROOM_DATABASE_URL", pg_url)
    result = resume_research(stopped, {"max_tokens": 200_000})
    assert result.report and (stopped / "report.md").is_file()
    kinds = [e.event for e in read_events(stopped / "run.jsonl")]
    assert "run_resume" in kinds and "run_restart" not in kinds
    resumed = next(e for e in result.events if e.event == "run_resume")
    assert resumed.round is not None and resumed.round >= 1  # it went on from where it stopped
    assert not (stopped / "checkpoints.sqlite").exists()  # nothing went back to SQLite
    assert json.loads((stopped / "run.json").read_text())["status"] == "done"

    # (d) forget on a migrated fact removes it and its history from PostgreSQL
    pg_store = PgMemoryStore(pg_url, embedder)
    try:
        ns = Namespace("mig", "s1", "x")
        assert pg_store.forget(ids["current"], ns, "user") == 2  # it and the value it superseded
        left = {i["id"] for i in pg_store.items(ns, "user")}
        assert ids["current"] not in left and ids["superseded"] not in left and ids["competing"] in left
        assert ids["current"] not in [r.item_id for r in pg_store.find_facts("Contoso revenue", ns, "user")]
    finally:
        pg_store.close()
    with psycopg.connect(pg_url) as conn:
        s = schema_name(embedder.name)
        assert conn.execute(f"SELECT count(*) FROM {s}.fact_terms WHERE fact_id = %s", [ids["current"]]).fetchone()[0] \
            == 0
    # the data directory still holds them; migrating it again does not bring them back
    monkeypatch.delenv("BRIEFROOM_DATABASE_URL")
    third = migrate(data, pg_url, [runs_root])
    assert third.copied() == 0 and third.memory[0].counts["facts"].forgotten == 2
    assert {i["id"] for i in _pg_rows(pg_url, embedder.name)["facts"].values()}.isdisjoint(
        {ids["current"], ids["superseded"]})


def test_a_thread_name_taken_in_the_database_and_a_migrate_killed_before_the_rename(pg_url, small_corpus, tmp_path,
                                                                                   monkeypatch):
    """A run whose thread name another machine's run already uses takes a name of its
    own; a migrate that stopped after recording the run is finished by the next one."""
    monkeypatch.delenv("BRIEFROOM_DATABASE_URL", raising=False)
    settings = Settings(model="test", rounds=3, data_dir=tmp_path / "data", memory=False, max_tokens=3000)
    run_dir = tmp_path / "runs" / "paused"
    with pytest.raises(FatalBreaker):
        run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=run_dir), settings)
    thread = json.loads((run_dir / "run.json").read_text())["thread_id"]
    other = tmp_path / "elsewhere" / "paused"
    with pytest.raises(FatalBreaker):  # the same folder name on another machine, already on the database
        run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=other, thread_id=thread),
                     settings.model_copy(update={"database_url": pg_url}))
    saver = open_postgres(pg_url)
    try:
        theirs = sorted(_checkpoint_ids(saver, thread))
    finally:
        saver.conn.close()
    assert theirs

    report = migrate(tmp_path / "data", pg_url, [run_dir])
    [move] = report.runs
    assert move.thread_id != thread and move.thread_id.startswith(thread + "-") and move.checkpoints.copied > 0
    record = json.loads((run_dir / "run.json").read_text())
    assert record["thread_id"] == move.thread_id
    saver = open_postgres(pg_url)
    try:
        assert sorted(_checkpoint_ids(saver, thread)) == theirs  # the other run's thread is untouched
        assert len(_checkpoint_ids(saver, move.thread_id)) == move.checkpoints.copied
    finally:
        saver.conn.close()

    # killed after run.json was written, before the rename: the next migrate finishes the move
    (run_dir / "checkpoints.sqlite.migrated").rename(run_dir / "checkpoints.sqlite")
    again = migrate(tmp_path / "data", pg_url, [run_dir])
    [finished] = again.runs
    assert finished.thread_id == move.thread_id and finished.checkpoints.copied == 0
    assert finished.checkpoints.present == move.checkpoints.copied and finished.writes.copied == 0
    assert not (run_dir / "checkpoints.sqlite").exists() and (run_dir / "checkpoints.sqlite.migrated").is_file()

    monkeypatch.setenv("BRIEFROOM_DATABASE_URL", pg_url)
    result = resume_research(run_dir, {"max_tokens": 200_000})
    assert result.report and any(e.event == "run_resume" for e in result.events)


def test_the_migrate_command_dry_run_and_bad_url(pg_url, tmp_path):
    from typer.testing import CliRunner

    from briefroom.cli import app

    runner = CliRunner()
    (tmp_path / "data").mkdir()
    dry = runner.invoke(app, ["migrate", "--to", pg_url, "--data-dir", str(tmp_path / "data"), "--runs",
                              str(tmp_path / "runs"), "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    assert '"dry_run":true' in dry.output.replace(" ", "")
    from briefroom.corpus.embeddings import make_embedder
    from briefroom.memory.namespace import Namespace
    from briefroom.memory.store import MemoryStore

    store = MemoryStore(tmp_path / "data", make_embedder("local"))
    store.put_memory(Namespace("mig", "s1"), "task", "Question: how big?", {"run": "r1"}, 0.8)
    store.close()
    bad = runner.invoke(app, ["migrate", "--to", "postgresql://u:secretpw@127.0.0.1:1/none", "--data-dir",
                              str(tmp_path / "data")])
    assert bad.exit_code == 1 and bad.output.startswith("error:") and "secretpw" not in bad.output, bad.output
