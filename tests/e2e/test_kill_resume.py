"""SIGKILL at every node boundary and mid-node, then `briefroom resume`: the same report,
byte for byte, and no side effect twice (run log events, memory rows).

The process is a real `briefroom` subprocess; the kill is a real SIGKILL sent by the
process to itself at a chosen point (`briefroom/faults.py`), so nothing in
Python gets to clean up: whatever is on disk at that moment is all the resume has.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from briefroom.events import (
    Event,
    LlmCall,
    MemoryRead,
    MemoryWrite,
    Models,
    RunResume,
    ToolCall,
    ToolResult,
    TurnEvent,
    read_events,
    round_of,
)
from tests.conftest import SCENARIOS

pytestmark = pytest.mark.e2e
SCENARIO = SCENARIOS / "cloud-market"
BRIEFROOM = [sys.executable, "-m", "briefroom.cli"]
QUESTION = "How big is the 2026 public cloud market and who is growing fastest?"


def briefroom(*args: str, crash: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, **(env or {})}
    environment.pop("BRIEFROOM_CRASH", None)
    if crash:
        environment["BRIEFROOM_CRASH"] = crash
    return subprocess.run([*BRIEFROOM, *args], capture_output=True, text=True, env=environment, timeout=300)


def story(run_dir: Path) -> list[tuple]:
    """The run log as what happened, without per-process lines (resume notes, model
    handles) and without timings: two runs that did the same work tell the same story."""
    log = read_events(run_dir / "run.jsonl")
    assert [e.seq for e in log] == list(range(1, len(log) + 1)), "a gap or a repeated line in the log"
    return [_told(e) for e in log if not isinstance(e, (RunResume, Models))]


def _told(e: Event) -> tuple:
    """kind, agent, round, tool, purpose (None where the kind has none)."""
    return (e.event, e.agent if isinstance(e, (TurnEvent, MemoryRead)) else None, round_of(e),
            e.tool if isinstance(e, (ToolCall, ToolResult)) else None, e.purpose if isinstance(e, LlmCall) else None)


def checkpoints(run_dir: Path) -> int:
    with sqlite3.connect(run_dir / "checkpoints.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]


def test_replay_killed_at_every_node_boundary_and_mid_node_resumes_to_the_same_report(tmp_path, data_dir):
    expected = (SCENARIO / "report.md").read_bytes()
    reference = tmp_path / "reference"
    done = briefroom("replay", str(SCENARIO), "--check", "--out", str(reference), "--data-dir", str(data_dir), "-q")
    assert done.returncode == 0, done.stderr
    boundaries = checkpoints(reference)
    assert boundaries >= 8  # input, every speaker's turn, round end
    reference_story = story(reference)

    crashes = [f"checkpoint:{k}" for k in range(1, boundaries + 1)] + ["llm_call:3"]  # call 3: inside the Searcher

    def kill_and_resume(crash: str) -> list[tuple[str, str]]:
        run = tmp_path / crash.replace(":", "-")
        killed = briefroom("replay", str(SCENARIO), "--out", str(run), "--data-dir", str(data_dir), "-q", crash=crash)
        if killed.returncode != -9:
            return [(crash, f"not killed: exit {killed.returncode} {killed.stderr[-300:]}")]
        resumed = briefroom("resume", str(run), "-q")
        if resumed.returncode != 0:
            return [(crash, resumed.stderr[-800:])]
        found = []
        if (run / "report.md").read_bytes() != expected:
            found.append((crash, "report differs"))
        if story(run) != reference_story:
            found.append((crash, "run log differs from an uninterrupted run"))
        resume = [e for e in read_events(run / "run.jsonl") if isinstance(e, RunResume)]
        if crash.startswith("llm_call") and not resume[0].moved_lines:
            found.append((crash, "the kill was not mid-node: nothing of the interrupted step was moved aside"))
        return found

    with ThreadPoolExecutor(max_workers=2) as pool:  # independent runs; two cores
        failures = [f for found in pool.map(kill_and_resume, crashes) for f in found]
    assert failures == []


def memory_rows(data_dir: Path) -> dict[str, int]:
    db = next((data_dir / "memory").glob("*/memory.sqlite"))
    with sqlite3.connect(db) as conn:
        return {table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                for table in ("memories", "facts", "skills", "applied")}


def test_a_run_killed_inside_its_memory_writes_or_after_its_graph_writes_memory_once(tmp_path):
    def research(user: str, out: Path, crash: str | None = None) -> subprocess.CompletedProcess:
        return briefroom("research", QUESTION, "--corpus", str(SCENARIO / "corpus"), "--model", "test",
                         "--out", str(out), "-q", crash=crash,
                         env={"BRIEFROOM_DATA_DIR": str(tmp_path / f"data-{user}"), "BRIEFROOM_USER": user})

    clean = research("clean", tmp_path / "clean")
    assert clean.returncode == 0, clean.stderr
    expected = memory_rows(tmp_path / "data-clean")
    assert expected["facts"] and expected["memories"] and expected["skills"]

    for crash in ("memory_commit:1", f"checkpoint:{checkpoints(tmp_path / 'clean')}"):
        user = crash.replace(":", "-").replace("_", "-")
        run = tmp_path / user
        killed = research(user, run, crash)
        assert killed.returncode == -9, (crash, killed.stderr[-500:])
        resumed = briefroom("resume", str(run), "-q", env={"BRIEFROOM_USER": user})
        assert resumed.returncode == 0, (crash, resumed.stderr[-800:])
        again = briefroom("resume", str(run), "-q")  # a done run: nothing happens twice
        assert again.returncode == 0
        assert memory_rows(tmp_path / f"data-{user}") == expected, crash
        assert (run / "report.md").read_bytes() == (tmp_path / "clean" / "report.md").read_bytes()
        writes = [e for e in read_events(run / "run.jsonl") if isinstance(e, MemoryWrite)]
        clean_writes = [e for e in read_events(tmp_path / "clean" / "run.jsonl") if isinstance(e, MemoryWrite)]
        assert [(w.kind, w.action) for w in writes] == [(w.kind, w.action) for w in clean_writes]


def test_a_dead_endpoint_stops_the_run_with_one_line_and_resume_finishes_it(tmp_path, data_dir):
    import socket

    with socket.socket() as probe:  # a loopback port nothing listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    run = tmp_path / "run"
    failed = briefroom("research", QUESTION, "--corpus", str(SCENARIO / "corpus"), "--model", "test",
                       "--role-model", "writer=some-model", "--base-url", dead, "--out", str(run),
                       "--data-dir", str(data_dir), "-q")
    assert failed.returncode == 1
    errors = [line for line in failed.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "writer" in errors[0] and "failed" in errors[0], failed.stderr
    assert f"briefroom resume {run}" in failed.stderr
    before = story(run)
    assert ("llm_call", "critic", 1, None, before[-1][4]) in before or any(e[0] == "llm_call" for e in before)

    resumed = briefroom("resume", str(run), "--role-model", "writer=test", "-q")
    assert resumed.returncode == 0, resumed.stderr[-800:]
    after = story(run)
    assert after[:len(before) - 1] == before[:-1]  # all that was done is kept (the error line is replaced)
    assert after[-1][0] == "run_end" and (run / "report.md").is_file()
