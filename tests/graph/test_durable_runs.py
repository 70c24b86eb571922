"""Durable runs: resume after a budget stop, Ctrl-C and a pause; replay up to a round,
then a live model; run records for `runs list|show`. (SIGKILL: tests/e2e/test_kill_resume.py.)"""

from __future__ import annotations

import json
import shutil
import sys

import pytest
from typer.testing import CliRunner

from briefroom import runs
from briefroom.cli import app
from briefroom.config import Settings
from briefroom.errors import FatalBreaker
from briefroom.events import (
    Event,
    LlmCall,
    RunEnd,
    RunPaused,
    RunRestart,
    RunResume,
    RunStart,
    parse_event,
    read_events,
)
from briefroom.run import ResearchRequest, resume_research, run_research
from tests.conftest import SCENARIOS

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"
runner = CliRunner()

# A plugin role that takes its turn after the round's report and adds one finding, so
# the Critic and Writer have a second round of work (the test provider's team otherwise
# finishes in one round).
LATECOMER = '''
from pathlib import Path
from briefroom.agents.base import Role
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import MsgType


def step(turn):
    facts = turn.all_facts()
    if facts and not turn.own_messages():
        turn.publish(MsgType.CONCLUSION, facts[-1].text, references=[facts[-1].source_id])


ROLE = Role(name="latecomer", prompt=Path(__file__).with_name("latecomer.md"),
            subscriptions=(Subscription(msg_type=MsgType.CONCLUSION, senders=("searcher",)),),
            publications=(MsgType.CONCLUSION,), step=step)
'''


def events(run_dir, name="run.jsonl") -> list[Event]:
    path = run_dir / name
    return read_events(path) if path.is_file() else []


def assert_log_is_one_story(run_dir):
    """Every event once: seq runs 1..n with no gap or repeat, one run_start, one run_end."""
    log = events(run_dir)
    assert [e.seq for e in log] == list(range(1, len(log) + 1))
    assert sum(isinstance(e, RunStart) for e in log) == 1
    assert sum(isinstance(e, RunEnd) for e in log) == 1 and isinstance(log[-1], RunEnd)
    return log


def latecomer_roles(tmp_path):
    roles = tmp_path / "roles"
    roles.mkdir(exist_ok=True)
    (roles / "latecomer.py").write_text(LATECOMER)
    (roles / "latecomer.md").write_text("You add a late finding.\n{{data_notice}}\n")
    return roles


def test_a_run_stopped_by_its_budget_resumes_with_a_larger_one_and_loses_nothing(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(FatalBreaker):
        run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out),
                     Settings(model="test", rounds=3, data_dir=data_dir, max_tokens=1000))
    record = runs.load(out)
    assert record.status == "failed" and "budget" in record.error
    before = events(out)
    calls_before = [e for e in before if isinstance(e, LlmCall)]
    assert calls_before  # work was done before the stop

    result = resume_research(out, {"max_tokens": 200_000})
    assert result.report and (out / "report.md").read_text() == result.report
    assert runs.load(out).status == "done" and runs.load(out).settings["max_tokens"] == 200_000
    log = assert_log_is_one_story(out)
    resume = next(e for e in log if isinstance(e, RunResume))
    assert resume.after.event == "error" and resume.after.kind == "FatalBreaker"
    # what was done before the stop is still there, in order, and was not done again
    assert log[:len(calls_before)] == before[:len(calls_before)]
    assert [e.seq for e in log if isinstance(e, LlmCall)][:len(calls_before)] == \
        [e.seq for e in calls_before]
    # the ledger carried the tokens over: the resumed run knows what it had spent
    assert resume.seq > calls_before[-1].seq


