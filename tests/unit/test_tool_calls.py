"""Tool calls: parallel routing, retries with backoff, fallbacks, argument corrections."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, ToolMessage

from briefroom.agents.base import Turn
from briefroom.agents.registry import bus_for, discover
from briefroom.agents.run_context import RunContext
from briefroom.corpus.tools import LocalSearchArgs, LocalSearchResult, ReadSourceArgs, ReadSourceResult, SearchHit
from briefroom.errors import EngineeringFailure
from briefroom.events import ContractErrorEvent, Event, read_events
from briefroom.llm import ModelHandle, ModelPool
from briefroom.protocol.artifacts import ArtifactStore
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.calls import normalize_calls, run_calls
from briefroom.protocol.envelope import envelope
from briefroom.protocol.tools import Tool, ToolOutcome, artifact_tool, run_tool
from briefroom.records import Charter
from briefroom.runlog import RunLog
from tests.fakes import ScriptedChatModel

ids = st.one_of(st.none(), st.just(""), st.sampled_from(["a", "b", "call_1", "dup"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(ids, min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_every_parallel_result_goes_back_to_its_own_call(call_ids, rnd):
    calls = normalize_calls([{"name": "t", "args": {"n": i}, "id": cid} for i, cid in enumerate(call_ids)], "p")
    assert len({c["id"] for c in calls}) == len(calls) and all(c["id"] for c in calls)
    delays = [rnd.random() * 0.01 for _ in calls]  # calls finish in a random order

    def execute(call):
        time.sleep(delays[call["args"]["n"]])
        return ToolOutcome(call["id"], "t", call["args"], None, {"error": "x", "n": call["args"]["n"]})

    results = run_calls(calls, execute)
    assert [r.call_id for r in results] == [c["id"] for c in calls]  # no orphan, no duplicate, call order
    assert [r.error["n"] for r in results] == list(range(len(calls)))  # each result is its own call's


def test_a_call_whose_executor_crashes_still_gets_an_answer():
    calls = normalize_calls([{"name": "t", "args": {}, "id": "x"}, {"name": "t", "args": {}, "id": "y"}], "p")

    def execute(call):
        if call["id"] == "x":
            raise RuntimeError("boom")
        return ToolOutcome(call["id"], "t", {}, None, None)

    results = run_calls(calls, execute)
    assert [r.call_id for r in results] == ["x", "y"]
    assert "boom" in results[0].error["message"] and results[1].ok


def flaky(failures: int, transient: bool = True):
    state = {"calls": 0}

    def run(args):
        state["calls"] += 1
        if state["calls"] <= failures:
            if transient:
                raise ConnectionError("connection reset")
            raise EngineeringFailure("backend answered 404", tool="local_search")
        return LocalSearchResult(hits=[])

    return Tool("local_search", "flaky", LocalSearchArgs, LocalSearchResult, run, retries=2, backoff_s=0.1), state


def test_transient_failures_are_retried_with_exponential_backoff():
    tool, state = flaky(2)
    waits = []
    outcome = run_tool(tool, "c1", {"query": "cloud"}, sleep=waits.append)
    assert outcome.ok and outcome.attempts == 3 and state["calls"] == 3
    assert waits == [0.1, 0.2]
    tool, state = flaky(5)
    outcome = run_tool(tool, "c2", {"query": "cloud"}, sleep=waits.append)
    assert not outcome.ok and outcome.attempts == 3 and "connection reset" in outcome.error["message"]


def test_a_definite_failure_is_not_retried():
    tool, state = flaky(1, transient=False)
    outcome = run_tool(tool, "c1", {"query": "cloud"}, sleep=lambda s: None)
    assert not outcome.ok and state["calls"] == 1 and outcome.error["attempts"] == 1


def _search_tool():
    hit = SearchHit(source_id="S0000abcd", chunk_id="S0000abcd:0", title="Cloud", start=0, end=20,
                    text="Cloud spending grew 21% in 2026.", score=0.9)
    return Tool("local_search", "search", LocalSearchArgs, LocalSearchResult,
                lambda args: LocalSearchResult(hits=[hit.model_copy(update={"title": args.query})]))


def _missing_source():
    def run(args):
        raise EngineeringFailure(f"no source {args.source_id} in this run's corpus", tool="read_source")

    return Tool("read_source", "read", ReadSourceArgs, ReadSourceResult, run, fallback="local_search",
                fallback_args=lambda args, task: {"query": task[:400], "k": 4})


def test_a_failing_tool_runs_its_fallback_and_the_model_sees_both():
    tools = {"local_search": _search_tool(), "read_source": _missing_source()}
    outcome = run_tool(tools["read_source"], "c9", {"source_id": "S12345678"}, tools=tools, task="cloud growth")
    assert not outcome.ok and outcome.error["fallback"] == {"tool": "local_search", "ok": True}
    assert [o.call_id for o in outcome.outcomes()] == ["c9", "c9-fallback"]
    assert outcome.fallback.result.hits[0].title == "cloud growth"  # the fallback searched for the task
    env = envelope(outcome, TokenCounter())
    assert env.tool_call_id == "c9"
    assert "no source S12345678" in env.text and "Cloud spending grew 21%" in env.text
    # without the fallback tool available, the error stands alone
    alone = run_tool(tools["read_source"], "c10", {"source_id": "S12345678"}, tools={}, task="x")
    assert alone.fallback is None and "fallback" not in alone.error


def _turn(tmp_path, steps, tools):
    tools = {"read_source": _missing_source(), "read_artifact": artifact_tool(ArtifactStore(tmp_path / "art")),
             **tools}
    searcher = next(r for r in discover() if r.name == "searcher")
    model = ScriptedChatModel(steps, name="searcher")
    pool = ModelPool({"searcher": ModelHandle("searcher", "scripted", "scripted", model, "json_object_schema",
                                              32_000, label="scripted")})
    log = RunLog(tmp_path / "run.jsonl")
    ctx = RunContext(bus=bus_for([searcher]), models=pool, counter=TokenCounter(), log=log, tools=tools)
    state = {"charter": Charter(goal="cloud", acceptance_criteria=("cited",), roles=("searcher",), max_rounds=1),
             "round": 1, "whiteboard": [], "seen": {}}
    return Turn(role=searcher, state=state, ctx=ctx), model, log


def _events(tmp_path) -> list[Event]:
    return read_events(tmp_path / "run.jsonl")


def call(args, call_id="c"):
    return AIMessage(content="", tool_calls=[{"name": "local_search", "args": args, "id": call_id}])


def test_bad_tool_arguments_get_a_correction_prompt_and_are_counted(tmp_path):
    tools = {"local_search": _search_tool(), "read_source": _missing_source()}
    turn, model, log = _turn(tmp_path, [call({"query": "x"}), call({"query": "cloud", "k": 5}),
                                        call({"query": "cloud"}), AIMessage(content="done")], tools)
    outcomes = turn.use_tools("find cloud growth", max_turns=2)
    log.close()
    assert [o.ok for o in outcomes] == [False, False, True]
    errors = [e for e in _events(tmp_path) if isinstance(e, ContractErrorEvent)]
    assert [(e.kind, e.attempt, e.exhausted) for e in errors] == [("tool_arguments", 0, False),
                                                                            ("tool_arguments", 1, False)]
    # the correction reached the model, and corrections did not use up its two tool turns
    assert "did not match their schema" in model.calls[1]["messages"][-1].content
    assert len(model.calls) == 4


def test_after_two_corrections_the_error_stands_and_no_more_calls_are_made(tmp_path):
    tools = {"local_search": _search_tool()}
    turn, model, log = _turn(tmp_path, [call({"query": "x"}), call({"query": "y"}), call({"query": "z"})], tools)
    outcomes = turn.use_tools("find cloud growth", max_turns=3)
    log.close()
    assert [o.ok for o in outcomes] == [False, False, False]
    assert outcomes[-1].error["error"] == "contract_error"
    errors = [e for e in _events(tmp_path) if isinstance(e, ContractErrorEvent)]
    assert [e.exhausted for e in errors] == [False, False, True]
    assert len(model.calls) == 3  # 1 + 2 corrections, then stop
    model.assert_done()


def test_parallel_calls_in_one_reply_each_get_their_own_tool_message(tmp_path):
    tools = {"local_search": _search_tool(), "read_source": _missing_source()}
    reply = AIMessage(content="", tool_calls=[
        {"name": "local_search", "args": {"query": "first"}, "id": "same"},
        {"name": "read_source", "args": {"source_id": "S12345678"}, "id": "same"},  # a repeated id
        {"name": "local_search", "args": {"query": "third"}, "id": ""}])  # a missing one
    turn, model, log = _turn(tmp_path, [reply, AIMessage(content="done")], tools)
    turn.use_tools("find cloud growth", max_turns=2)
    log.close()
    sent = model.calls[1]["messages"]
    ai = next(m for m in sent if isinstance(m, AIMessage) and m.tool_calls)
    results = [m for m in sent if isinstance(m, ToolMessage)]
    assert [c["id"] for c in ai.tool_calls] == [m.tool_call_id for m in results]
    assert len({m.tool_call_id for m in results}) == 3
    assert "first" in results[0].content and "no source S12345678" in results[1].content
    assert "third" in results[2].content


def _fragments(index: int, shape: str) -> set[str]:
    """8-character pieces of the text holding a planted secret that come from the secret's
    random part, in whatever encoding the shape uses (a piece that also appears with another
    seed is the format's fixed text, not the secret)."""
    from tests.secret_samples import contexts, samples

    def windows(seed: int) -> set[str]:
        name, secret = samples(seed)[index]
        text = contexts(name, secret)[shape]
        return {text[i:i + 8] for i in range(len(text) - 7)}

    return windows(7) - windows(8)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 35), st.integers(0, 3000), st.integers(1, 400), st.sampled_from(["prose", "json", "env",
                                                                                        "http", "base64"]))
