"""Parallel searchers: with `--parallel N` each sub-question is searched by its own
searcher instance, at the same time, with its own task, worktable and model handle;
their results join in a fixed order, so the report and a replay do not depend on timing.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from langchain_core.outputs import ChatResult
from typer.testing import CliRunner

from briefroom.cli import app
from briefroom.config import Settings
from briefroom.events import LlmCall, read_events
from briefroom.inspect import task_rows
from briefroom.llm import ModelHandle, ModelPool
from briefroom.models.cassette import Cassette
from briefroom.models.deterministic import TEST_PROVIDER_LABEL, DeterministicChatModel
from briefroom.run import ResearchRequest, run_research

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"
ROLES = ("planner", "searcher", "critic", "writer", "summarizer")


class MeetingModel(DeterministicChatModel):
    """The deterministic model, except that the first `expected` calls with tools (the
    searchers' first tool turns) wait for each other at a barrier: they can only pass if
    that many run at the same time. Run one after another, the first waits in vain and
    the barrier breaks: no timing decides the result."""

    def __init__(self, expected: int, **kwargs: Any):
        super().__init__(**kwargs)
        object.__setattr__(self, "barrier", threading.Barrier(expected, timeout=120))
        object.__setattr__(self, "waiting", [expected])

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        if kwargs.get("tools") and self.waiting[0] > 0:
            self.waiting[0] -= 1
            self.barrier.wait()  # raises BrokenBarrierError unless all arrive
        return super()._generate(messages, stop, run_manager, **kwargs)


def pool(model) -> ModelPool:
    return ModelPool({role: ModelHandle(role, "test", "test", model, "json_object_schema", 32_000,
                                       label=TEST_PROVIDER_LABEL)
                      for role in ROLES})


def sub_questions(run_dir: Path) -> int:
    return sum(1 for line in (run_dir / "run.jsonl").read_text().splitlines()
               if '"msg_type": "instruction"' in line and '"sender": "planner"' in line)


def test_searchers_run_at_the_same_time_and_the_report_is_the_same(small_corpus, data_dir, tmp_path):
    one = tmp_path / "one"
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=one),
                 Settings(model="test", rounds=1, data_dir=data_dir, memory=False))
    questions = sub_questions(one)
    assert questions >= 2
    many = tmp_path / "many"
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=many,
                                 models=pool(MeetingModel(expected=questions))),
                 Settings(rounds=1, data_dir=data_dir, memory=False, parallel=questions))
    assert (many / "report.md").read_text() == (one / "report.md").read_text()
    calls = [e for e in read_events(many / "run.jsonl") if isinstance(e, LlmCall)]
    workers = {e.agent for e in calls if e.agent.startswith("searcher")}
    assert workers == {f"searcher/{n}" for n in range(1, questions + 1)}


def test_each_instance_sees_only_its_own_task(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out),
                 Settings(model="test", rounds=1, data_dir=data_dir, memory=False, parallel=4))
    firsts: dict[str, str] = {}
    for event in read_events(out / "run.jsonl"):
        if isinstance(event, LlmCall) and event.agent.startswith("searcher/") and event.agent not in firsts:
            firsts[event.agent] = "\n".join(str(m.content) for m in event.messages)
    assert len(firsts) >= 2
    for prompt in firsts.values():
        assert prompt.count('type="instruction"') == 1, prompt
    # different instances were given different tasks
    tasks = {prompt.split('type="instruction"')[1][:200] for prompt in firsts.values()}
    assert len(tasks) == len(firsts)
    # inspect's task tree: each sub-task of the goal answered by the instance that had it
    rows = task_rows(read_events(out / "run.jsonl"))
    subtasks = [r for r in rows if r.task_id != "t0"]
    assert [r.path for r in subtasks] == [f"t0 > t1.{n}" for n in range(1, len(subtasks) + 1)]
    assert [r.workers for r in subtasks] == [(f"searcher/{n}",) for n in range(1, len(subtasks) + 1)]
    assert all(r.conclusions for r in subtasks)


def test_a_parallel_recording_replays_byte_identical(small_corpus, data_dir, tmp_path):
    scenario = tmp_path / "scenario"
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=tmp_path / "recorded",
                                 record=scenario),
                 Settings(model="test", rounds=1, data_dir=data_dir, memory=False, parallel=3))
    keys = {entry["role"] for entry in Cassette.load(scenario).entries}
    assert {"searcher/1", "searcher/2"} <= keys and "searcher" not in keys
    result = CliRunner().invoke(app, ["replay", str(scenario), "--check", "--out", str(tmp_path / "replayed"),
                                      "--data-dir", str(data_dir), "-q"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "replayed" / "report.md").read_text() == (scenario / "report.md").read_text()
