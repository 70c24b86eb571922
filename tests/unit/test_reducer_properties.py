"""Reducer laws, checked on generated inputs: LangGraph may apply updates in any
grouping, so merging must not depend on it."""

from hypothesis import given
from hypothesis import strategies as st

from briefroom.protocol.messages import MsgType, make_message
from briefroom.state import reducers

message = st.builds(lambda seq, text: make_message(sender="searcher", msg_type=MsgType.CONCLUSION, content=text,
                                                   round=1, seq=seq),
                    st.integers(0, 5), st.sampled_from(["a", "b", "c"]))
messages = st.lists(message, max_size=8)
seen = st.dictionaries(st.sampled_from(["planner", "critic", "writer"]), st.lists(st.sampled_from("xyz"), max_size=4))


@given(messages, messages, messages)
def test_append_messages_is_associative_and_never_duplicates(a, b, c):
    left = reducers.append_messages(reducers.append_messages(a, b), c)
    right = reducers.append_messages(a, reducers.append_messages(b, c))
    assert [m.msg_id for m in left] == [m.msg_id for m in right]
    assert len({m.msg_id for m in left}) == len(left)


@given(messages, messages)
def test_append_messages_is_idempotent(a, b):
    once = reducers.append_messages(a, b)
    assert reducers.append_messages(once, b) == once


@given(seen, seen, seen)
def test_merge_seen_is_associative_and_a_union(a, b, c):
    left = reducers.merge_seen(reducers.merge_seen(a, b), c)
    right = reducers.merge_seen(a, reducers.merge_seen(b, c))
    assert left == right
    for role in set(a) | set(b) | set(c):
        assert set(left[role]) == set(a.get(role, [])) | set(b.get(role, [])) | set(c.get(role, []))
