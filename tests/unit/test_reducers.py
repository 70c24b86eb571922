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
