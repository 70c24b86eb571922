"""An instruction's task envelope in a prompt: the receiving role sees the fields it
declared in `task_fields`, and nothing it did not declare."""

from __future__ import annotations

import dataclasses

from briefroom.agents.base import Turn
from briefroom.agents.prompting import _message_forms, message_item
from briefroom.agents.registry import bus_for, discover
from briefroom.agents.run_context import RunContext
from briefroom.llm import ModelHandle, ModelPool
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.messages import MsgType, Priority, make_message
from briefroom.protocol.payloads import ArtifactRef, Instruction
from briefroom.protocol.prompt_assembly import DATA_BLOCK
from briefroom.records import Charter
from briefroom.runlog import RunLog
from tests.fakes import ScriptedChatModel

ENVELOPE = Instruction(task_id="t1.2", version=3, lineage=("t1", "t0"),
                       artifacts=(ArtifactRef(ref="S0000abcd", kind="source", summary="Cloud outlook 2026: market size"),
                                  ArtifactRef(ref="f-7", kind="fact", summary="723 billion USD in 2026")))


def instruction(payload: Instruction = ENVELOPE, receiver: str = "searcher"):
    return make_message(sender="planner", msg_type=MsgType.INSTRUCTION, receiver=receiver,
                        content="How big is the public cloud market in 2026?", round=1, seq=1, payload=payload,
                        priority=Priority.P0, ttl_rounds=1)


def block_of(text: str, msg_id: str) -> tuple[str, str]:
    """(attributes, body) of the message block with this id."""
    for _, kind, attrs, body in DATA_BLOCK.findall(text):
        if kind == "message" and f'id="{msg_id}"' in attrs:
            return attrs, body
    raise AssertionError(f"no block for {msg_id}")


def searcher_prompt(task_fields: tuple[str, ...]) -> str:
    roles = [dataclasses.replace(r, task_fields=task_fields) if r.name == "searcher" else r for r in discover()]
    searcher = next(r for r in roles if r.name == "searcher")
    pool = ModelPool({"searcher": ModelHandle("searcher", "scripted", "scripted", ScriptedChatModel([]),
                                              "json_object_schema", 32_000, label="scripted")})
    ctx = RunContext(bus=bus_for(roles), models=pool, counter=TokenCounter(), log=RunLog(None))
    message = instruction(receiver=ctx.bus.address("search"))
    state = {"charter": Charter(goal="How big is the cloud market?", acceptance_criteria=("cited",)),
             "round": 1, "whiteboard": [message], "seen": {}, "sources": {}, "facts": []}
    prompt = Turn(role=searcher, state=state, ctx=ctx).build_prompt("Search: how big is the cloud market?")
    return block_of(str(prompt.messages[1].content), message.msg_id)


def test_a_role_sees_the_envelope_fields_it_declared():
    attrs, body = searcher_prompt(("task_id", "lineage", "artifacts"))
    assert 'task="t1.2"' in attrs and 'lineage="t0/t1"' in attrs
    assert "version=" not in attrs  # not declared
    assert "- S0000abcd (source): Cloud outlook 2026: market size" in body
    assert "- f-7 (fact): 723 billion USD in 2026" in body
    assert body.startswith("How big is the public cloud market in 2026?")


def test_a_role_that_declared_nothing_sees_no_envelope():
    attrs, body = searcher_prompt(())
    assert "task=" not in attrs and "lineage=" not in attrs and "version=" not in attrs
    assert "S0000abcd" not in body and "t1.2" not in attrs + body
    assert body == "How big is the public cloud market in 2026?"


def test_each_declared_field_alone():
    message = instruction()
    only_version = message_item(message, Priority.P0, frozenset(), ("version",)).text
    attrs, body = block_of(only_version, message.msg_id)
    assert 'version="3"' in attrs and "task=" not in attrs and "lineage=" not in attrs and "S0000abcd" not in body
    only_artifacts = message_item(message, Priority.P0, frozenset(), ("artifacts",))
    attrs, body = block_of(only_artifacts.text, message.msg_id)
    assert "task=" not in attrs and "f-7 (fact)" in body
    short_attrs, _ = block_of(only_artifacts.compressed or "", message.msg_id)
    assert 'artifacts="S0000abcd,f-7"' in short_attrs  # the shortened form keeps the references


def test_the_render_cache_is_keyed_by_the_fields_and_the_envelope():
    message = instruction()
    bare = _message_forms(message)
    declared = _message_forms(message, ("task_id",))
    assert bare[0] != declared[0] and 'task="t1.2"' in declared[0] and "task=" not in bare[0]
    assert _message_forms(message) == bare  # and back: the first rendering was not overwritten
    # the same id (content and position) with another envelope is rendered anew
    other = instruction(Instruction(task_id="t1.2", version=4, lineage=("t1", "t0")))
    assert other.msg_id == message.msg_id
    assert 'version="4"' in _message_forms(other, ("version",))[0]
    assert 'version="3"' in _message_forms(message, ("version",))[0]


def test_other_message_types_carry_no_envelope():
    conclusion = make_message(sender="searcher", msg_type=MsgType.CONCLUSION, content="It is 723 billion USD.",
                              round=1, seq=2, references=["S0000abcd"])
    text = message_item(conclusion, Priority.P2, frozenset(), ("task_id", "lineage", "artifacts", "version")).text
    assert text == message_item(conclusion, Priority.P2, frozenset()).text