def test_trimming_never_exposes_a_fragment_of_a_planted_secret(index, padding, max_tokens, shape):
    from tests.secret_samples import contexts, samples

    name, secret = samples(7)[index]
    text = "Cloud spending grew 21% in 2026. " * (padding // 33) + contexts(name, secret)[shape] + " tail" * 50
    tool = Tool("read_source", "read", ReadSourceArgs, ReadSourceResult,
                lambda args: ReadSourceResult(source_id=args.source_id, title="t", path="p", text=text))
    outcome = run_tool(tool, "c", {"source_id": "S0000abcd"})
    env = envelope(outcome, TokenCounter(), max_tokens=max_tokens)
    leaked = [f for f in _fragments(index, shape) if f in env.text]
    assert not leaked, (name, shape, leaked[:3])


def test_the_model_seam_refuses_orphaned_missing_or_repeated_tool_results():
    import pytest
    from langchain_core.messages import HumanMessage

    from briefroom.protocol.calls import PairingError, check_pairing

    ask = AIMessage(content="", tool_calls=[{"name": "t", "args": {}, "id": "a"}, {"name": "t", "args": {}, "id": "b"}])
    good = [HumanMessage(content="q"), ask, ToolMessage(content="1", tool_call_id="b"),
            ToolMessage(content="2", tool_call_id="a"), HumanMessage(content="go on")]
    check_pairing(good)  # any order of results within the reply is fine
    with pytest.raises(PairingError, match="no preceding call"):
        check_pairing([HumanMessage(content="q"), ToolMessage(content="1", tool_call_id="a")])
    with pytest.raises(PairingError, match="twice"):
        check_pairing([ask, ToolMessage(content="1", tool_call_id="a"), ToolMessage(content="1", tool_call_id="a")])
    with pytest.raises(PairingError, match="not answered"):
        check_pairing([ask, ToolMessage(content="1", tool_call_id="a"), HumanMessage(content="next")])
    handle = ModelHandle("searcher", "scripted", "scripted", ScriptedChatModel([AIMessage(content="x")]),
                         "json_object_schema", 32_000)
    with pytest.raises(PairingError):
        handle.invoke([HumanMessage(content="q"), ToolMessage(content="1", tool_call_id="zz")])


def test_ids_reused_across_replies_are_renamed():
    used: set[str] = set()
    first = normalize_calls([{"name": "t", "args": {}, "id": "call_0"}], "p", used)
    second = normalize_calls([{"name": "t", "args": {}, "id": "call_0"}], "q", used)
    assert first[0]["id"] == "call_0" and second[0]["id"] != "call_0"


def test_a_failing_tools_error_and_bad_arguments_are_redacted_like_a_result():
    from tests.web_fixture import fake_aws_keys

    key_id, secret = fake_aws_keys(11)

    def leaky(args):
        raise EngineeringFailure(f"upstream refused aws_secret_access_key = {secret} for {args.source_id}",
                                 tool="read_source")

    tool = Tool("read_source", "read", ReadSourceArgs, ReadSourceResult, leaky)
    failed = run_tool(tool, "c1", {"source_id": "S0000abcd"}, sleep=lambda s: None)
    assert secret not in str(failed.error) and sum(failed.redactions.values()) >= 1
    bad = run_tool(tool, "c2", {"source_id": f"aws_secret_access_key = {secret}"})
    assert bad.error and secret not in str(bad.error) and secret not in str(bad.args)
    shown = envelope(failed, TokenCounter())
    assert secret not in shown.text
