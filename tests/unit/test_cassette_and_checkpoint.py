from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from briefroom.graph.checkpoint import serializer
from briefroom.graph.state import Charter
from briefroom.models.cassette import (
    Cassette,
    CassetteChatModel,
    ReplayDivergence,
    serialize_messages,
)
from briefroom.protocol.messages import MsgType, make_message


def test_cassette_replays_in_order_and_reports_divergence_as_a_diff(tmp_path):
    recorded = Cassette()
    recorded.record("writer", serialize_messages([HumanMessage(content="line one\nline two")]), AIMessage(content="A"))
    recorded.save(tmp_path)
    cassette = Cassette.load(tmp_path)
    model = CassetteChatModel(cassette=cassette, role="writer")
    assert model.invoke([HumanMessage(content="line one\nline two")]).content == "A"
    assert cassette.unused() == 0
    fresh = CassetteChatModel(cassette=Cassette.load(tmp_path), role="writer")
    with pytest.raises(ReplayDivergence) as caught:
        fresh.invoke([HumanMessage(content="line one\nline 2")])
    assert "-line two" in caught.value.diff and "+line 2" in caught.value.diff
    with pytest.raises(ReplayDivergence, match="has only 0"):
        CassetteChatModel(cassette=Cassette.load(tmp_path), role="critic").invoke([HumanMessage(content="x")])


def test_broken_cassette_line_is_a_config_error(tmp_path):
    (tmp_path / "cassette.jsonl").write_text('{"role": "x"}\nnot json\n')
    with pytest.raises(Exception, match="cassette.jsonl:2"):
        Cassette.load(tmp_path)


def test_checkpoint_serializer_round_trips_state_values():
    serde = serializer()
    value = {"charter": Charter(goal="g", acceptance_criteria=("a",)),
             "msg": make_message(sender="planner", msg_type=MsgType.INSTRUCTION, content="c", round=1, seq=0)}
    back = serde.loads_typed(serde.dumps_typed(value))
    assert back["charter"] == value["charter"]
    assert back["msg"] == value["msg"] and back["msg"].header.msg_type is MsgType.INSTRUCTION


class NotAllowed:
    pass


def test_checkpoint_serializer_refuses_unlisted_pydantic_types():
    from pydantic import BaseModel

    class Sneaky(BaseModel):
        x: int = 1

    serde = serializer()
    back = serde.loads_typed(serde.dumps_typed({"v": Sneaky()}))
    assert not isinstance(back["v"], Sneaky)
