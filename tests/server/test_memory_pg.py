"""Long-term memory in PostgreSQL: the same behaviour as the SQLite store, namespaces in
every query, concurrent writers, and a forget that leaves no plaintext on disk."""

from __future__ import annotations

import json
import multiprocessing
import secrets

import psycopg
import pytest

from briefroom.agents.registry import builtin_roles, bus_for
from briefroom.memory.gates import TeamRoles, apply_gates
from briefroom.memory.namespace import Namespace
from briefroom.memory.store import MemoryStore
from briefroom.memory.zones import FactRow
from briefroom.postgres.memory import PgMemoryStore
from briefroom.protocol.messages import MsgType, make_message
from briefroom.records import Charter, Fact, Report
from briefroom.runlog import RunLog
from tests.server.fakes import Clock, HashEmbedder

TEAM = TeamRoles.of(bus_for(builtin_roles()))  # the built-in team, as a run passes it


@pytest.fixture
def store(pg_url):
    s = PgMemoryStore(pg_url, HashEmbedder())
    yield s
    s.close()


def row(value, sources, entity="cloud spending 2026", run="r1", text=None):
    return FactRow(entity, "billion usd", value, "billion USD", text or f"Cloud spending reaches {value} billion USD.",
                   tuple(sources), ("critic", "searcher"), run)


def test_facts_merge_supersede_and_compete_as_in_sqlite(store):
    ns = Namespace("alice")
    first, action, _ = store.put_fact(ns, row("723", ["S1"]))
    assert action == "insert"
    assert store.put_fact(ns, row("723", ["S2"]))[:2] == (first, "update")
    competing, action, _ = store.put_fact(ns, row("680", ["S3"]))
    assert action == "competing"
    newer, action, reason = store.put_fact(ns, row("725", ["S1"], run="r2"))
    assert action == "supersede" and first in reason
    about = {f["id"]: f for f in store.facts_about("cloud spending 2026", ns)}
    assert about[first]["status"] == "superseded" and about[first]["superseded_by"] == newer
    assert about[first]["source_ids"] == ["S1", "S2"]
    found = store.find_facts("cloud spending 2026 billion USD", ns)
    assert {r.item_id for r in found} == {newer, competing}  # history is not found by its terms


def test_namespaces_bound_every_read_and_forget(store):
    alice, alice2, bob = Namespace("alice", "s1", "t1"), Namespace("alice", "s2", "t2"), Namespace("bob", "s1", "t1")
    question = "how big is the public cloud market in 2026"
    mine = store.put_memory(alice, "task", question, {"run": "r1"}, 0.8)
    other = store.put_memory(alice2, "task", question + " again", {"run": "r2"}, 0.8)
    theirs = store.put_memory(bob, "task", question, {"run": "r3"}, 0.8)
    fact, _, _ = store.put_fact(alice, row("723", ["S1"]))
    store.put_fact(bob, row("999", ["S9"]))
    skill, _ = store.put_skill(alice, "Research plan: cloud", question, ["search", "check"], ["critic"])

    assert {r.item_id for r in store.recall(question, alice, "user", k=10, threshold=0.5)} == {mine, other}
    assert [r.item_id for r in store.recall("cloud spending 2026 billion", alice, k=10, threshold=0.99)] == [fact]
    assert {r.item_id for r in store.recall(question, alice, "session", k=10, threshold=0.5)} == {mine}
    assert {r.item_id for r in store.recall(question, bob, "user", k=10, threshold=0.5)} == {theirs}
    assert [r.item_id for r in store.skills_for(question, alice)] == [skill]
    assert store.skills_for(question, bob) == [] and store.skills_for(question, alice2, "session") == []
    assert {r.item_id for r in store.find_facts("cloud spending 2026", bob)} == {
        r["id"] for r in store.items(bob, zone="fact")}
    assert all(i["namespace"]["user"] == "alice" for i in store.items(alice))
    assert store.forget(mine, bob) == 0 and store.forget(theirs, alice) == 0  # another user's ids do nothing
    assert store.forget(mine, alice, "session") == 1
    assert {r.item_id for r in store.recall(question, alice, k=10, threshold=0.5)} == {other}
    assert [r.item_id for r in store.recall(question, bob, k=10, threshold=0.5)] == [theirs]


def test_a_filtered_vector_read_finds_the_namespace_rows_among_many_others(store):
    """HNSW alone would take its 40 nearest and filter them afterwards: with most rows
    another user's, the one user's nearest memory would be missed (iterative scan)."""
    crowd = Namespace("crowd")
    with store.transaction():
        for i in range(300):
            store.put_memory(crowd, "task", f"how big is the public cloud market variant {i}", {"run": "c"}, 0.5)
    mine = store.put_memory(Namespace("alice"), "task", "how big is the public cloud market", {"run": "a"}, 0.5)
    found = store.recall("how big is the public cloud market", Namespace("alice"), k=1, threshold=0.0)
    assert [r.item_id for r in found] == [mine]


