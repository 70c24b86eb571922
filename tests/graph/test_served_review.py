"""Plan review and clarifying questions in the served API: a served run with review on
pauses with an interrupt the client sees (the plan's task ids and questions, or the
clarifying questions), takes `Command(resume=answer)` in the CLI's answer schema, asks
again with the reason when the answer does not fit, and searches the plan its client
left; no client configures MCP servers.

Driven in process as the LangGraph server drives it (a checkpointer of the server's,
the test model); tests/e2e/test_langgraph_server.py does it through a real `langgraph dev`."""

from __future__ import annotations

import fcntl
import json
import sys
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from briefroom import runs
from briefroom.errors import ConfigError
from briefroom.events import BusMessage, PlanReview, RunPaused, ToolResult, read_events
from briefroom.protocol.messages import MsgType
from briefroom.server.langgraph_app import (
    CORPORA_ENV,
    MCP_CONFIG_ENV,
    RUNS_DIR_ENV,
    RunFailed,
    ServePolicy,
    build_served_graph,
    check_run,
)

SERVERS = Path(__file__).resolve().parent.parent / "mcp_servers"
QUESTION = "How big is the 2026 public cloud market and who grows fastest?"


@pytest.fixture
def policy(small_corpus, tmp_path) -> ServePolicy:
    return ServePolicy.from_env({CORPORA_ENV: str(small_corpus.parent), RUNS_DIR_ENV: str(tmp_path / "served")},
                                cwd=tmp_path)


@pytest.fixture(autouse=True)
def served_env(monkeypatch, data_dir):
    monkeypatch.setenv("BRIEFROOM_DATA_DIR", str(data_dir))
    monkeypatch.delenv(MCP_CONFIG_ENV, raising=False)


def interrupt_of(graph, config) -> dict:
    snapshot = graph.get_state(config)
    assert snapshot.next == ("review",), snapshot.next
    (waiting,) = [i for task in snapshot.tasks for i in task.interrupts]
    return waiting.value


def searched(run_dir: Path) -> list[str]:
    """What the Planner sent the Searcher to find, in order."""
    return [e.message.body.content for e in read_events(run_dir / "run.jsonl")
            if isinstance(e, BusMessage) and e.message.header.msg_type is MsgType.INSTRUCTION
            and e.message.header.sender == "planner"]


def test_a_served_run_pauses_at_its_plan_and_searches_the_plan_its_client_left(policy, small_corpus):
    graph = build_served_graph(policy, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "client-1"}}
    context = {"model": "test", "rounds": 1, "review_plan": True}
    chunks = list(graph.stream({"question": QUESTION, "corpus": [small_corpus.name]}, config=config,
                               context=context, stream_mode="updates"))
    assert "__interrupt__" in chunks[-1]  # what a streaming client sees
    asked = interrupt_of(graph, config)
    assert asked["kind"] == "plan_review" and asked["goal"] == QUESTION
    ids = [t["task_id"] for t in asked["tasks"]]
    assert ids and all(t["question"] for t in asked["tasks"]) and ids[0] == "t1.1"
    run_dir = Path(graph.get_state(config).values["run_dir"])
    assert runs.load(run_dir).status == "paused" and not searched(run_dir)  # nothing searched before the review
    assert [e.waiting_for for e in read_events(run_dir / "run.jsonl") if isinstance(e, RunPaused)] == ["plan_review"]

    # an answer that does not fit is asked again, with the reason; the run stays paused
    graph.invoke(Command(resume={"drop": ["t9.9"]}), config=config, context=context)
    again = interrupt_of(graph, config)
    assert "unknown task id 't9.9'" in again["error"] and again["tasks"] == asked["tasks"]
    graph.invoke(Command(resume="accept"), config=config, context=context)
    assert "a JSON object, not str" in interrupt_of(graph, config)["error"]
    assert runs.load(run_dir).status == "paused"

    edited = "What will public cloud spending be in 2026 worldwide?"
    answer = {"edit": {ids[0]: edited}, "add": ["How fast did Azure grow?"], "note": "worldwide figures"}
    if len(ids) > 1:
        answer["drop"] = [ids[-1]]
    out = graph.invoke(Command(resume=answer), config=config, context=context)
    assert out["report"].startswith("# ") and out["run_dir"] == str(run_dir)
    assert not graph.get_state(config).next and runs.load(run_dir).status == "done"
    (review,) = [e for e in read_events(run_dir / "run.jsonl") if isinstance(e, PlanReview)]
    after = [t.question for t in review.after]
    assert after[0] == edited and "How fast did Azure grow?" in after and review.note == "worldwide figures"
    assert searched(run_dir)[:len(after)] == after  # the Searcher was sent the plan the client left
    charter = json.loads((run_dir / "charter.json").read_text(encoding="utf-8"))
    assert "The user's note on the plan: worldwide figures" in charter["constraints"]


