"""A reasoning model's `<think>` block never reaches a role as the answer."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from briefroom.agents.structured import parse_json_object
from briefroom.llm import ModelHandle
from briefroom.models.reasoning import without_reasoning
from tests.fakes import ScriptedChatModel


@pytest.mark.parametrize(("reply", "answer"), [
    ("<think>\nThe registry says 1.84; the blog says 2.9.\n</think>\n\nThe answer.", "The answer."),
    ("  <THINK>weigh them</THINK>The answer.", "The answer."),
    # R1's template opens the block in the prompt: only the closing tag comes back
    ("The registry says 1.84; the blog says 2.9.\n</think>\nThe answer.", "The answer."),
    # cut off while thinking: no answer was given
    ("<think>\nFirst, the registry says", ""),
    ("The answer, with no thinking.", "The answer, with no thinking."),
    ("An answer that mentions <think> in passing.", "An answer that mentions <think> in passing."),
])
def test_the_thinking_before_an_answer_is_taken_out(reply, answer):
    assert without_reasoning(reply) == answer


def _handle(reply: str) -> ModelHandle:
    model = ScriptedChatModel([reply], name="writer")
    return ModelHandle("writer", "scripted", "scripted", model, "json_object_schema", 32_000, label="scripted")


def test_a_structured_reply_is_read_from_the_answer_not_from_the_thinking():
    reply = ('<think>Maybe {"claims": [{"text": "2.9 million were installed"}]}? No: the registry.</think>\n'
             '{"claims": [{"text": "1.84 million were installed"}]}')
    answer, _ = _handle(reply).invoke([HumanMessage(content="How many were installed?")], schema={"type": "object"})
    assert parse_json_object(str(answer.content)) == {"claims": [{"text": "1.84 million were installed"}]}


def test_a_tool_call_rehearsed_in_the_thinking_is_not_run():
    tools = [{"type": "function", "function": {"name": "local_search", "description": "search",
                                               "parameters": {"type": "object", "properties": {
                                                   "query": {"type": "string"}}}}}]
    reply = '<think>I could call {"name": "local_search", "arguments": {"query": "blog"}}.</think>Nothing to search.'
    answer, _ = _handle(reply).invoke([HumanMessage(content="Search?")], tools=tools)
    assert answer.tool_calls == [] and answer.content == "Nothing to search."
