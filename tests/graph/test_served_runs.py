"""Served runs are runs like any other: built and finished by briefroom.run's composition root,
they read and write long-term memory, checkpoint on their own thread and resume, from
the server (`context={"resume": <run>}`) or with `briefroom resume`; a client streaming with
subgraphs sees every role's update under the served node's namespace.

The graph is driven in process, as the LangGraph server drives it, with the test model;
tests/e2e/test_langgraph_server.py drives it through a real `langgraph dev`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from briefroom import runs
from briefroom.cli import app
from briefroom.events import LlmCall, MemoryRead, MemoryWrite, RunEnd, RunResume, RunStart, read_events
from briefroom.server.langgraph_app import CORPORA_ENV, RUNS_DIR_ENV, RunFailed, ServePolicy, build_served_graph

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"
ROLES = {"planner", "searcher", "critic", "writer", "round_end"}


@pytest.fixture
def policy(small_corpus, tmp_path) -> ServePolicy:
    return ServePolicy.from_env({CORPORA_ENV: str(small_corpus.parent), RUNS_DIR_ENV: str(tmp_path / "served")},
                                cwd=tmp_path)


@pytest.fixture
def served_env(monkeypatch, tmp_path, data_dir):
    """The server's own environment: the data directory its runs keep memory in."""
    monkeypatch.setenv("BRIEFROOM_DATA_DIR", str(data_dir))


def one_story(run_dir: Path) -> list:
    log = read_events(run_dir / "run.jsonl")
    assert [e.seq for e in log] == list(range(1, len(log) + 1))
    assert sum(isinstance(e, RunStart) for e in log) == 1 and isinstance(log[-1], RunEnd)
    return log


def test_a_served_client_sees_each_role_update_under_the_served_node(policy, small_corpus, served_env):
    graph = build_served_graph(policy)
    parts = list(graph.stream({"question": QUESTION, "corpus": [small_corpus.name]},
                              context={"model": "test", "rounds": 1}, stream_mode=["updates", "custom"],
                              subgraphs=True))
    inner = [chunk for ns, mode, chunk in parts if mode == "updates" and ns]
    assert all(ns[0].startswith("research:") for ns, mode, _ in parts if ns)
    assert ROLES <= {node for chunk in inner for node in chunk}
    progress = [chunk["progress"] for ns, mode, chunk in parts if mode == "custom"]
    assert {"index", "planner", "searcher", "writer"} <= {step["agent"] for step in progress}
    last_ns, last_mode, last = parts[-1]
    assert last_ns == () and last_mode == "updates" and last["research"]["report"].startswith("# ")
    # without subgraphs, the client sees the served graph's own update only
    plain = list(graph.stream({"question": QUESTION, "corpus": [small_corpus.name]},
                              context={"model": "test", "rounds": 1}, stream_mode="updates"))
    assert [list(chunk) for chunk in plain] == [["research"]]


def test_served_runs_remember_what_an_earlier_served_run_verified(policy, small_corpus, monkeypatch, tmp_path):
    monkeypatch.setenv("BRIEFROOM_DATA_DIR", str(tmp_path / "server-data"))  # a memory of their own
    graph = build_served_graph(policy)
    first = graph.invoke({"question": QUESTION, "corpus": [small_corpus.name]}, context={"model": "test",
                                                                                         "rounds": 1})
    written = [e for e in read_events(Path(first["run_dir"]) / "run.jsonl")
               if isinstance(e, MemoryWrite) and e.accepted]
    assert {e.zone for e in written} == {"fact", "vector", "skill"}

    second = graph.invoke({"question": QUESTION, "corpus": [small_corpus.name]}, context={"model": "test",
                                                                                          "rounds": 1})
    log = read_events(Path(second["run_dir"]) / "run.jsonl")
    read = next(e for e in log if isinstance(e, MemoryRead))
    assert {i.zone for i in read.items} >= {"vector", "skill"}
    planner = next(e for e in log if isinstance(e, LlmCall) and e.agent == "planner")
    prompt = json.dumps([m.model_dump(mode="json", exclude_unset=True) for m in planner.messages])
    assert "## Memory (from earlier runs)" in prompt and Path(first["run_dir"]).name[:20] in prompt
    assert second["report"] == (Path(second["run_dir"]) / "report.md").read_text(encoding="utf-8")


def stopped_by_its_budget(graph, small_corpus, policy) -> Path:
    with pytest.raises(RunFailed, match="budget"):
        graph.invoke({"question": QUESTION, "corpus": [small_corpus.name]},
                     context={"model": "test", "max_tokens": 1000})
    [run_dir] = list(policy.runs_dir.iterdir())
    record = runs.load(run_dir)
    assert record.status == "failed" and record.resumable and (run_dir / "checkpoints.sqlite").is_file()
    return run_dir


