"""Durable runs: what a kill costs, and what the run page weighs.

    .venv/bin/python -m bench.durability

1. The shipped scenario replayed in a `briefroom` subprocess, uninterrupted: wall time,
   checkpoints written, size of checkpoints.sqlite.
2. The same replay SIGKILLed right after each checkpoint and once mid-node (after the
   3rd model reply), then `briefroom resume`: how many reproduce the recorded report
   byte for byte, how many logs have an event twice, and the resume's wall time.
3. The run page (`inspect --html`) of that run and of a 5-round test-provider run.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from briefroom.events import read_events

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "cloud-market"
CLI = [sys.executable, "-m", "briefroom.cli"]


# Two plugin roles that hand a new finding to each other across round ends (each acts
# when the other's finding is waiting), so the Critic and the Writer work in every round.
RELAY = '''
from pathlib import Path
from briefroom.agents.base import Role
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import MsgType

NAME, OTHER = {name!r}, {other!r}


def step(turn):
    said = {{m.body.content for m in turn.own_messages()}}
    fresh = [f for f in turn.all_facts() if f.text not in said] or turn.all_facts()
    if fresh and turn.round < turn.charter.max_rounds:
        turn.publish(MsgType.CONCLUSION, fresh[0].text, references=[fresh[0].source_id])


ROLE = Role(name=NAME, prompt=Path(__file__).with_name("relay.md"),
            subscriptions=(Subscription(msg_type=MsgType.CONCLUSION, senders=(OTHER, "searcher")),),
            publications=(MsgType.CONCLUSION,), step=step)
'''


def relay_roles(folder: Path) -> Path:
    """A roles folder with the two relay roles (ping, pong)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ping.py").write_text(RELAY.format(name="ping", other="pong"))
    (folder / "pong.py").write_text(RELAY.format(name="pong", other="ping"))
    (folder / "relay.md").write_text("You add findings.\n{{data_notice}}\n")
    return folder


def _run(*args: str, crash: str | None = None) -> tuple[subprocess.CompletedProcess, float]:
    env = {k: v for k, v in os.environ.items() if k != "BRIEFROOM_CRASH"}
    if crash:
        env["BRIEFROOM_CRASH"] = crash
    started = time.perf_counter()
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    return done, time.perf_counter() - started


def _log_is_clean(run_dir: Path) -> bool:
    seqs = [e.seq for e in read_events(run_dir / "run.jsonl")]
    return seqs == list(range(1, len(seqs) + 1))


def main() -> None:
    expected = (SCENARIO / "report.md").read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        data = ["--data-dir", str(tmp_path / "data")]
        reference = tmp_path / "reference"
        done, clean_s = _run("replay", str(SCENARIO), "--out", str(reference), *data, "-q")
        assert done.returncode == 0, done.stderr
        _run("replay", str(SCENARIO), "--out", str(tmp_path / "warm"), *data, "-q")  # index warm for the timings
        done, clean_s = _run("replay", str(SCENARIO), "--out", str(tmp_path / "timed"), *data, "-q")
        with sqlite3.connect(reference / "checkpoints.sqlite") as db:
            boundaries = db.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
        identical = clean_logs = 0
        resume_s = []
        crashes = [f"checkpoint:{k}" for k in range(1, boundaries + 1)] + ["llm_call:3"]
        for crash in crashes:
            run = tmp_path / crash.replace(":", "-")
            killed, _ = _run("replay", str(SCENARIO), "--out", str(run), *data, "-q", crash=crash)
            assert killed.returncode == -9, (crash, killed.stderr[-300:])
            resumed, seconds = _run("resume", str(run), "-q")
            resume_s.append(seconds)
            identical += resumed.returncode == 0 and (run / "report.md").read_bytes() == expected
            clean_logs += resumed.returncode == 0 and _log_is_clean(run)
        page = tmp_path / "page.html"
        _run("inspect", str(reference), "--html", str(page))
        print(json.dumps({
            "bench": "durability", "replay_s": round(clean_s, 2), "checkpoints": boundaries,
            "checkpoint_db_kb": round((reference / "checkpoints.sqlite").stat().st_size / 1024, 1),
            "kills": len(crashes), "identical_reports": identical, "logs_without_repeats": clean_logs,
            "resume_s_median": round(statistics.median(resume_s), 2), "resume_s_max": round(max(resume_s), 2),
            "run_page_kb": round(page.stat().st_size / 1024, 1),
            "five_round_page_kb": _five_round_page_kb(tmp_path)}))


def _five_round_page_kb(tmp_path: Path) -> float:
    """The run page of a 5-round test-provider run (two relay roles keep it going)."""
    roles = relay_roles(tmp_path / "roles")
    run = tmp_path / "five"
    done, _ = _run("research", "How big is the 2026 public cloud market and who grows fastest?", "--corpus",
                   str(SCENARIO / "corpus"), "--model", "test", "--rounds", "5", "--roles-dir", str(roles),
                   "--out", str(run), "--data-dir", str(tmp_path / "data"), "--no-memory", "-q")
    assert done.returncode == 0, done.stderr
    page = tmp_path / "five.html"
    _run("inspect", str(run), "--html", str(page))
    return round(page.stat().st_size / 1024, 1)


if __name__ == "__main__":
    main()
