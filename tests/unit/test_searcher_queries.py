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
from briefroom.events import Fallback, ToolCall, ToolResult, read_events
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


def _one_search(tmp_path, query: str, corpus: Tool, cited: str):
    """A Searcher turn whose model searches `query` once, then reports a finding citing `cited`."""
    steps = [AIMessage(content="", tool_calls=[{"name": "local_search", "args": {"query": query}, "id": "c1"}]),
             AIMessage(content="done"), _findings(cited)]
    tools = {"local_search": corpus, "read_artifact": artifact_tool(ArtifactStore(tmp_path / "art")),
             "read_source": Tool("read_source", "read", ReadSourceArgs, ReadSourceResult, lambda args: None)}
    return _searcher_turn(tmp_path, steps, tools)


@pytest.mark.parametrize("query, searched_again", [
    ("https://www.googleapis.com/cloudcomputing/v3/docs?q=Cloud+2026", True),
    ("public cloud market 2026", False),
])
def test_the_question_is_searched_when_the_model_searched_for_something_else(tmp_path, query, searched_again):
    seen: list[str] = []
    turn, log = _one_search(tmp_path, query, _corpus_search(seen), "S0000abcd")
    published = search(turn, _instruction(), None, [])
    log.close()
    fallbacks = [e for e in read_events(tmp_path / "run.jsonl") if isinstance(e, Fallback)]
    assert seen == ([query, QUESTION] if searched_again else [query])
    assert len(fallbacks) == (1 if searched_again else 0)
    assert _logged_queries(tmp_path) == seen  # code's own search is in the log like the model's
    # either way the conclusion rests on the passage that answers the question
    assert any("723 billion" in m.body.content and "S0000abcd" in m.body.references for m in published)


def _logged_queries(tmp_path) -> list[str]:
    """The queries of the run log's local_search calls, each answered by a result event."""
    events = read_events(tmp_path / "run.jsonl")
    calls = [e for e in events if isinstance(e, ToolCall) and e.tool == "local_search"]
    answered = {e.call_id for e in events if isinstance(e, ToolResult) and e.ok}
    assert all(c.call_id in answered for c in calls)
    return [c.args["query"] for c in calls]


WHOLE = "How big is the public cloud market in 2026, and who is growing fastest?"


def _two_part_corpus(seen: list[str]) -> Tool:
    """The part's words find a newswire; only the whole question finds the brief."""
    def hit(source_id: str, chunk: str, text: str) -> SearchHit:
        return SearchHit(source_id=source_id, chunk_id=chunk, title=source_id, start=0, end=len(text), text=text,
                         score=0.5)

    def run(args):
        seen.append(args.query)
        newswire = hit("S0000aaaa", "n0", "A research firm forecasts 2026 public cloud spending at 680 billion dollars.")
        if "fastest" not in args.query:
            return LocalSearchResult(hits=[newswire])
        return LocalSearchResult(hits=[
            hit("S0000bbbb", "b0", "Public cloud spending is forecast to reach 723 billion dollars in 2026."),
            newswire,
            hit("S0000bbbb", "b1", "Among the providers, Azure is growing fastest, at 31% a year."),
            hit("S0000cccc", "c0", "Cloud costs worry one in three firms."),
        ])
    return Tool("local_search", "search", LocalSearchArgs, LocalSearchResult, run)


@pytest.mark.parametrize("goal, whole_searched", [(WHOLE, True), (QUESTION, False)])
def test_a_part_of_the_question_also_gets_what_the_whole_question_finds(tmp_path, goal, whole_searched):
    seen: list[str] = []
    turn, log = _one_search(tmp_path, QUESTION, _two_part_corpus(seen), "S0000aaaa")
    turn.state["charter"] = turn.charter.model_copy(update={"goal": goal})
    calls: list = []
    search(turn, _instruction(), None, calls)
    log.close()
    assert seen == ([QUESTION, WHOLE] if whole_searched else [QUESTION])
    assert _logged_queries(tmp_path) == seen
    passages = {p.chunk_id for r in turn.new_sources.values() for p in r.passages}
    # the brief's two passages join; the third new source is past WHOLE_QUESTION_HITS,
    # and the newswire the part already found is not sent twice
    assert passages == ({"n0", "b0", "b1"} if whole_searched else {"n0"})