def test_ctrl_c_checkpoints_prints_the_resume_command_and_resume_finishes(small_corpus, data_dir, tmp_path,
                                                                          monkeypatch, capsys):
    from briefroom import cli

    out = tmp_path / "run"
    monkeypatch.setenv("BRIEFROOM_CRASH", "llm_call:3:int")  # a real SIGINT after the 3rd model reply
    monkeypatch.setattr(sys, "argv", ["briefroom", "research", QUESTION, "--corpus", str(small_corpus),
                                      "--model", "test", "--out", str(out), "--data-dir", str(data_dir), "-q"])
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    assert stopped.value.code == 130
    assert f"Resume with: briefroom resume {out}" in capsys.readouterr().err
    assert runs.load(out).status == "interrupted"
    monkeypatch.delenv("BRIEFROOM_CRASH")

    result = runner.invoke(app, ["resume", str(out), "--json", "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "done"
    log = assert_log_is_one_story(out)
    assert next(e for e in log if isinstance(e, RunResume)).after.event == "interrupted"
    again = runner.invoke(app, ["resume", str(out)])
    assert again.exit_code == 0 and "already complete" in again.output


def test_replay_until_a_round_then_a_live_model_continues(small_corpus, data_dir, tmp_path):
    scenario = tmp_path / "scenario"
    recorded = run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=tmp_path / "rec",
                                            record=scenario, roles_dirs=[latecomer_roles(tmp_path)]),
                            Settings(model="test", rounds=3, data_dir=data_dir))
    assert recorded.state["round"] == 2 and (scenario / "roles").is_dir()
    shutil.rmtree(tmp_path / "roles")  # the scenario carries its own copy of the role

    out = tmp_path / "replay"
    result = runner.invoke(app, ["replay", str(scenario), "--until-round", "1", "--model", "test", "--out", str(out),
                                 "--data-dir", str(data_dir), "--json", "-q"])
    assert result.exit_code == 0, result.output
    log = assert_log_is_one_story(out)
    providers = {(e.round, e.provider) for e in log if isinstance(e, LlmCall)}
    assert providers == {(1, "replay"), (2, "test")}  # round 1 from the cassette, round 2 live
    # the live model is the deterministic one that recorded: the report is the recorded one
    assert (out / "report.md").read_text() == (scenario / "report.md").read_text()
    assert runs.load(out).scenario is None and runs.load(out).status == "done"
    paused = [e for e in events(out, "run.interrupted.jsonl") if isinstance(e, RunPaused)]
    assert paused and next(e for e in log if isinstance(e, RunResume)).after.event == "run_paused"

    bad = runner.invoke(app, ["replay", str(scenario), "--until-round", "1", "--check"])
    assert bad.exit_code == 1 and "--check" in bad.output
    bad = runner.invoke(app, ["replay", str(scenario), "--until-round", "1"])
    assert bad.exit_code == 1 and "--model" in bad.output


def test_replay_divergence_shows_a_diff_per_prompt_section():
    from briefroom.models.cassette import section_diff

    def prompt(board: str) -> list[dict]:
        return [{"type": "system", "content": "## Role\nYou plan.\n\n## Charter\nGoal: cloud"},
                {"type": "human", "content": f"## Whiteboard (messages routed to you)\n{board}\n\n## Current task\n"
                                             "Plan."}]

    diff = section_diff(prompt("m1 cloud is 723"), prompt("m1 cloud is 724"), "planner call #2")
    assert diff.startswith("1 of 4 prompt section(s) differ (3 identical)")
    assert "--- recorded planner call #2: message 2 (human) / Whiteboard" in diff
    assert "-m1 cloud is 723" in diff and "+m1 cloud is 724" in diff
    assert "Charter" not in diff and "Current task" not in diff


