"""A queued job that asks its user: `submit --review-plan` pauses the job `waiting` with
its plan where `jobs show` prints it (run.json `paused`: the queue and the run agree),
holding no worker; `jobs answer` checks the answer (the CLI's schema: a bad one is one
line, exit 2, and changes nothing), puts the job back in the queue, and a worker (not
the one that ran it: that one was killed) resumes it from its checkpoint with the answer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from briefroom import jobs, runs
from briefroom.cli import app
from briefroom.events import PlanReview, RunPaused, read_events
from tests.server.test_job_states import events_once_each, log_of, stop

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"
# The worker runs this checkout's code, whichever checkout the venv's `briefroom` script was installed from.
ROOT = Path(__file__).resolve().parents[2]
BRIEFROOM = [sys.executable, "-m", "briefroom.cli"]
pytestmark = pytest.mark.e2e


def worker_env(url: str) -> dict[str, str]:
    return {**os.environ, "BRIEFROOM_DATABASE_URL": url, "BRIEFROOM_JOB_STALLED_AFTER": "3",
            "BRIEFROOM_USER": "jobs-test", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}


def start_worker(url: str, tmp_path: Path, name: str) -> subprocess.Popen:
    log = open(tmp_path / f"{name}.log", "a")  # noqa: SIM115 - the child keeps its copy
    return subprocess.Popen([*BRIEFROOM, "worker"], env=worker_env(url), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, cwd=ROOT)


def submit(url: str, corpus: Path, tmp_path: Path, *flags: str) -> tuple[int, Path]:
    done = CliRunner().invoke(app, ["submit", QUESTION, "--corpus", str(corpus), "--runs", str(tmp_path / "runs"),
                                    "--model", "test", "--rounds", "1", "--data-dir", str(tmp_path / "data"),
                                    "--database-url", url, "--json", *flags])
    assert done.exit_code == 0, done.output
    job_id = json.loads(done.stdout)["job"]
    return job_id, jobs.run_dir_of(tmp_path / "runs", job_id)


def work_until_empty(url: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """A worker that stops once no job is left to run: a waiting job is none."""
    done = subprocess.run([*BRIEFROOM, "worker", "--until-empty"], capture_output=True, text=True, timeout=600,
                          env=worker_env(url), cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def cli(url: str, *args: str):
    return CliRunner().invoke(app, ["jobs", *args, "--database-url", url])


def test_a_job_waits_at_its_plan_and_a_worker_resumes_it_with_the_answer(pg_url, small_corpus, tmp_path):
    job_id, run_dir = submit(pg_url, small_corpus, tmp_path, "--review-plan")
    worker = start_worker(pg_url, tmp_path, "w1")
    try:
        assert jobs.wait_until(lambda: jobs.show_job(pg_url, job_id).status == "waiting", timeout=300), \
            log_of(tmp_path, "w1")
        row = jobs.show_job(pg_url, job_id)
        assert row.run_status == "paused" and jobs.agrees(row.status, row.run_status)
        tasks = row.waiting_for["tasks"]
        assert tasks and tasks[0]["task_id"] == "t1.1" and all(t["question"] for t in tasks)
        # the worker holds nothing for it: killed now, the job loses nothing
        stop(worker, signal.SIGKILL)
    finally:
        stop(worker, signal.SIGKILL)
    assert [e.waiting_for for e in read_events(run_dir / "run.jsonl") if isinstance(e, RunPaused)] == ["plan_review"]
    shown = cli(pg_url, "show", str(job_id))
    assert shown.exit_code == 0 and "status: waiting" in shown.stdout
    assert all(f"{t['task_id']}  {t['question']}" in shown.stdout for t in tasks), shown.stdout
    listed = cli(pg_url, "list", "--status", "waiting", "--json")
    assert [r["id"] for r in json.loads(listed.stdout)] == [job_id]

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"drop": ["t9.9"]}), encoding="utf-8")
    refused = cli(pg_url, "answer", str(job_id), "--answer", str(bad))
    assert refused.exit_code == 2 and "unknown task id 't9.9'" in refused.output, refused.output
    assert jobs.show_job(pg_url, job_id).status == "waiting"  # a refused answer changes nothing

    edited = "What will public cloud spending be in 2026 worldwide?"
    good = tmp_path / "answer.json"
    good.write_text(json.dumps({"plan_review": {"edit": {"t1.1": edited}, "note": "worldwide figures"}}),
                    encoding="utf-8")
    answered = cli(pg_url, "answer", str(job_id), "--answer", str(good))
    assert answered.exit_code == 0, answered.output
    row = jobs.show_job(pg_url, job_id)
    assert row.status == "todo" and row.run_status == "paused" and jobs.agrees(row.status, row.run_status)
    again = cli(pg_url, "answer", str(job_id), "--accept")
    assert again.exit_code == 1 and "answered already" in again.output

    work_until_empty(pg_url, tmp_path)  # another worker takes it up
    row = jobs.show_job(pg_url, job_id)
    assert row.status == "succeeded" and row.run_status == "done" and jobs.agrees(row.status, row.run_status)
    assert row.waiting_for is None and events_once_each(run_dir)
    (review,) = [e for e in read_events(run_dir / "run.jsonl") if isinstance(e, PlanReview)]
    assert review.after[0].question == edited and review.note == "worldwide figures"
    assert "The user's note on the plan: worldwide figures" in \
        json.loads((run_dir / "charter.json").read_text(encoding="utf-8"))["constraints"]
    assert (run_dir / "report.md").read_text(encoding="utf-8").startswith("# ")


def test_clarifying_questions_then_the_plan_each_wait_for_their_answer(pg_url, small_corpus, tmp_path):
    job_id, run_dir = submit(pg_url, small_corpus, tmp_path, "--review-plan", "--clarify")
    work_until_empty(pg_url, tmp_path)
    row = jobs.show_job(pg_url, job_id)
    assert row.status == "waiting" and row.waiting_for["kind"] == "clarify"
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"clarify": {"answers": ["Worldwide, in USD"]}, "plan_review": {"accept": True}}),
                       encoding="utf-8")
    assert cli(pg_url, "answer", str(job_id), "--answer", str(answers)).exit_code == 0
    work_until_empty(pg_url, tmp_path)
    row = jobs.show_job(pg_url, job_id)
    assert row.status == "waiting" and row.waiting_for["kind"] == "plan_review"
    assert cli(pg_url, "answer", str(job_id), "--answer", str(answers)).exit_code == 0
    work_until_empty(pg_url, tmp_path)
    row = jobs.show_job(pg_url, job_id)
    assert row.status == "succeeded" and row.run_status == "done"
    charter = json.loads((run_dir / "charter.json").read_text(encoding="utf-8"))
    assert any(c.endswith("the user answered: Worldwide, in USD") for c in charter["constraints"])


def test_a_waiting_job_that_is_cancelled_is_cancelled_in_the_queue_and_in_run_json(pg_url, small_corpus, tmp_path):
    job_id, run_dir = submit(pg_url, small_corpus, tmp_path, "--review-plan")
    work_until_empty(pg_url, tmp_path)
    assert jobs.show_job(pg_url, job_id).status == "waiting"
    assert cli(pg_url, "cancel", str(job_id)).exit_code == 0
    row = jobs.show_job(pg_url, job_id)
    assert row.status == "cancelled" and row.run_status == "cancelled" and jobs.agrees(row.status, row.run_status)
    refused = cli(pg_url, "answer", str(job_id), "--accept")
    assert refused.exit_code == 1 and "not waiting" in refused.output
    assert runs.load(run_dir).status == "cancelled"