def test_a_served_run_asks_its_clarifying_questions_then_its_plan(policy, small_corpus):
    graph = build_served_graph(policy, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "client-2"}}
    context = {"model": "test", "rounds": 1, "review_plan": True, "clarify": True}
    graph.invoke({"question": QUESTION, "corpus": [small_corpus.name]}, config=config, context=context)
    first = interrupt_of(graph, config)
    assert first["kind"] == "clarify" and first["questions"]
    graph.invoke(Command(resume={"answers": ["x" * 301]}), config=config, context=context)
    assert "at most 300" in interrupt_of(graph, config)["error"]
    graph.invoke(Command(resume={"answers": ["Worldwide, in USD"]}), config=config, context=context)
    assert interrupt_of(graph, config)["kind"] == "plan_review"
    out = graph.invoke(Command(resume={"accept": True}), config=config, context=context)
    charter = json.loads((Path(out["run_dir"]) / "charter.json").read_text(encoding="utf-8"))
    assert any(c.endswith("the user answered: Worldwide, in USD") for c in charter["constraints"])


def test_a_rewritten_thread_state_cannot_answer_a_question_the_run_does_not_ask(policy, small_corpus):
    """The server's API lets a client rewrite its thread's state: a forged request
    reaches the run with an answer that would also fit the real one ({"accept": true}),
    and the run asks its own question again instead of taking it."""
    graph = build_served_graph(policy, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "client-3"}}
    context = {"model": "test", "rounds": 1, "review_plan": True}
    graph.invoke({"question": QUESTION, "corpus": [small_corpus.name]}, config=config, context=context)
    real = interrupt_of(graph, config)
    graph.update_state(config, {"waiting": {"kind": "clarify", "goal": QUESTION, "questions": ["Which year?"]}},
                       as_node="research")
    graph.invoke(Command(resume={"accept": True}), config=config, context=context)
    assert interrupt_of(graph, config) == real  # the run's own plan, still unanswered
    run_dir = Path(graph.get_state(config).values["run_dir"])
    assert not searched(run_dir) and runs.load(run_dir).status == "paused"
    graph.update_state(config, {"waiting": {"kind": "nonsense"}}, as_node="research")
    with pytest.raises(RunFailed, match="no question of a paused run"):
        graph.invoke(Command(resume={"accept": True}), config=config, context=context)


def test_an_answer_whose_run_cannot_go_on_is_not_left_for_the_clients_next_run(policy, small_corpus):
    """The run directory is in use when the answer arrives: the client hears why, and its
    next run on the thread is a new run, not the paused one taking that answer."""
    graph = build_served_graph(policy, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "client-6"}}
    context = {"model": "test", "rounds": 1, "review_plan": True}
    graph.invoke({"question": QUESTION, "corpus": [small_corpus.name]}, config=config, context=context)
    paused = Path(graph.get_state(config).values["run_dir"])
    with open(paused / "run.lock", "w") as held:  # another process holds the run
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(RunFailed, match="in use by another briefroom process"):
            graph.invoke(Command(resume={"accept": True}), config=config, context=context)
    out = graph.invoke({"question": QUESTION, "corpus": [small_corpus.name]}, config=config,
                       context={"model": "test", "rounds": 1})
    assert out["report"].startswith("# ") and Path(out["run_dir"]) != paused
    assert runs.load(paused).status == "paused"  # still waiting for its answer


