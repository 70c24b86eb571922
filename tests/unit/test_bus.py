import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.context import sample_payload
from briefroom.agents.report_message import REPORT
from briefroom.protocol.bus import Bus, RoutingError, Subscription
from briefroom.protocol.messages import MsgType, make_message
from briefroom.state.reducers import append_messages


@pytest.fixture
def bus():
    return _bus()


def _bus():
    return Bus(
        {"planner": [Subscription(msg_type=MsgType.CRITIQUE, senders=("critic",))],
         "critic": [Subscription(msg_type=MsgType.CONCLUSION), Subscription(msg_type=REPORT)],
         "writer": [Subscription(msg_type=MsgType.CONCLUSION, senders=("searcher",)),
                    Subscription(msg_type=MsgType.CRITIQUE, senders=("critic",))],
         "searcher": []},
        {"searcher": [MsgType.CONCLUSION], "critic": [MsgType.CRITIQUE], "writer": [REPORT],
         "planner": [MsgType.INSTRUCTION]},
    )


def m(sender, msg_type, seq, receiver="broadcast", supersedes=None):
    return make_message(sender=sender, msg_type=msg_type, content=f"{sender}-{seq}", round=1, seq=seq,
                        receiver=receiver, supersedes=supersedes, payload=sample_payload(msg_type, "x"))


def test_broadcast_reaches_every_subscriber_but_the_sender(bus):
    conclusion = m("searcher", MsgType.CONCLUSION, 0)
    assert set(bus.recipients(conclusion)) == {"critic", "writer"}


def test_direct_message_reaches_only_its_receiver(bus):
    critique = m("critic", MsgType.CRITIQUE, 1, receiver="writer")
    assert bus.recipients(critique) == ("writer",)


def test_sender_filter(bus):
    # the writer only takes conclusions from the searcher
    foreign = m("planner", MsgType.CONCLUSION, 2)
    assert bus.recipients(foreign) == ("critic",)


def test_inbox_hides_superseded_and_unrouted(bus):
    old = m("searcher", MsgType.CONCLUSION, 0)
    new = m("searcher", MsgType.CONCLUSION, 1, supersedes=old.msg_id)
    report = m("writer", REPORT, 2, receiver="critic")
    board = [old, new, report]
    assert [x.msg_id for x in bus.inbox("writer", board)] == [new.msg_id]
    assert [x.msg_id for x in bus.inbox("critic", board)] == [new.msg_id, report.msg_id]
    assert bus.inbox("searcher", board) == []


def test_unread_respects_read_cursor(bus):
    a, b = m("searcher", MsgType.CONCLUSION, 0), m("searcher", MsgType.CONCLUSION, 1)
    assert [x.msg_id for x in bus.unread("critic", [a, b], [a.msg_id])] == [b.msg_id]


def test_publishing_undeclared_type_fails(bus):
    with pytest.raises(RoutingError, match="does not declare"):
        bus.check_publish(m("searcher", REPORT, 0, receiver="critic"))


def test_publishing_to_nobody_fails(bus):
    with pytest.raises(RoutingError, match="no subscriber"):
        bus.check_publish(m("critic", MsgType.CRITIQUE, 0, receiver="searcher"))


def _naive_inbox(bus, role, board, superseded):
    return [m.msg_id for m in board if role in bus.recipients(m) and m.msg_id not in superseded]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3), st.booleans()), min_size=1, max_size=12))
def test_incremental_inbox_matches_a_full_scan_as_the_board_grows_and_shrinks(steps):
    """The board only grows at the end and shrinks by order-preserving removal (round end);
    after any such sequence the bus's incremental view equals a scan of the board."""
    bus = _bus()
    board, seen, seq = [], [], 0
    superseded = set()  # a superseded message stays hidden even after its successor expires
    for grow, shrink, read in steps:
        for _ in range(grow):
            seq += 1
            kind = [MsgType.CONCLUSION, REPORT, MsgType.CRITIQUE][seq % 3]
            sender = {MsgType.CONCLUSION: "searcher", REPORT: "writer", MsgType.CRITIQUE: "critic"}[kind]
            # every seventh message supersedes the newest message on the board
            old = board[-1].msg_id if board and seq % 7 == 0 else None
            superseded.add(old)
            message = make_message(sender=sender, msg_type=kind, content=f"m{seq}", round=1, seq=seq, supersedes=old,
                                   payload=sample_payload(kind, f"m{seq}"))
            bus.check_publish(message)  # as Turn.publish does: routed when published
            board = append_messages(board, [message])
        if shrink:
            board = [m for i, m in enumerate(board) if i % (shrink + 1)]
        for role in ("writer", "critic"):
            view = bus.view(role, board, seen)
            expected = _naive_inbox(bus, role, board, superseded)
            assert [m.msg_id for m in view.inbox] == expected
            assert [m.msg_id for m in view.unread.values()] == [i for i in expected if i not in seen]
        if read:
            seen = [*seen, *(m.msg_id for m in board if m.msg_id not in seen)]
