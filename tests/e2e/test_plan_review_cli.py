"""`briefroom research --review-plan` as a person and as CI use it: a real subprocess
at a terminal (a pty) is killed with SIGKILL while it waits at the review prompt,
`briefroom resume` asks again and takes an edit (one sub-question changed, one dropped,
one added), and the Searcher searches the plan the user left. Without a terminal the
run stops with one line, paused, and takes `--answer FILE.json` later."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from briefroom.events import BusMessage, PlanReview, read_events
from briefroom.protocol.messages import MsgType
from tests.conftest import SCENARIOS

pytestmark = pytest.mark.e2e
BRIEFROOM = [sys.executable, "-m", "briefroom.cli"]
CORPUS = SCENARIOS / "cloud-market" / "corpus"
QUESTION = "How big is the 2026 public cloud market and who is growing fastest?"
ADDED = "How much is spent on GPU cloud capacity in 2026?"
EDITED = "What will worldwide public cloud spending be in 2026?"


class Terminal:
    """A briefroom process with its stdin and stderr on a pty (stdout, the report, on a
    pipe): `sys.stdin.isatty()` is true in it, as for a person at a terminal."""

    def __init__(self, args: list[str], env: dict[str, str]):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([*BRIEFROOM, *args], stdin=slave, stderr=slave, stdout=subprocess.PIPE,
                                     env={**env, "TERM": "dumb", "COLUMNS": "200"}, start_new_session=True)
        os.close(slave)
        self.seen = ""

    def wait_for(self, marker: str, timeout: float = 240) -> str:
        deadline = time.monotonic() + timeout
        while marker not in self.seen:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.master], [], [], max(left, 0))
            if not ready:
                raise AssertionError(f"no {marker!r} within {timeout:.0f}s; the terminal shows:\n{self.seen[-3000:]}")
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: the process closed the terminal
                chunk = b""
            if not chunk:
                raise AssertionError(f"the process ended before {marker!r}; the terminal shows:\n{self.seen[-3000:]}")
            self.seen += chunk.decode("utf-8", errors="replace").replace("\r\n", "\n")
        return self.seen

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def finish(self, timeout: float = 300) -> tuple[int, str]:
        """Drain the terminal while the process ends (a full pty would block it)."""
        drained = threading.Thread(target=self._drain, daemon=True)
        drained.start()
        out, _ = self.proc.communicate(timeout=timeout)
        drained.join(5)
        os.close(self.master)
        return self.proc.returncode, out.decode()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                return
            if not chunk:
                return
            self.seen += chunk.decode("utf-8", errors="replace").replace("\r\n", "\n")


@pytest.fixture
def env(data_dir) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k != "BRIEFROOM_CRASH"}
    environment["BRIEFROOM_DATA_DIR"] = str(data_dir)
    return environment


def research(run_dir: Path) -> list[str]:
    return ["research", QUESTION, "--corpus", str(CORPUS), "--model", "test", "--out", str(run_dir),
            "--no-memory", "-q", "--review-plan"]


def searcher_tasks(run_dir: Path) -> list[str]:
    return [e.message.body.content for e in read_events(run_dir / "run.jsonl")
            if isinstance(e, BusMessage) and e.message.header.msg_type is MsgType.INSTRUCTION
            and e.message.header.sender == "planner"]


def proposed_plan(screen: str) -> dict[str, str]:
    """task id -> sub-question, as the prompt listed them."""
    plan = {}
    for line in screen.split("The plan for:")[-1].splitlines()[1:]:
        parts = line.strip().split("  ", 1)
        if len(parts) == 2 and parts[0].startswith("t1."):
            plan[parts[0]] = parts[1].strip()
    return plan


def test_killed_at_the_review_prompt_resumes_there_and_searches_the_edited_plan(tmp_path, env):
    run_dir = tmp_path / "run"
    first = Terminal(research(run_dir), env)
    screen = first.wait_for("review> ")
    plan = proposed_plan(screen)
    assert list(plan) == [f"t1.{n}" for n in range(1, len(plan) + 1)] and len(plan) >= 3, screen
    assert searcher_tasks(run_dir) == []  # nothing is searched before the review
    os.killpg(first.proc.pid, signal.SIGKILL)  # while it waits at the prompt: nothing gets to clean up
    assert first.proc.wait(30) == -signal.SIGKILL
    os.close(first.master)

    again = Terminal(["resume", str(run_dir), "-q"], env)
    screen = again.wait_for("review> ")
    assert proposed_plan(screen) == plan  # the same question, not a new plan
    ids = list(plan)
    again.type("drop t9.9")  # a bad answer: one line, asked again
    again.wait_for("unknown task id 't9.9'")
    again.type(f"edit {ids[0]} {EDITED}")
    again.type(f"drop {ids[-1]}")
    again.type(f"add {ADDED}")
    again.wait_for(f"+ t1.{len(ids) + 1}  {ADDED}")
    again.type("accept")
    code, report = again.finish()
    assert code == 0, again.seen[-3000:]
    assert report.startswith("# ")

    tasks = searcher_tasks(run_dir)
    assert tasks[0] == EDITED and ADDED in tasks
    assert plan[ids[-1]] not in tasks and plan[ids[0]] not in tasks
    reviews = [e for e in read_events(run_dir / "run.jsonl") if isinstance(e, PlanReview)]
    assert len(reviews) == 1 and [t.task_id for t in reviews[0].after] == [*ids[:-1], f"t1.{len(ids) + 1}"]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "done"


def test_without_a_terminal_the_run_stops_paused_in_one_line_and_takes_an_answer_file(tmp_path, env):
    run_dir = tmp_path / "run"
    stopped = subprocess.run([*BRIEFROOM, *research(run_dir)], stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, env=env, timeout=300)
    assert stopped.returncode == 1
    assert stopped.stderr.count("\n") == 1 and "stdin is not a terminal" in stopped.stderr
    assert f"briefroom resume {run_dir} --answer FILE.json" in stopped.stderr
    assert json.loads((run_dir / "run.json").read_text())["status"] == "paused"

    bad = tmp_path / "bad.json"
    bad.write_text('{"edit": {"t1.1": ""}}')
    refused = subprocess.run([*BRIEFROOM, "resume", str(run_dir), "--answer", str(bad), "-q"],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=300)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "the edit of t1.1 is empty" in refused.stderr
    assert json.loads((run_dir / "run.json").read_text())["status"] == "paused"

    good = tmp_path / "answer.json"
    good.write_text(json.dumps({"drop": ["t1.2"], "add": [ADDED]}))
    done = subprocess.run([*BRIEFROOM, "resume", str(run_dir), "--answer", str(good), "-q"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert ADDED in searcher_tasks(run_dir)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "done"
