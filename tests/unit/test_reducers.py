from briefroom.protocol.messages import MsgType, make_message
from briefroom.records import Fact, Passage, SourceRecord, Worktable
from briefroom.state import reducers


def msg(seq: int, content: str = "x"):
    return make_message(sender="searcher", msg_type=MsgType.CONCLUSION, content=content, round=1, seq=seq)


def test_append_messages_keeps_order_and_ignores_repeats():
    a, b, c = msg(0, "a"), msg(1, "b"), msg(2, "c")
    current = [a, b]
    merged = reducers.append_messages(current, [b, c])
    assert [m.body.content for m in merged] == ["a", "b", "c"]
    assert [m.body.content for m in current] == ["a", "b"]  # input untouched


def test_append_messages_from_nothing():
    assert reducers.append_messages(None, None) == []


def test_merge_worktables_appends_notes_per_role_only():
    current = {"planner": Worktable(notes=("one",)), "writer": Worktable(notes=("w",))}
    merged = reducers.merge_worktables(current, {"planner": Worktable(notes=("two",))})
    assert merged["planner"].notes == ("one", "two")
    assert merged["writer"].notes == ("w",)
    assert current["planner"].notes == ("one",)


def test_merge_seen_is_a_union_in_first_seen_order():
    merged = reducers.merge_seen({"critic": ["m1"]}, {"critic": ["m2", "m1"], "writer": ["m3"]})
    assert merged == {"critic": ["m1", "m2"], "writer": ["m3"]}


def test_merge_facts_adds_confirmations_without_losing_text():
    fact = Fact(fact_id="F1", text="It reached 723 billion USD.", numbers=("723",), source_id="S1",
                found_by="searcher", round=1)
    confirmed = fact.model_copy(update={"confirmed_by": ("critic",), "text": "ignored"})
    merged = reducers.merge_facts([fact], [confirmed])
    assert len(merged) == 1
    assert merged[0].text == "It reached 723 billion USD."
    assert merged[0].confirmed_by == ("critic",)


def test_merge_sources_unions_passages_once():
    p1 = Passage(chunk_id="S1:0", start=0, end=5, text="hello")
    p2 = Passage(chunk_id="S1:1", start=6, end=11, text="world")
    left = {"S1": SourceRecord(source_id="S1", title="t", path="p", passages=(p1,))}
    merged = reducers.merge_sources(left, {"S1": SourceRecord(source_id="S1", title="t", path="p", passages=(p1, p2)),
                                           "S2": SourceRecord(source_id="S2", title="u", path="q")})
    assert [p.chunk_id for p in merged["S1"].passages] == ["S1:0", "S1:1"]
    assert set(merged) == {"S1", "S2"}
    assert len(left["S1"].passages) == 1


def test_the_ledger_keeps_the_furthest_count_whatever_order_updates_arrive_in():
    first = {"log_seq": 10, "tokens_used": 900, "transcript": 2, "model_calls": {"searcher#1": 2, "planner": 1}}
    second = {"log_seq": 12, "tokens_used": 700, "transcript": 3, "model_calls": {"searcher#2": 1, "planner": 1}}
    merged = reducers.furthest_ledger(first, second)
    assert merged == reducers.furthest_ledger(second, first)
    assert merged == {"log_seq": 12, "tokens_used": 900, "transcript": 3,
                      "model_calls": {"searcher#1": 2, "searcher#2": 1, "planner": 1}}
    assert first["model_calls"] == {"searcher#1": 2, "planner": 1}  # inputs are never changed
    assert reducers.furthest_ledger(None, second) == second and reducers.furthest_ledger(first, None) == first


def test_the_run_context_is_fixed_and_its_meter_counts(tmp_path):
    import dataclasses

    import pytest

    from briefroom.agents.run_context import RunContext, RunMeter
    from briefroom.llm import ModelPool
    from briefroom.protocol.budget import TokenCounter
    from briefroom.protocol.bus import Bus
    from briefroom.runlog import RunLog

    ctx = RunContext(bus=Bus({}, {}), models=ModelPool(), counter=TokenCounter(), log=RunLog(None),
                     meter=RunMeter(tmp_path / "transcript.jsonl"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.max_tokens = 5  # type: ignore[misc]
    ctx.charge(120)
    ctx.add_tool_output(1.0, "first")
    ctx.add_tool_output(2.0, "second")
    assert ctx.ledger()["tokens_used"] == 120 and ctx.ledger()["transcript"] == 2
    assert ctx.meter.announce("warn") and not ctx.meter.announce("warn")  # announced once
    again = RunContext(bus=Bus({}, {}), models=ModelPool(), counter=TokenCounter(), log=RunLog(None),
                       meter=RunMeter(tmp_path / "transcript.jsonl"))
    again.restore({"tokens_used": 120, "transcript": 1})  # the checkpoint was written after the first output
    assert again.tokens_used == 120 and [raw for _, raw in again.transcript] == ["first"]
    assert (tmp_path / "transcript.jsonl").read_text(encoding="utf-8").count("\n") == 1  # cut off on disk too
