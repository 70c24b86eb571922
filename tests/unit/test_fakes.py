"""The scripted model used by graph tests must itself be trustworthy."""

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from tests.fakes import ScriptedChatModel


class Answer(BaseModel):
    value: int


def test_records_calls_and_kwargs():
    model = ScriptedChatModel(["hello"])
    assert model.bind(response_format={"type": "json_object"}).invoke([HumanMessage(content="hi")]).content == "hello"
    assert model.calls[0]["kwargs"]["response_format"] == {"type": "json_object"}
    model.assert_done()


def test_with_structured_output_parses_into_the_schema():
    model = ScriptedChatModel([{"value": 3}])
    assert model.with_structured_output(Answer).invoke("q") == Answer(value=3)
    assert model.calls[0]["kwargs"]["response_format"]["schema"]["title"] == "Answer"


def test_bind_tools_passes_tool_definitions():
    def lookup(query: str) -> str:
        """Look something up."""
        return query

    model = ScriptedChatModel([AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"query": "x"}, "id": "1"}])])
    reply = model.bind_tools([lookup]).invoke("q")
    assert reply.tool_calls[0]["name"] == "lookup"
    assert model.calls[0]["kwargs"]["tools"][0]["function"]["name"] == "lookup"


def test_leftover_steps_and_extra_calls_fail():
    model = ScriptedChatModel(["a", "b"])
    model.invoke("q")
    with pytest.raises(AssertionError, match="1 scripted step"):
        model.assert_done()
    model.invoke("q")
    with pytest.raises(AssertionError, match="more times than scripted"):
        model.invoke("q")
