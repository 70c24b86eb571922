"""The job queue on a real PostgreSQL (procrastinate): jobs submitted from the CLI run on
worker processes; a worker SIGKILLed in the middle of a job leaves it to another worker,
which resumes it from its last checkpoint and writes the report an uninterrupted run
writes, with no event twice in the run log and no memory row twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from briefroom import jobs
from briefroom.cli import app
from briefroom.config import Settings
from briefroom.events import LlmCall, RunEnd, read_events
from briefroom.memory.namespace import Namespace
from briefroom.models.endpoint_double import EndpointDouble
from briefroom.run import ResearchRequest, run_research

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"
BRIEFROOM = str(Path(sys.executable).parent / "briefroom")
pytestmark = pytest.mark.e2e  # the endpoint double and the workers talk over loopback


def worker(url: str, tmp_path: Path, name: str) -> subprocess.Popen:
    env = {**os.environ, "BRIEFROOM_DATABASE_URL": url, "BRIEFROOM_JOB_STALLED_AFTER": "3",
           "BRIEFROOM_USER": "jobs-test"}
    log = open(tmp_path / f"{name}.log", "w")
    return subprocess.Popen([BRIEFROOM, "worker"], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        os.killpg(process.pid, sig)
        process.wait(timeout=60)


def status(url: str, job_id: int) -> str:
    return jobs.show_job(url, job_id).status


def llm_calls(run_dir: Path) -> int:
    path = run_dir / "run.jsonl"
    return path.read_text(encoding="utf-8").count('"event": "llm_call"') if path.is_file() else 0


def test_submit_and_list_from_the_cli_and_bad_input_is_one_line(pg_url, small_corpus, tmp_path):
    runner = CliRunner()
    ok = runner.invoke(app, ["submit", QUESTION, "--corpus", str(small_corpus), "--runs", str(tmp_path / "runs"),
                             "--model", "test", "--database-url", pg_url, "--json"])
    assert ok.exit_code == 0, ok.output
    job_id = json.loads(ok.output)["job"]
    listed = runner.invoke(app, ["jobs", "list", "--database-url", pg_url, "--json"])
    assert [r["id"] for r in json.loads(listed.output)] == [job_id]
    cancelled = runner.invoke(app, ["jobs", "cancel", str(job_id), "--database-url", pg_url])
    assert cancelled.exit_code == 0 and status(pg_url, job_id) == "cancelled"
    for args, message in ((["jobs", "show", "999999", "--database-url", pg_url], "no job 999999"),
                          (["submit", QUESTION, "--corpus", str(tmp_path / "nope"), "--database-url", pg_url],
                           "corpus folder not found"),
                          (["jobs", "list", "--database-url", "mysql://x"], "needs a PostgreSQL URL"),
                          (["jobs", "list", "--database-url", "postgresql://u:p@127.0.0.1:1/none"],
                           "job queue at the database failed")):
        result = runner.invoke(app, args)
        assert result.exit_code != 0 and message in result.output, (args, result.output)


def test_a_job_whose_worker_is_killed_finishes_on_another_with_the_same_report(pg_url, small_corpus, tmp_path):
    with EndpointDouble(latency=0.3) as double:
        settings = Settings(model="double", base_url=double.base_url, api_key="not-needed",
                            structured="json_object_schema", rounds=2, data_dir=tmp_path / "data")
        reference = run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=tmp_path / "ref"),
                                 settings.model_copy(update={"data_dir": tmp_path / "ref-data"}))
        job_id = jobs.submit(pg_url, QUESTION, [small_corpus], tmp_path / "runs",
                             {"model": "double", "base_url": double.base_url, "structured": "json_object_schema",
                              "rounds": 2, "data_dir": tmp_path / "data"})
        run_dir = jobs.run_dir_of(tmp_path / "runs", job_id)
        first = worker(pg_url, tmp_path, "first")
        try:
            assert jobs.wait_until(lambda: llm_calls(run_dir) >= 4, timeout=180), "the job never started"
            stop(first, signal.SIGKILL)  # mid-job: no clean shutdown, no heartbeat any more
            assert status(pg_url, job_id) == "doing"
            second = worker(pg_url, tmp_path, "second")
            try:
                assert jobs.wait_until(lambda: status(pg_url, job_id) == "succeeded", timeout=300), \
                    (tmp_path / "second.log").read_text()[-2000:]
            finally:
                stop(second)
        finally:
            stop(first, signal.SIGKILL)
    assert (run_dir / "report.md").read_text() == reference.report
    events = read_events(run_dir / "run.jsonl")
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # nothing twice, nothing missing
    calls = [(e.agent, e.round, e.purpose, e.attempt) for e in events if isinstance(e, LlmCall)]
    assert calls == [(e.agent, e.round, e.purpose, e.attempt) for e in reference.events if isinstance(e, LlmCall)]
    assert sum(isinstance(e, RunEnd) for e in events) == 1
    assert jobs.show_job(pg_url, job_id).attempts >= 2
    # the workers reach the database, so the job's checkpoints, index and memory are there too
    assert not (run_dir / "checkpoints.sqlite").exists()
    data = tmp_path / "data"
    assert not list(data.glob("**/documents.sqlite")) and not list(data.glob("**/memory.sqlite"))
    from briefroom.corpus.embeddings import make_embedder
    from briefroom.postgres.memory import PgMemoryStore

    store = PgMemoryStore(pg_url, make_embedder(settings.embedder))
    try:
        rows = store.items(Namespace("jobs-test", "default", run_dir.name), scope="user")
    finally:
        store.close()
    texts = [r.get("text") for r in rows]
    assert rows and len(texts) == len(set(texts))  # the memory the job wrote: every row once
