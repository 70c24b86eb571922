"""Who speaks next, and what round end does to the whiteboard."""

from __future__ import annotations

from types import SimpleNamespace

from langgraph.types import Overwrite

from briefroom.agents.base import Role
from briefroom.agents.registry import bus_for
from briefroom.graph.builder import round_end
from briefroom.graph.routing import ROUND_END, next_speaker
from briefroom.graph.state import Charter, Report
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import MsgType, make_message
from briefroom.runlog import RunLog


def role(name, order, *types):
    return Role(name=name, prompt="planner.md", subscriptions=tuple(Subscription(msg_type=t) for t in types),
                publications=(MsgType.CONCLUSION, MsgType.CRITIQUE), output_schema=None, step=lambda t: None,
                order=order)


ROLES = [role("a", 10, MsgType.INSTRUCTION), role("b", 20, MsgType.CONCLUSION), role("c", 30, MsgType.CONCLUSION)]
BUS = bus_for(ROLES)


def conclusion(seq, round=1, ttl=2):
    return make_message(sender="x", msg_type=MsgType.CONCLUSION, content=f"c{seq}", round=round, seq=seq,
                        ttl_rounds=ttl)


def test_first_role_in_order_with_unread_speaks():
    board = [conclusion(0)]
    assert next_speaker({"whiteboard": board, "seen": {}}, ROLES, BUS) == "b"
    assert next_speaker({"whiteboard": board, "seen": {"b": [board[0].msg_id]}}, ROLES, BUS) == "c"
    assert next_speaker({"whiteboard": board, "seen": {"b": [board[0].msg_id], "c": [board[0].msg_id]}},
                        ROLES, BUS) == ROUND_END


def test_accepted_report_ends_the_round_even_with_unread_messages():
    state = {"whiteboard": [conclusion(0)], "seen": {}, "round": 2,
             "report": Report(markdown="r", round=2, accepted=True)}
    assert next_speaker(state, ROLES, BUS) == ROUND_END
    state["report"] = Report(markdown="r", round=1, accepted=True)  # last round's report does not count
    assert next_speaker(state, ROLES, BUS) == "b"


def runtime():
    return SimpleNamespace(context=SimpleNamespace(log=RunLog(None), progress=lambda *a: None))


def test_round_end_expires_by_ttl_and_archives():
    short, long = conclusion(0, ttl=1), conclusion(1, ttl=3)
    state = {"charter": Charter(goal="g", acceptance_criteria=("a",), max_rounds=3), "round": 1,
             "whiteboard": [short, long], "seen": {}}
    update = round_end(state, runtime(), ROLES, BUS)
    assert isinstance(update["whiteboard"], Overwrite)
    assert [m.msg_id for m in update["whiteboard"].value] == [long.msg_id]
    assert [m.msg_id for m in update["archive"]] == [short.msg_id]
    assert update["round"] == 2 and update["done"] is False


def test_round_end_stops_at_max_rounds_or_when_nobody_has_anything_to_read():
    charter = Charter(goal="g", acceptance_criteria=("a",), max_rounds=2)
    last = round_end({"charter": charter, "round": 2, "whiteboard": [conclusion(0, round=2)], "seen": {}},
                     runtime(), ROLES, BUS)
    assert last["done"] is True and "round" not in last
    msg = conclusion(0)
    idle = round_end({"charter": charter, "round": 1, "whiteboard": [msg],
                      "seen": {"b": [msg.msg_id], "c": [msg.msg_id]}}, runtime(), ROLES, BUS)
    assert idle["done"] is True


def test_superseded_messages_leave_the_board_at_round_end():
    old = conclusion(0, ttl=5)
    new = make_message(sender="x", msg_type=MsgType.CONCLUSION, content="c-new", round=1, seq=1, ttl_rounds=5,
                       supersedes=old.msg_id)
    update = round_end({"charter": Charter(goal="g", acceptance_criteria=("a",)), "round": 1,
                        "whiteboard": [old, new], "seen": {}}, runtime(), ROLES, BUS)
    assert [m.msg_id for m in update["whiteboard"].value] == [new.msg_id]
    assert [m.msg_id for m in update["archive"]] == [old.msg_id]
