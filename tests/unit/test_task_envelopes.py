"""Task envelopes (document 000): each sub-task travels with its id, version, lineage
and artifact references; a receiving role gets only the fields it declares."""

from __future__ import annotations

import pytest

from briefroom.agents.base import Role, Turn
from briefroom.agents.planner import envelope, handed_out
from briefroom.agents.registry import bus_for, discover
from briefroom.agents.run_context import RunContext
from briefroom.llm import ModelPool
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.messages import MsgType, make_message
from briefroom.protocol.payloads import Conclusion, Critique, Instruction
from briefroom.records import Charter, Passage, SourceRecord
from briefroom.runlog import RunLog

ROOT = Instruction(task_id="t0")
SOURCE = SourceRecord(source_id="S1", title="Cloud outlook", path="cloud.md",
                      passages=(Passage(chunk_id="c1", start=0, end=10, text="723 billion"),))


def planner_turn(whiteboard, round: int = 2) -> Turn:
    roles = discover()
    planner = next(r for r in roles if r.name == "planner")
    ctx = RunContext(bus=bus_for(roles), models=ModelPool(), counter=TokenCounter(), log=RunLog(None))
    state = {"charter": Charter(goal="How big is the cloud market?", acceptance_criteria=("cited",)),
             "round": round, "whiteboard": whiteboard, "archive": [], "seen": {}, "sources": {"S1": SOURCE}}
    return Turn(role=planner, state=state, ctx=ctx)


def first_round():
    task = Instruction(task_id="t1.2", lineage=("t0",))
    ask = make_message(sender="planner", receiver="searcher", msg_type=MsgType.INSTRUCTION, round=1, seq=1,
                       content="How big is the 2026 cloud market?", payload=task)
    found = make_message(sender="searcher", msg_type=MsgType.CONCLUSION, round=1, seq=2, references=["S1"],
                         content="It will reach 723 billion.", payload=Conclusion(task_id="t1.2"))
    gap = make_message(sender="critic", receiver="planner", msg_type=MsgType.CRITIQUE, round=1, seq=3,
                       content="No verified evidence yet for: how big is the 2026 cloud market?",
                       payload=Critique(kind="gaps", gaps=("How big is the 2026 cloud market?",)))
    return ask, found, gap


def test_a_question_closing_a_gap_is_a_child_of_the_task_the_gap_is_about_and_carries_references():
    ask, found, gap = first_round()
    turn = planner_turn([ask, found, gap])
    child = envelope(turn, "What is the market forecast for 2026?", 1, [gap], handed_out(turn), ROOT)
    assert child.task_id == "t2.1" and child.version == 1
    assert child.lineage == ("t1.2", "t0") and child.path() == "t0 > t1.2 > t2.1"
    # the sources the parent's conclusions cited, by reference with a summary, not their text
    assert [(a.ref, a.kind) for a in child.artifacts] == [("S1", "source")]
    assert "Cloud outlook" in child.artifacts[0].summary and "723" not in child.artifacts[0].summary


def test_a_question_handed_out_again_keeps_its_task_id_with_the_next_version():
    ask, found, gap = first_round()
    turn = planner_turn([ask, found, gap])
    again = envelope(turn, "How big is the 2026 cloud market?", 3, [gap], handed_out(turn), ROOT)
    assert (again.task_id, again.version, again.lineage) == ("t1.2", 2, ("t0",))


def test_a_new_question_without_a_gap_descends_from_the_users_goal():
    turn = planner_turn([], round=1)
    assert envelope(turn, "Who grows fastest?", 2, [], {}, ROOT).lineage == ("t0",)


def test_a_role_gets_only_the_envelope_fields_it_declares():
    ask, _, _ = first_round()
    roles = discover()
    searcher = next(r for r in roles if r.name == "searcher")
    narrow = Role(name="narrow", prompt="searcher.md", subscriptions=(), publications=(), step=lambda t: None,
                  task_fields=("lineage",))
    ctx = RunContext(bus=bus_for(roles), models=ModelPool(), counter=TokenCounter(), log=RunLog(None))
    state = {"charter": Charter(goal="g", acceptance_criteria=("c",)), "round": 1, "whiteboard": [ask]}
    assert Turn(role=narrow, state=state, ctx=ctx).task(ask) == {"task": ask.body.content, "lineage": ("t0",)}
    full = Turn(role=searcher, state=state, ctx=ctx).task(ask)
    assert full["task_id"] == "t1.2" and "version" not in full
    with pytest.raises(ValueError, match="unknown task field"):
        Role(name="bad", prompt="x.md", subscriptions=(), publications=(), step=lambda t: None,
             task_fields=("owner",))


def test_a_conclusions_confidence_is_how_much_of_it_its_sources_hold():
    from briefroom.agents.searcher import support

    texts = {"S1": "Public cloud spending will reach 723 billion USD in 2026, analysts say."}
    copied = support("Public cloud spending will reach 723 billion USD in 2026.", ["S1"], texts)
    padded = support("Public cloud spending will reach 723 billion USD in 2026, driven by generative AI demand.",
                     ["S1"], texts)
    assert copied == 1.0 and 0.4 < padded < 1.0
    assert support("Public cloud spending will reach 723 billion USD in 2026.", ["S2"], texts) == 0.0


def test_the_round_summary_refers_to_the_rounds_tasks_by_lineage():
    from briefroom.graph.summary import round_tasks

    ask, found, gap = first_round()
    later = make_message(sender="planner", receiver="searcher", msg_type=MsgType.INSTRUCTION, round=2, seq=9,
                         content="What is the forecast?", payload=Instruction(task_id="t2.1", lineage=("t1.2", "t0")))
    state = {"whiteboard": [found, later], "archive": [ask]}
    assert round_tasks(state, 1) == ("t0 > t1.2: How big is the 2026 cloud market?",)
    assert round_tasks(state, 2) == ("t0 > t1.2 > t2.1: What is the forecast?",)
