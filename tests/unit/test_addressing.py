"""Roles address capabilities, not each other; a guard sees a message type first."""

import pytest

from bench.context import sample_payload
from briefroom.agents.registry import bus_for, discover
from briefroom.protocol.bus import Bus, RoutingError, Subscription
from briefroom.protocol.messages import BROADCAST, MsgType, make_message
from briefroom.protocol.payloads import Conclusion, Critique


def test_built_in_roles_name_capabilities_and_the_bus_resolves_them():
    bus = bus_for(discover())
    assert {c: bus.address(c) for c in ("plan", "search", "check", "draft")} == {
        "plan": "planner", "search": "searcher", "check": "critic", "draft": "writer"}
    assert bus.address(None) == BROADCAST
    with pytest.raises(RoutingError, match="capability 'translate'"):
        bus.address("translate")


def test_built_in_roles_subscribe_without_naming_senders():
    for role in discover():
        assert all(s.senders is None for s in role.subscriptions), role.name


def test_a_capability_names_one_role():
    with pytest.raises(RoutingError, match="declared by both"):
        Bus({"a": [], "b": []}, {}, capabilities={"a": ["check"], "b": ["check"]})


def test_a_guard_receives_every_message_of_its_type_first_and_its_forwards_go_on():
    subs = {"writer": [Subscription(msg_type=MsgType.CONCLUSION)], "critic": [Subscription(msg_type=MsgType.CONCLUSION)],
            "guard": [], "searcher": []}
    bus = Bus(subs, {}, guards={"guard": [MsgType.CONCLUSION]})
    found = make_message(sender="searcher", msg_type=MsgType.CONCLUSION, content="x", round=1, seq=0)
    assert bus.recipients(found) == ("guard",)
    passed = make_message(sender="guard", msg_type=MsgType.CONCLUSION, content="x", round=1, seq=1)
    assert set(bus.recipients(passed)) == {"writer", "critic"}
    other = make_message(sender="searcher", msg_type=MsgType.CRITIQUE, content="y", round=1, seq=2,
                         payload=sample_payload(MsgType.CRITIQUE, "y"))
    assert bus.recipients(other) == ()  # a guard of conclusions holds nothing else


def test_payload_must_match_the_message_type():
    with pytest.raises(ValueError, match="cannot carry"):
        make_message(sender="a", msg_type=MsgType.CONCLUSION, content="x", round=1, seq=0,
                     payload=Critique(kind="review"))
    with pytest.raises(ValueError, match="needs its payload"):
        make_message(sender="a", msg_type=MsgType.CRITIQUE, content="x", round=1, seq=0)
    message = make_message(sender="a", msg_type=MsgType.CONCLUSION, content="x", round=1, seq=0,
                           payload=Conclusion(question="q"))
    assert message.payload_as(Conclusion).question == "q"
    with pytest.raises(TypeError):
        message.payload_as(Critique)


def test_payload_fields_are_checked():
    with pytest.raises(ValueError):
        Conclusion(questoin="typo")  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        Critique(kind="praise")  # type: ignore[arg-type]