def _state(accepted: bool = True) -> dict:
    good = Fact(fact_id="Fgood", text="Public cloud spending will reach 723 billion USD in 2026.", numbers=("723",),
                source_id="S1", found_by="searcher", round=1, confirmed_by=("searcher", "critic"))
    plan = make_message(sender="planner", msg_type=MsgType.INSTRUCTION, content="How big is the market?", round=1,
                        seq=0, receiver="searcher")
    return {"charter": Charter(goal="How big is the 2026 public cloud market?", acceptance_criteria=("cited",)),
            "facts": [good], "archive": [plan], "whiteboard": [], "worktables": {}, "sources": {},
            "report": Report(markdown="# r", cited_sources=("S1",), round=1, accepted=accepted)}


def test_the_gates_write_the_same_items_to_postgres_as_to_sqlite(pg_url, tmp_path):
    """A drop-in: the gates' decisions, ids, actions and rows are those of MemoryStore."""
    ns = Namespace("alice", "s1", "run1")
    lite = MemoryStore(tmp_path, HashEmbedder(), now=Clock())
    pg = PgMemoryStore(pg_url, HashEmbedder(), now=Clock())
    try:
        written = []
        for s in (lite, pg):
            skill, _ = s.put_skill(ns, "plan", "an earlier question", ["step"], ["critic"])
            first = apply_gates(s, ns, "run1", _state(), [], [skill], RunLog(None), TEAM)
            again = apply_gates(s, ns, "run1", _state(), [], [skill], RunLog(None), TEAM)  # a resumed run writes nothing
            assert again == first
            written.append((first, s.items(ns), s.recall("How big is the 2026 public cloud market?", ns, k=5)))
        assert written[0] == written[1]
        assert {i["zone"] for i in written[1][1]} == {"fact", "vector", "skill"}
        assert next(i for i in written[1][1] if i["zone"] == "skill" and i["text"] == "plan")["successes"] == 2
    finally:
        lite.close()
        pg.close()


def test_gates_that_fail_half_way_write_nothing(store, monkeypatch):
    ns = Namespace("alice", "s1", "run1")

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(store, "put_facts", crash)  # after the task memory and the skill were written
    with pytest.raises(OSError):
        apply_gates(store, ns, "run1", _state(), [], [], RunLog(None), TEAM)
    assert store.items(ns) == [] and store.recall("public cloud market 2026", ns, threshold=0.0) == []
    monkeypatch.undo()
    apply_gates(store, ns, "run1", _state(), [], [], RunLog(None), TEAM)
    assert {i["zone"] for i in store.items(ns)} == {"fact", "vector", "skill"}


# --- concurrent writers -----------------------------------------------------------------

WRITERS, EACH = 3, 40


def _word(n: int, i: int) -> str:
    """A word only fact (n, i) holds: digits spelled as letters (numbers are terms of their own)."""
    return "depot" + "".join(chr(ord("a") + int(d)) for d in f"{n}{i:03d}")


def _writer(url: str, n: int, start) -> None:
    store = PgMemoryStore(url, HashEmbedder())
    start.wait(60)
    ns = Namespace("alice", f"w{n}", f"run{n}")
    for i in range(EACH):
        store.put_fact(ns, row(str(1000 * n + i), [f"W{n}S{i}"], entity=f"{_word(n, i)} pallets",
                               text=f"The {_word(n, i)} manifest lists {1000 * n + i} pallets."))
        store.put_memory(ns, "task", f"writer {n} question {i} about markets", {"run": f"run{n}"}, 0.5)
        # every writer confirms the same fact from its own source: the merges must not lose one
        store.put_fact(ns, row("723", [f"shared-{n}-{i}"], entity="shared entity"))
    store.close()


def test_three_writer_processes_lose_and_miss_no_row(store, pg_url):
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(pg_url, n, start)) for n in range(WRITERS)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(300)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    alice = Namespace("alice")
    items = store.items(alice)
    facts = [i for i in items if i["zone"] == "fact"]
    assert len([i for i in items if i["zone"] == "vector"]) == WRITERS * EACH
    assert len(facts) == WRITERS * EACH + 1
    shared = [f for f in facts if f["entity"] == "shared entity"]
    assert len(shared) == 1 and len(shared[0]["source_ids"]) == WRITERS * EACH  # one row, every confirmation
    for n in range(WRITERS):  # every row is found by what it says, not only listed
        for i in range(EACH):
            assert any(r.provenance["value"] == str(1000 * n + i)
                       for r in store.find_facts(f"{_word(n, i)} pallets", alice, k=3))
    with psycopg.connect(pg_url) as conn:  # the term index counts every posting once
        bad = conn.execute(f"SELECT count(*) FROM {store.schema}.term_counts c WHERE n <> (SELECT count(*) FROM "
                           f'{store.schema}.fact_terms t WHERE t."user" = c."user" AND t.term = c.term)').fetchone()[0]
        assert bad == 0


# --- forget -----------------------------------------------------------------------------

