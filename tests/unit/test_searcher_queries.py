"""The Searcher's own search: a query about something else (a URL, a word from the prompt)
does not count, so the question itself is searched and the round rests on passages
that answer it."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage

from briefroom.agents.base import Turn
from briefroom.agents.registry import bus_for, discover
from briefroom.agents.run_context import RunContext
from briefroom.agents.searcher import search, searched_for
from briefroom.corpus.tools import LocalSearchArgs, LocalSearchResult, ReadSourceArgs, ReadSourceResult, SearchHit
from briefroom.events import Fallback, read_events
from briefroom.llm import ModelHandle, ModelPool
from briefroom.protocol.artifacts import ArtifactStore
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.messages import AgentMessage, MsgType, make_message
from briefroom.protocol.tools import Tool, artifact_tool
from briefroom.records import Charter
from briefroom.runlog import RunLog
from tests.fakes import ScriptedChatModel

QUESTION = "How big is the public cloud market in 2026?"


@pytest.mark.parametrize("query", [
    "https://www.googleapis.com/cloudcomputing/v3/docs?q=1+Google+Cloud+Business+2026&api-key={your_api_key}",
    "www.example.com/cloud-market-2026",
    "test.com/v3",
    "planner",
    "SHOW ALL",
    "S1.1",
])
def test_a_query_about_something_else_is_not_a_search_for_the_question(query):
    assert not searched_for(query, QUESTION)


@pytest.mark.parametrize("query, question", [
    ("public cloud market size 2026", QUESTION),
    ("cloud", QUESTION),
    ("2025年澜州市城市轨道交通日均客运量", "2025年澜州市城市轨道交通日均客运量是多少？"),
])
def test_plain_words_from_the_question_are_a_search_for_it(query, question):
    assert searched_for(query, question)


def _corpus_search(seen: list[str]) -> Tool:
    """A corpus whose only relevant passage is found by the question's words."""
    def run(args):
        seen.append(args.query)
        relevant = "cloud" in args.query.lower() and "://" not in args.query
        text = ("The public cloud market will reach 723 billion dollars in 2026." if relevant
                else "Googleapis documentation lists version three endpoints.")
        return LocalSearchResult(hits=[SearchHit(source_id="S0000abcd" if relevant else "S0000ffff",
                                                 chunk_id="c0", title="t", start=0, end=len(text), text=text,
                                                 score=0.5)])
    return Tool("local_search", "search", LocalSearchArgs, LocalSearchResult, run)


def _searcher_turn(tmp_path, steps, tools):
    team = list(discover())
    searcher = next(r for r in team if r.name == "searcher")
    model = ScriptedChatModel(steps, name="searcher")
    pool = ModelPool({"searcher": ModelHandle("searcher", "scripted", "scripted", model, "json_object_schema",
                                              32_000, label="scripted")})
    log = RunLog(tmp_path / "run.jsonl")
    ctx = RunContext(bus=bus_for(team), models=pool, counter=TokenCounter(), log=log, tools=tools)
    state = {"charter": Charter(goal=QUESTION, acceptance_criteria=("cited",), roles=("searcher",), max_rounds=1),
             "round": 1, "whiteboard": [], "seen": {}}
    return Turn(role=searcher, state=state, ctx=ctx), log


def _instruction() -> AgentMessage:
    return make_message(sender="planner", receiver="searcher", msg_type=MsgType.INSTRUCTION, content=QUESTION,
                        round=1, seq=1)


def _findings(source_id: str) -> AIMessage:
    return AIMessage(content=json.dumps({"findings": [{
        "claim": "The public cloud market will reach 723 billion dollars in 2026.",
        "source_ids": [source_id], "subject": "cloud market size"}]}))


@pytest.mark.parametrize("query, searched_again", [
    ("https://www.googleapis.com/cloudcomputing/v3/docs?q=Cloud+2026", True),
    ("public cloud market 2026", False),
])
def test_the_question_is_searched_when_the_model_searched_for_something_else(tmp_path, query, searched_again):
    seen: list[str] = []
    steps = [AIMessage(content="", tool_calls=[{"name": "local_search", "args": {"query": query}, "id": "c1"}]),
             AIMessage(content="done"), _findings("S0000abcd")]
    tools = {"local_search": _corpus_search(seen), "read_artifact": artifact_tool(ArtifactStore(tmp_path / "art")),
             "read_source": Tool("read_source", "read", ReadSourceArgs, ReadSourceResult, lambda args: None)}
    turn, log = _searcher_turn(tmp_path, steps, tools)
    published = search(turn, _instruction(), None, [])
    log.close()
    fallbacks = [e for e in read_events(tmp_path / "run.jsonl") if isinstance(e, Fallback)]
    assert seen == ([query, QUESTION] if searched_again else [query])
    assert len(fallbacks) == (1 if searched_again else 0)
    # either way the conclusion rests on the passage that answers the question
    assert any("723 billion" in m.body.content and "S0000abcd" in m.body.references for m in published)
