"""The deterministic `test` provider: valid, grounded, repeatable."""

from __future__ import annotations

import json

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

from briefroom.agents.structured import constrain_schema
from briefroom.corpus.tools import LocalSearchArgs, ReadSourceArgs
from briefroom.models.deterministic import DeterministicChatModel
from briefroom.protocol.prompt_assembly import mark_data
from briefroom.records import WriterDraft


def prompt():
    passage = mark_data("passage", "Cloud spending will reach 723 billion USD in 2026. Azure grew 31%.",
                        source="S0000abcd", title="T")
    return [SystemMessage(content="## Charter\nGoal: How big is cloud spending in 2026?"),
            HumanMessage(content=f"## Sources\n{passage}\n\n## Current task\nWrite the report.")]


def test_structured_output_is_schema_valid_and_uses_prompt_material():
    schema = constrain_schema(WriterDraft.model_json_schema(), {"source_ids": ["S0000abcd"]})
    model = DeterministicChatModel().bind(response_format={"type": "json_object", "schema": schema})
    reply = model.invoke(prompt())
    draft = WriterDraft.model_validate(json.loads(reply.content))
    assert "723 billion USD" in draft.short_answer.text
    assert draft.short_answer.source_ids == ["S0000abcd"]


def test_same_input_same_output():
    schema = WriterDraft.model_json_schema()
    model = DeterministicChatModel().bind(response_format={"type": "json_object", "schema": schema})
    assert model.invoke(prompt()).content == model.invoke(prompt()).content


def test_calls_tools_with_valid_arguments_then_finishes():
    from briefroom.corpus.tools import LocalSearchResult, ReadSourceResult
    from briefroom.protocol.tools import Tool

    tools = [Tool("local_search", "search", LocalSearchArgs, LocalSearchResult, lambda a: a).definition(),
             Tool("read_source", "read", ReadSourceArgs, ReadSourceResult, lambda a: a).definition()]
    model = DeterministicChatModel().bind(tools=tools)
    first = model.invoke([HumanMessage(content="## Current task\nFind cloud market size")])
    assert [c["name"] for c in first.tool_calls] == ["local_search"]
    LocalSearchArgs.model_validate(first.tool_calls[0]["args"])
    hits = json.dumps({"hits": [{"source_id": "S0000abcd", "text": "Cloud grew 21%."}]})
    second = model.invoke([HumanMessage(content="## Current task\nFind cloud market size"), first,
                           ToolMessage(content=mark_data("tool_result", hits), tool_call_id=first.tool_calls[0]["id"])])
    assert [c["name"] for c in second.tool_calls] == ["read_source"]
    assert ReadSourceArgs.model_validate(second.tool_calls[0]["args"]).source_id == "S0000abcd"
    third = model.invoke([HumanMessage(content="x"), first, ToolMessage(content="r", tool_call_id="a"), second,
                          ToolMessage(content="r", tool_call_id="b")])
    assert not third.tool_calls