def _on_disk(conn, schema: str, marker: bytes) -> list[str]:
    """Files of the schema's tables, indexes and TOAST, and of the WAL, that hold `marker`,
    read through SQL (pg_read_binary_file) after a checkpoint wrote every page out."""
    conn.execute("CHECKPOINT")
    files = [r[0] for r in conn.execute(
        "SELECT pg_relation_filepath(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE (n.nspname = %s OR c.oid IN (SELECT reltoastrelid FROM pg_class k JOIN pg_namespace m "
        "ON m.oid = k.relnamespace WHERE m.nspname = %s)) AND pg_relation_filepath(c.oid) IS NOT NULL",
        [schema, schema])]
    files += ["pg_wal/" + r[0] for r in conn.execute("SELECT name FROM pg_ls_waldir()")]
    found = []
    for path in files:
        size = 0
        while True:  # a relation's file grows in 1 GB segments; tests stay in the first
            chunk = conn.execute("SELECT pg_read_binary_file(%s, %s, 8388608, true)", [path, size]).fetchone()[0]
            if not chunk:
                break
            if marker in bytes(chunk):
                found.append(path)
                break
            size += len(chunk)
    return found


def test_forget_leaves_no_plaintext_in_tables_indexes_or_wal(store, pg_url):
    ns = Namespace("alice", "s1", "run1")
    word = "zq" + secrets.token_hex(6)  # in no other row
    memory = store.put_memory(ns, "task", f"The {word} freight manifest lists 9931 pallets", {"run": "r"}, 0.5)
    fact, _, _ = store.put_fact(ns, row("9931", ["S7"], entity=f"{word} pallets",
                                        text=f"The {word} manifest lists 9931 pallets."))
    skill, _ = store.put_skill(ns, f"Research plan: {word}", f"count {word} pallets", ["s"], ["critic"])
    store.put_memory(ns, "task", "an unrelated memory that stays", {"run": "r"}, 0.5)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        before = _on_disk(conn, store.schema, word.encode())
        assert any(p.startswith("pg_wal/") for p in before) and len(before) > 3  # the check can see it
        for item in (memory, fact, skill):
            assert store.forget(item, ns) == 1
        assert store.last_compaction["wal"] is True
        rows = conn.execute(f"SELECT count(*) FROM {store.schema}.memories").fetchone()[0]
        assert rows == 1  # the other memory stays
        assert _on_disk(conn, store.schema, word.encode()) == []
        for table in ("memories", "facts", "skills", "fact_terms", "term_counts", "vectors", "applied"):
            dump = conn.execute(f"SELECT string_agg(t::text, ' ') FROM {store.schema}.{table} t").fetchone()[0] or ""
            assert word not in dump, table


def test_a_delete_alone_leaves_the_text_on_disk(store, pg_url):
    """Why forget compacts: PostgreSQL's DELETE and a plain VACUUM keep the bytes."""
    ns = Namespace("alice")
    word = "zq" + secrets.token_hex(6)
    store.put_memory(ns, "task", "a memory written before it, on the same page", {"run": "r"}, 0.5)
    gone = store.put_memory(ns, "task", f"The {word} manifest lists 9931 pallets", {"run": "r"}, 0.5)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DELETE FROM {store.schema}.memories WHERE id = %s", [gone])
        conn.execute(f"VACUUM {store.schema}.memories")
        # the dead tuple became the page's free space, not zeros; the WAL still has the insert
        left = _on_disk(conn, store.schema, word.encode())
        assert any(p.startswith("base/") for p in left) and any(p.startswith("pg_wal/") for p in left)


def test_the_memory_commands_read_and_forget_what_runs_wrote_to_postgres(pg_url, monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from briefroom.cli import app
    from briefroom.corpus.embeddings import make_embedder

    monkeypatch.setenv("BRIEFROOM_EMBEDDER", "minilm")
    ns = Namespace("alice")
    writer = PgMemoryStore(pg_url, make_embedder("minilm"))
    fact_id, _, _ = writer.put_fact(ns, row("723", ["S1"]))
    writer.close()
    base = ["--database-url", pg_url, "--user", "alice", "--data-dir", str(tmp_path)]
    runner = CliRunner()
    listed = runner.invoke(app, ["memory", "list", "--json", "--zone", "fact", *base])
    assert listed.exit_code == 0, listed.output
    assert [i["id"] for i in json.loads(listed.stdout)] == [fact_id]  # not the empty data directory's store
    assert runner.invoke(app, ["memory", "forget", fact_id, *base]).exit_code == 0
    again = runner.invoke(app, ["memory", "list", "--json", *base])
    assert json.loads(again.stdout) == []


def test_the_memory_commands_say_in_one_line_when_postgres_is_down(tmp_path):
    from typer.testing import CliRunner

    from briefroom.cli import app

    result = CliRunner().invoke(app, ["memory", "list", "--database-url", "postgresql://u:secret@127.0.0.1:9/db",
                                      "--data-dir", str(tmp_path)])
    assert result.exit_code != 0
    assert "PostgreSQL at" in result.output and "secret" not in result.output
