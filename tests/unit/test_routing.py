"""Who speaks next, and what round end does to the whiteboard."""

from __future__ import annotations

from types import SimpleNamespace

from langgraph.types import Overwrite

from briefroom.agents.base import Role
from briefroom.agents.registry import bus_for
from briefroom.graph.builder import round_end
from briefroom.graph.routing import ROUND_END, next_speaker
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import MsgType, make_message
from briefroom.records import Charter, Report
from briefroom.runlog import RunLog


def role(name, *types, **declared):
    return Role(name=name, prompt="planner.md", subscriptions=tuple(Subscription(msg_type=t) for t in types),
                publications=(MsgType.CONCLUSION, MsgType.CRITIQUE), step=lambda t: None, **declared)


ROLES = [role("a", MsgType.INSTRUCTION), role("b", MsgType.CONCLUSION), role("c", MsgType.CONCLUSION)]
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


def test_finishing_runs_only_roles_with_a_finishing_duty_whatever_their_names():
    import dataclasses

    drafter = dataclasses.replace(role("scribe", MsgType.CONCLUSION), finishing_duty="draft")
    checker = dataclasses.replace(role("auditor", MsgType.CONCLUSION), finishing_duty="check")
    roles = [role("early", MsgType.CONCLUSION), checker, drafter]
    bus = bus_for(roles)
    board = [conclusion(1)]
    state = {"whiteboard": board, "seen": {}, "round": 1, "finishing": True}
    # "early" has unread messages and speaks first normally, but has no finishing duty
    assert next_speaker({**state, "finishing": False}, roles, bus) == "early"
    assert next_speaker(state, roles, bus) == "scribe"
    draft = Report(markdown="x", round=1, accepted=False)
    assert next_speaker({**state, "report": draft}, roles, bus) == "auditor"
    assert next_speaker({**state, "report": draft, "seen": {"auditor": [board[0].msg_id]}}, roles, bus) == "scribe"
    assert next_speaker(state, roles[:1], bus_for(roles[:1])) == ROUND_END


def test_a_finishing_duty_must_be_known():
    import dataclasses

    import pytest

    with pytest.raises(ValueError, match="finishing_duty"):
        dataclasses.replace(role("x", MsgType.CONCLUSION), finishing_duty="write")