def test_runs_list_and_show_tell_the_status_and_the_resume_command(small_corpus, data_dir, tmp_path):
    root = tmp_path / "runs"
    # no memory: what the first run verified would answer the second's questions and
    # save it the tokens this test needs it to run out of
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=root / "a-done"),
                 Settings(model="test", rounds=1, data_dir=data_dir, memory=False))
    with pytest.raises(FatalBreaker):
        run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=root / "b-failed"),
                     Settings(model="test", rounds=3, data_dir=data_dir, max_tokens=1000, memory=False))
    (root / "c-junk").mkdir()
    (root / "c-junk" / "run.json").write_text("{not json")

    listed = runner.invoke(app, ["runs", "list", str(root), "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {r["run_dir"].rsplit("/", 1)[-1]: r for r in json.loads(listed.stdout)}
    assert rows["a-done"]["status"] == "done" and rows["a-done"]["report"] is True
    assert rows["b-failed"]["status"] == "failed" and rows["c-junk"]["status"] == "unknown"

    shown = runner.invoke(app, ["runs", "show", str(root / "b-failed"), "--json"])
    info = json.loads(shown.stdout)
    assert info["resume"] == f"briefroom resume {root / 'b-failed'}" and info["model_calls"] > 0
    assert "budget" in info["error"]
    assert json.loads(runner.invoke(app, ["runs", "show", str(root / "a-done"), "--json"]).stdout)["resume"] is None
    text = runner.invoke(app, ["runs", "list", str(root)])
    assert "a-done" in text.output and "failed" in text.output

    for args, message in ((["runs", "show", str(root / "nope")], "no such run directory"),
                          (["runs", "show", str(root / "c-junk")], "not a valid run record"),
                          (["runs", "list", str(root / "nope")], "no such folder"),
                          (["resume", str(tmp_path)], "has no run.json")):
        result = runner.invoke(app, args)
        assert result.exit_code == 1 and message in result.output, (args, result.output)


def test_a_recording_cannot_be_resumed_and_a_busy_run_cannot_be_entered(small_corpus, data_dir, tmp_path):
    import fcntl

    out = tmp_path / "run"
    with pytest.raises(FatalBreaker):
        run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out,
                                     record=tmp_path / "scenario"),
                     Settings(model="test", rounds=3, data_dir=data_dir, max_tokens=1000))
    with pytest.raises(Exception, match="a recording cannot be resumed"):
        resume_research(out)

    other = tmp_path / "other"
    with pytest.raises(FatalBreaker):
        run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=other),
                     Settings(model="test", rounds=3, data_dir=data_dir, max_tokens=1000))
    with open(other / "run.lock", "w") as held:  # another process holds the run
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(Exception, match="in use by another briefroom process"):
            resume_research(other, {"max_tokens": 100_000})
    assert resume_research(other, {"max_tokens": 200_000}).report


def test_shipped_scenario_keeps_replaying_with_a_run_record(data_dir, tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["replay", str(SCENARIOS / "cloud-market"), "--check", "--out", str(out),
                                 "--data-dir", str(data_dir), "-q"])
    assert result.exit_code == 0, result.output
    record = runs.load(out)
    assert record.status == "done" and record.scenario == str((SCENARIOS / "cloud-market").resolve())
    assert "api_key" not in record.settings


@pytest.mark.parametrize("damage", ["torn", "garbage"])
def test_resume_sets_a_torn_or_garbled_log_tail_aside_and_the_log_stays_readable(small_corpus, data_dir, tmp_path,
                                                                                 damage):
    from briefroom.runlog import load_events

    out = tmp_path / "run"
    with pytest.raises(FatalBreaker):
        run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out),
                     Settings(model="test", rounds=3, data_dir=data_dir, max_tokens=1000))
    log_path = out / "run.jsonl"
    data = log_path.read_bytes()
    lines = data.splitlines(keepends=True)
    if damage == "torn":  # a crash of the machine cut the file in the middle of line 6
        log_path.write_bytes(b"".join(lines[:5]) + lines[5][:17])
    else:  # bytes that are not a log line at all, after the last event
        log_path.write_bytes(data + b"\xff\xfe\x00garbage\n")
    resume_research(out, {"max_tokens": 200_000})
    assert runs.load(out).status == "done"
    log = [parse_event(json.loads(line)) for line in log_path.read_text().splitlines()]  # every line an event again
    assert log == load_events(out)
    aside = (out / "run.interrupted.jsonl").read_text(encoding="utf-8", errors="replace")
    assert (lines[5][:17].decode() if damage == "torn" else "garbage") in aside
    result = CliRunner().invoke(app, ["runs", "show", str(out)])
    assert result.exit_code == 0, result.output


def test_resume_without_checkpoints_says_it_starts_over(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(FatalBreaker):
        run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out),
                     Settings(model="test", rounds=3, data_dir=data_dir, max_tokens=1000))
    (out / "checkpoints.sqlite").unlink()
    lines: list[str] = []
    resume_research(out, {"max_tokens": 200_000}, progress=lambda p: lines.append(p.step))
    assert runs.load(out).status == "done"
    restart = next(e for e in events(out) if isinstance(e, RunRestart))
    assert "checkpoints.sqlite is missing" in restart.reason and restart.moved_lines > 0
    assert any(line.startswith("starting over (checkpoints.sqlite is missing)") for line in lines)