def test_a_paused_served_run_resumed_by_name_asks_its_question_again(policy, small_corpus):
    graph = build_served_graph(policy, checkpointer=InMemorySaver())
    first = {"configurable": {"thread_id": "client-4"}}
    graph.invoke({"question": QUESTION, "corpus": [small_corpus.name]}, config=first,
                 context={"model": "test", "rounds": 1, "review_plan": True})
    name = Path(graph.get_state(first).values["run_dir"]).name
    other = {"configurable": {"thread_id": "client-5"}}  # another thread, as after a server restart
    graph.invoke({}, config=other, context={"resume": name})
    assert interrupt_of(graph, other)["kind"] == "plan_review"
    out = graph.invoke(Command(resume={"accept": True}), config=other, context={})
    assert out["report"].startswith("# ")


@pytest.mark.parametrize(("context", "message"), [
    ({"review_plan": "yes"}, "review_plan"),
    ({"clarify": 1}, "clarify"),
    ({"mcp_config": "/tmp/evil.json"}, "BRIEFROOM_MCP_CONFIG"),
    ({"resume": "some-run", "review_plan": True}, "a resumed run keeps its own"),
])
def test_review_and_mcp_options_from_a_client_are_checked(policy, small_corpus, context, message):
    with pytest.raises(ConfigError, match=message):
        check_run({"question": QUESTION, "corpus": [small_corpus.name]}, context, policy)


def test_the_operators_mcp_servers_are_checked_at_start_and_a_served_run_cites_their_tools(tmp_path):
    corpus = tmp_path / "corpora" / "berries"
    corpus.mkdir(parents=True)
    (corpus / "berries.md").write_text("# Berries of the north\n\nCloudberries grow in bogs and are picked by hand "
                                       "in late summer.\n", encoding="utf-8")
    mcp = tmp_path / "mcp.json"
    mcp.write_text("{not json", encoding="utf-8")
    env = {CORPORA_ENV: str(corpus.parent), RUNS_DIR_ENV: str(tmp_path / "served"), MCP_CONFIG_ENV: str(mcp)}
    with pytest.raises(ConfigError, match=MCP_CONFIG_ENV):  # an operator's mistake stops the server at start
        ServePolicy.from_env(env, cwd=tmp_path)
    stats = {"command": sys.executable, "args": [str(SERVERS / "stats_server.py")]}
    mcp.write_text(json.dumps({"mcpServers": {"stats": stats}}), encoding="utf-8")
    policy = ServePolicy.from_env(env, cwd=tmp_path)
    out = build_served_graph(policy).invoke({"question": "How many tonnes of cloudberries did Norland export in "
                                                         "2023?", "corpus": ["berries"]},
                                            context={"model": "test", "rounds": 1})
    run_dir = Path(out["run_dir"])
    results = [e for e in read_events(run_dir / "run.jsonl") if isinstance(e, ToolResult)
               and e.tool == "mcp__stats__lookup_statistic"]
    assert results and all(e.ok for e in results)
    assert "4,812 tonnes" in out["report"]  # only the MCP server knows this figure
    assert any(out["sources"][sid]["path"].startswith("mcp://stats/") for sid in out["cited"])
    # a served resume of a run whose MCP file the operator no longer configures is refused
    record = runs.load(run_dir)
    runs.update(run_dir, record, status="interrupted")
    narrowed = ServePolicy.from_env({k: v for k, v in env.items() if k != MCP_CONFIG_ENV}, cwd=tmp_path)
    with pytest.raises(ConfigError, match="no longer configures"):
        narrowed.served_run(run_dir.name)