def test_a_served_run_stopped_by_its_budget_resumes_on_the_server(policy, small_corpus, served_env):
    graph = build_served_graph(policy)
    run_dir = stopped_by_its_budget(graph, small_corpus, policy)
    calls_before = [e for e in read_events(run_dir / "run.jsonl") if isinstance(e, LlmCall)]

    out = graph.invoke({}, context={"resume": run_dir.name, "max_tokens": 200_000})
    assert out["run_dir"] == str(run_dir) and out["report"] == (run_dir / "report.md").read_text(encoding="utf-8")
    assert runs.load(run_dir).status == "done" and runs.load(run_dir).settings["max_tokens"] == 200_000
    log = one_story(run_dir)
    resume = next(e for e in log if isinstance(e, RunResume))
    assert resume.after.event == "error" and resume.after.kind == "FatalBreaker"
    assert [e for e in log if isinstance(e, LlmCall)][:len(calls_before)] == calls_before  # nothing done twice
    with pytest.raises(RunFailed, match="already complete"):
        graph.invoke({}, context={"resume": run_dir.name})


def test_a_served_run_resumes_with_briefroom_resume(policy, small_corpus, served_env):
    run_dir = stopped_by_its_budget(build_served_graph(policy), small_corpus, policy)
    result = CliRunner().invoke(app, ["resume", str(run_dir), "--max-tokens", "200000", "--json", "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "done"
    one_story(run_dir)


@pytest.mark.parametrize("context, expected", [
    ({"resume": "../elsewhere"}, "resume: the name of a served run (the last part of its run_dir), not a path"),
    ({"resume": "/etc"}, "resume: the name of a served run"),
    ({"resume": "a/../../b"}, "resume: the name of a served run"),
    ({"resume": 7}, "resume: Input should be a valid string"),
    ({"resume": "no-such-run"}, "no served run is named no-such-run"),
    ({"resume": "x", "rounds": 5}, "rounds: a resumed run keeps its own"),
    ({"resume": "x", "model": "/m/x.gguf"}, "model: a model name"),
])
def test_a_resume_names_only_a_served_run(policy, served_env, context, expected):
    with pytest.raises(RunFailed) as caught:
        build_served_graph(policy).invoke({"question": QUESTION, "corpus": ["notes"]}, context=context)
    assert expected in str(caught.value), caught.value


def test_a_served_run_resumes_only_inside_the_allow_lists(policy, small_corpus, served_env, tmp_path):
    run_dir = stopped_by_its_budget(build_served_graph(policy), small_corpus, policy)
    other = tmp_path / "other-corpora"
    other.mkdir()
    narrowed = ServePolicy(corpora=(other,), runs_dir=policy.runs_dir)
    with pytest.raises(RunFailed, match="outside the folders this server may read"):
        build_served_graph(narrowed).invoke({}, context={"resume": run_dir.name, "max_tokens": 200_000})
    (policy.runs_dir / "linked").symlink_to(run_dir, target_is_directory=True)
    with pytest.raises(RunFailed, match="no served run is named linked"):
        build_served_graph(policy).invoke({}, context={"resume": "linked", "max_tokens": 200_000})
    assert runs.load(run_dir).status == "failed"


def test_a_served_run_keeps_its_checkpoints_off_the_servers_thread(policy, small_corpus, served_env):
    """The server lends the served graph its checkpointer: the research graph must not
    write into it (there, `briefroom resume` could not find it), but into the run's own."""
    from langgraph.checkpoint.memory import InMemorySaver

    servers = InMemorySaver()
    graph = build_served_graph(policy, checkpointer=servers)
    config = {"configurable": {"thread_id": "client-thread"}}
    with pytest.raises(RunFailed, match="budget"):
        graph.invoke({"question": QUESTION, "corpus": [small_corpus.name]}, config,
                     context={"model": "test", "max_tokens": 1000})
    assert {c.config["configurable"]["checkpoint_ns"] for c in servers.list(None)} == {""}
    [run_dir] = list(policy.runs_dir.iterdir())
    # on the same thread, whose state still holds the question: the context says resume
    out = graph.invoke({}, config, context={"resume": run_dir.name, "max_tokens": 200_000})
    assert out["report"].startswith("# ") and runs.load(run_dir).status == "done"
    assert graph.get_state(config).values["run_dir"] == str(run_dir)
    one_story(run_dir)


def test_a_served_client_reads_each_draft_and_the_critics_verdict_before_the_run_ends(policy, small_corpus,
                                                                                      served_env):
    from briefroom.cli.drafts import report_in
    from briefroom.records import Report

    graph = build_served_graph(policy)
    parts = list(graph.stream({"question": QUESTION, "corpus": [small_corpus.name]},
                              context={"model": "test", "rounds": 1}, stream_mode="updates", subgraphs=True))
    reports = [(i, report_in(chunk)) for i, (ns, chunk) in enumerate(parts) if ns and report_in(chunk)]
    assert reports and all(isinstance(r, Report) for _, r in reports)
    drafts = [i for i, r in reports if not r.accepted]
    verdicts = [i for i, r in reports if r.accepted]
    assert drafts and verdicts and drafts[0] < verdicts[0] < len(parts) - 1  # streamed as written, not at the end
    final = parts[-1][1]["research"]["report"]
    accepted = [r for _, r in reports if r.accepted][-1]
    assert accepted.markdown.split("\n---")[0] in final
