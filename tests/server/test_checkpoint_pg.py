"""Checkpoints in PostgreSQL through briefroom's serializer (allow-list, redaction)."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

import psycopg
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from briefroom.postgres.checkpoints import open_checkpointer
from briefroom.protocol.messages import MsgType, make_message
from briefroom.records import Charter, Fact
from tests.secret_samples import samples

TOKEN = dict(samples())["github ghp_"]


class State(TypedDict, total=False):
    charter: Charter
    facts: Annotated[list[Fact], operator.add]
    note: str
    round: int


def _fact(n: int, text: str | None = None) -> Fact:
    return Fact(fact_id=f"F{n}", text=text or f"Spending reached {n} billion USD in 2026.", numbers=(str(n), "2026"),
                source_id="S1", found_by="searcher", round=1)


def _graph(saver):
    def search(state: State) -> dict:
        return {"facts": [_fact(723)], "round": state.get("round", 0) + 1}

    def write(state: State) -> dict:
        return {"note": f"wrote from {len(state['facts'])} facts"}

    g = StateGraph(State)
    g.add_node("search", search)
    g.add_node("write", write)
    g.add_edge(START, "search")
    g.add_edge("search", "write")
    g.add_edge("write", END)
    return g.compile(checkpointer=saver)


def test_a_graph_run_is_read_back_by_a_new_saver_with_its_typed_values(pg_url):
    charter = Charter(goal="How big is the 2026 cloud market?", acceptance_criteria=("cited",))
    config = {"configurable": {"thread_id": "run-1"}}
    saver = open_checkpointer(pg_url)
    _graph(saver).invoke({"charter": charter, "facts": [_fact(600)]}, config, durability="sync")
    saver.conn.close()

    again = open_checkpointer(pg_url)  # a resumed run: another connection, tables already there
    values = _graph(again).get_state(config).values
    assert values["charter"] == charter and isinstance(values["charter"], Charter)
    assert values["facts"] == [_fact(600), _fact(723)] and all(isinstance(f, Fact) for f in values["facts"])
    assert values["note"] == "wrote from 2 facts" and values["round"] == 1
    assert len(list(again.list(config))) >= 3  # input, search, write
    again.conn.close()


def test_a_type_off_the_allow_list_is_not_rebuilt(pg_url):
    class Sneaky(BaseModel):
        x: int = 1

    saver = open_checkpointer(pg_url)
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"facts": [Sneaky()], "msg": make_message(
        sender="planner", msg_type=MsgType.INSTRUCTION, content="c", round=1, seq=0)}
    checkpoint["channel_versions"] = {"facts": 1, "msg": 1}
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saved = saver.put(config, checkpoint, {"source": "loop", "step": 1}, checkpoint["channel_versions"])
    back = saver.get_tuple(saved).checkpoint["channel_values"]
    assert not isinstance(back["facts"][0], Sneaky)
    assert back["msg"].header.msg_type is MsgType.INSTRUCTION  # listed types are rebuilt
    saver.conn.close()


def test_no_secret_reaches_any_checkpoint_table(pg_url):
    """Blobs go through the serializer; inline strings and metadata are JSONB the saver
    writes itself: all three are redacted."""
    saver = open_checkpointer(pg_url)
    checkpoint = empty_checkpoint()
    leaky = _fact(2026, f"The deploy key was {TOKEN} in 2026.")
    checkpoint["channel_values"] = {"facts": [leaky], "note": f"key {TOKEN}", "round": 2}
    checkpoint["channel_versions"] = {"facts": 1, "note": 1, "round": 1}
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saved = saver.put(config, checkpoint, {"source": "loop", "step": 1, "why": f"saw {TOKEN}"},
                      checkpoint["channel_versions"])
    saver.put_writes(saved, [("facts", [leaky]), ("note", TOKEN)], task_id="task1")
    back = saver.get_tuple(saved)
    assert "[REDACTED:" in back.checkpoint["channel_values"]["note"]
    assert back.checkpoint["channel_values"]["round"] == 2 and back.checkpoint["channel_values"]["facts"][0].numbers
    saver.conn.close()
    with psycopg.connect(pg_url) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'checkpoint%'")]
        assert {"checkpoints", "checkpoint_blobs", "checkpoint_writes"} <= set(tables)
        dumps = {t: b"".join(conn.execute(f"SELECT convert_to(t::text, 'UTF8') FROM {t} t").fetchall()[i][0]
                             for i in range(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]))
                 for t in tables}
    assert dumps["checkpoints"] and dumps["checkpoint_writes"]
    for table, dump in dumps.items():
        # bytea columns print as hex in the row's text: look for the token in both forms
        assert TOKEN.encode() not in dump and TOKEN.encode().hex().encode() not in dump, table


def test_the_url_chooses_the_backend(tmp_path):
    for where in (tmp_path / "a.sqlite", f"sqlite:///{tmp_path / 'b.sqlite'}"):
        saver = open_checkpointer(where)
        assert isinstance(saver, SqliteSaver)
        saver.conn.close()
    assert (tmp_path / "a.sqlite").is_file() and (tmp_path / "b.sqlite").is_file()
