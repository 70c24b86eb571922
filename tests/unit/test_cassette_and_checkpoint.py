from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from briefroom.errors import ConfigError
from briefroom.graph.checkpoint import serializer
from briefroom.llm import ModelHandle
from briefroom.models.cassette import (
    Cassette,
    CassetteChatModel,
    ReplayDivergence,
    ReplyBank,
    serialize_messages,
)
from briefroom.protocol.messages import MsgType, make_message
from briefroom.records import Charter
from tests.fakes import ScriptedChatModel


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


def test_a_reply_cut_at_the_output_cap_replays_as_cut(tmp_path):
    recorded = Cassette()
    prompt = serialize_messages([HumanMessage(content="draft")])
    recorded.record("writer", prompt, AIMessage(content='{"title": "Cl', response_metadata={"finish_reason": "length"}))
    recorded.record("writer", prompt, AIMessage(content="{}", response_metadata={"finish_reason": "stop"}))
    recorded.save(tmp_path)
    model = CassetteChatModel(cassette=Cassette.load(tmp_path), role="writer")
    cut, whole = model.invoke([HumanMessage(content="draft")]), model.invoke([HumanMessage(content="draft")])
    assert cut.response_metadata.get("finish_reason") == "length"
    assert whole.response_metadata.get("finish_reason") != "length"


def test_a_re_recording_takes_the_reply_to_an_unchanged_prompt_and_asks_the_model_the_rest():
    earlier = Cassette()
    for prompt, reply in (("draft part 1", "A"), ("judge: reason last", "old verdict"), ("draft part 2", "B")):
        earlier.record("writer", serialize_messages([HumanMessage(content=prompt)]), AIMessage(content=reply))
    earlier.record("critic", serialize_messages([HumanMessage(content="draft part 1")]), AIMessage(content="C"))
    model = ScriptedChatModel(["new verdict", "asked again"])
    recorder = Cassette()
    handle = ModelHandle("writer", "scripted", "m", model, "json_object", 8192, recorder=recorder,
                         reuse=ReplyBank(earlier.entries, {"writer": "m"}))
    said = [handle.invoke([HumanMessage(content=p)])[0].content
            for p in ("draft part 1", "judge: reason first", "draft part 2", "draft part 1")]
    # the changed prompt, and an unchanged one asked more often than recorded, reach the model
    assert said == ["A", "new verdict", "B", "asked again"]
    assert len(model.calls) == 2 and handle.reuse is not None and handle.reuse.reused == 2
    assert [e["response"]["content"] for e in recorder.entries] == said  # the new recording holds every call
    assert handle.calls == 4


def test_a_recording_reuses_only_its_own_models_replies():
    bank = ReplyBank([], {"writer": "embedded qwen2.5-coder-1.5b (llama.cpp, local)"})
    bank.check_labels({"writer": "embedded qwen2.5-coder-1.5b (llama.cpp, local)", "critic": "any"})
    with pytest.raises(ConfigError, match="--reuse: the recording's writer was 'embedded qwen2.5"):
        bank.check_labels({"writer": "embedded smollm2-135m-instruct (llama.cpp, local)"})


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


def test_checkpoints_pass_through_redaction(tmp_path):
    """A secret that reached the state some other way is redacted before the checkpoint is written."""
    from langgraph.checkpoint.base import empty_checkpoint

    from briefroom.graph.checkpoint import open_checkpointer
    from briefroom.records import Fact
    from tests.secret_samples import samples

    token = dict(samples())["github ghp_"]
    leaky = Fact(fact_id="F1", text=f"The deploy key was {token} in 2026.", numbers=("2026",), source_id="S1",
                 found_by="searcher", round=1)
    msg = make_message(sender="searcher", msg_type=MsgType.CONCLUSION, content=f"see {token}", round=1, seq=0)
    serde = serializer()
    back = serde.loads_typed(serde.dumps_typed({"facts": [leaky], "whiteboard": [msg], "n": 3}))
    assert token not in back["facts"][0].text and "[REDACTED:" in back["facts"][0].text
    assert back["facts"][0].numbers == ("2026",) and back["n"] == 3
    assert token not in back["whiteboard"][0].body.content

    saver = open_checkpointer(tmp_path / "checkpoints.sqlite")
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"facts": [leaky]}
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saved = saver.put(config, checkpoint, {"source": "loop", "step": 1}, {})
    saver.put_writes(saved, [("facts", [leaky])], task_id="task1")
    saver.conn.commit()
    saver.conn.close()
    for path in tmp_path.iterdir():
        assert token.encode() not in path.read_bytes(), path.name


def test_clean_state_is_serialized_untouched():
    from briefroom.protocol.redaction import redact_deep

    value = {"charter": Charter(goal="g", acceptance_criteria=("a",)), "ids": ("a", "b"), "n": [1, 2]}
    assert redact_deep(value) is value


def test_every_type_the_state_can_hold_is_on_the_checkpoint_allow_list():
    """A type missing from the allow-list is silently dropped when a checkpoint is read
    back (LangGraph logs "Blocked deserialization"): resume would lose state."""
    import enum
    import typing

    from pydantic import BaseModel

    from briefroom.graph.checkpoint import allowed_types
    from briefroom.protocol.payloads import PayloadModel, registered_payloads
    from briefroom.state.schema import AgentState

    found: set[type] = set()

    def walk(annotation) -> None:
        for arg in typing.get_args(annotation):
            walk(arg)
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            return
        if annotation is PayloadModel:  # a message body holds any registered payload
            for payload in registered_payloads():
                walk(payload)
            return
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            found.add(annotation)
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel) and annotation not in found:
            found.add(annotation)
            for field in annotation.model_fields.values():
                walk(field.annotation)

    for annotation in typing.get_type_hints(AgentState, include_extras=True).values():
        walk(annotation)
    assert found and found - set(allowed_types()) == set()


def test_a_checkpoint_names_a_payload_by_its_type_not_its_class():
    """A message's payload is written as its fields and read back by its `type` through
    the registry: a checkpoint never names the payload's module, so a payload class can
    move to the role that registers it and older checkpoints still resume."""
    from bench.context import sample_payload
    from briefroom.agents.report_message import REPORT, ReportMessage

    message = make_message(sender="writer", msg_type=REPORT, content="draft", round=1, seq=0,
                           payload=sample_payload(REPORT, "a report draft"))
    serde = serializer()
    blob = serde.dumps_typed({"whiteboard": [message]})
    assert b"ReportMessage" not in blob[1] and b"report_message" not in blob[1] and b"payloads" not in blob[1]
    back = serde.loads_typed(blob)
    assert back["whiteboard"] == [message] and isinstance(back["whiteboard"][0].body.payload, ReportMessage)
