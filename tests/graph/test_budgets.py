"""Run-level token budget: finishing at 85%, a clean stop at 100%."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from briefroom.cli import app
from briefroom.config import Settings
from briefroom.errors import FatalBreaker
from briefroom.events import ErrorEvent, Event, Finishing, LlmCall, RunEnd, read_events
from briefroom.run import ResearchRequest, run_research

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"


def events(run_dir) -> list[Event]:
    return read_events(run_dir / "run.jsonl")


def test_at_85_percent_only_the_writer_works_and_the_run_finishes(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    result = run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out),
                          Settings(model="test", rounds=3, data_dir=data_dir, max_tokens=8000))
    log = events(out)
    start = next(i for i, e in enumerate(log) if isinstance(e, Finishing))
    after = [e.agent for e in log[start:] if isinstance(e, LlmCall)]
    assert after == ["writer"]
    assert result.state["report"].accepted
    assert isinstance(log[-1], RunEnd)
    used = sum(e.prompt_tokens + e.completion_tokens for e in log if isinstance(e, LlmCall))
    assert used < 8000 * 1.3  # the writer's one call may pass 85%, not run away


def test_at_100_percent_the_run_stops_with_a_clear_error(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(FatalBreaker, match="run token budget exhausted"):
        run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out),
                     Settings(model="test", rounds=3, data_dir=data_dir, max_tokens=1000))
    log = events(out)
    assert isinstance(log[-1], ErrorEvent) and log[-1].kind == "FatalBreaker"
    assert (out / "checkpoints.sqlite").is_file()
    result = CliRunner().invoke(app, ["research", QUESTION, "--corpus", str(small_corpus), "--model", "test",
                                      "--max-tokens", "1000", "--out", str(tmp_path / "cli"),
                                      "--data-dir", str(data_dir), "-q"])
    assert result.exit_code == 1
    assert "run token budget exhausted" in result.output


def test_naive_strategy_shows_everyone_everything(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out),
                 Settings(model="test", rounds=1, data_dir=data_dir, context="naive"))
    calls = [e for e in events(out) if isinstance(e, LlmCall)]
    assert {c.strategy for c in calls} == {"naive"}
    writer = next(c for c in calls if c.agent == "writer")
    text = json.dumps([m.model_dump(mode="json", exclude_unset=True) for m in writer.messages])
    # everyone's messages and every tool output, each as a data block
    assert 'kind=\\"tool_output\\"' in text
    assert 'kind=\\"message\\" sender=\\"planner\\" receiver=\\"searcher\\" type=\\"instruction\\"' in text
    assert "history" in writer.sections
