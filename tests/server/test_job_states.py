"""Every way a run or a job ends leaves a final state, and the queue and run.json agree:
`submit` refuses what `research` would refuse; a run whose database refuses it is
`failed` with the reason (never left `running`, never offered for resume), in one line;
a running job that is cancelled ends `cancelled` in the queue and in run.json."""

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
from briefroom.database import scrub

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"
BRIEFROOM = str(Path(sys.executable).parent / "briefroom")


@pytest.mark.parametrize(("question", "extra", "message"), [
    ("   ", [], "the question is empty"),
    ("x" * 120_000, [], "at most 2,000"),
    (QUESTION, ["--model", "nosuchmodel"], "needs an endpoint"),
    (QUESTION, ["--model", "test", "--report", "novel"], "--report must be brief, standard or detailed"),
    (QUESTION, ["--model", "test", "--quotes", "paraphrase"], "--quotes must be keep or restate"),
    (QUESTION, ["--model", "test", "--language", "fr"], "language"),
])
def test_submit_refuses_what_research_refuses_and_queues_nothing(pg_url, small_corpus, tmp_path, monkeypatch,
                                                                 question, extra, message):
    for key in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "BRIEFROOM_BASE_URL", "BRIEFROOM_MODEL"):
        monkeypatch.delenv(key, raising=False)
    runner = CliRunner()
    research = runner.invoke(app, ["research", question, "--corpus", str(small_corpus), "--out", str(tmp_path / "r"),
                                   "--data-dir", str(tmp_path / "d"), *extra])
    submitted = runner.invoke(app, ["submit", question, "--corpus", str(small_corpus), "--runs", str(tmp_path / "j"),
                                    "--database-url", pg_url, *extra])
    assert research.exit_code != 0 and message in research.output, research.output
    assert submitted.exit_code != 0 and message in submitted.output, submitted.output
    assert jobs.list_jobs(pg_url) == []


def test_submit_takes_the_report_options_research_takes_and_the_job_carries_them(pg_url, small_corpus, tmp_path):
    import psycopg

    submitted = CliRunner().invoke(app, ["submit", QUESTION, "--corpus", str(small_corpus), "--runs",
                                         str(tmp_path / "j"), "--database-url", pg_url, "--model", "test",
                                         "--report", "brief", "--words", "120", "--audience", "policy makers",
                                         "--language", "en", "--json"])
    assert submitted.exit_code == 0, submitted.output
    job_id = json.loads(submitted.output)["job"]
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT args FROM procrastinate_jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None
    chosen = row[0]["settings"]
    assert (chosen["report_kind"], chosen["words"], chosen["audience"], chosen["language"]) == \
        ("brief", 120, "policy makers", "en")
    jobs.cancel_job(pg_url, job_id)


def bad_urls(pg_server) -> dict[str, str]:
    return {"wrong password": pg_server.url.replace(pg_server.password, "not-the-password"),
            "closed port": "postgresql://postgres:secret@127.0.0.1:1/postgres",
            "malformed": "postgresql://postgres:secret@[::1/postgres"}


@pytest.mark.parametrize("case", ["wrong password", "closed port", "malformed"])
def test_a_run_whose_database_fails_is_failed_with_its_reason_in_one_line(pg_server, small_corpus, tmp_path, case):
    url = bad_urls(pg_server)[case]
    out = tmp_path / "run"
    done = subprocess.run([BRIEFROOM, "research", QUESTION, "--corpus", str(small_corpus), "--model", "test",
                           "--out", str(out), "--data-dir", str(tmp_path / "d"), "--database-url", url],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "PostgreSQL" in lines[0], done.stderr
    assert "not-the-password" not in done.stderr and "secret" not in done.stderr
    record = runs.load(out)
    assert record.status == "failed" and record.error and "PostgreSQL" in record.error
    assert not runs.can_resume(record) and runs.summarize(out, record).resume is None


def test_a_worker_on_an_unreachable_database_says_so_in_one_line(pg_server):
    url = bad_urls(pg_server)["closed port"]
    done = subprocess.run([BRIEFROOM, "worker", "--until-empty", "--database-url", url], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 1 and len(lines) == 1 and "job queue" in lines[0], done.stderr
    assert "secret" not in done.stderr


def test_a_short_password_is_scrubbed_without_mangling_the_message():
    url = "postgresql://u:p@127.0.0.1:1/x"
    assert scrub('OperationalError: port 1 failed; password "p" refused', url) == \
        'OperationalError: port 1 failed; password "***" refused'


def test_a_running_job_that_is_cancelled_is_cancelled_in_the_queue_and_in_run_json(pg_url, small_corpus, tmp_path):
    job_id = jobs.submit(pg_url, QUESTION, [small_corpus], tmp_path / "runs",
                         {"model": "test", "rounds": 2, "data_dir": tmp_path / "data"})
    run_dir = jobs.run_dir_of(tmp_path / "runs", job_id)
    checkpoint_tables(pg_url)
    worker = start_worker(pg_url, tmp_path, "w")
    try:
        with gate(pg_url, "checkpoint_writes"):  # the run starts, then waits at its first checkpoint write
            assert jobs.wait_until(lambda: jobs.show_job(pg_url, job_id).status == "doing"
                                   and (run_dir / runs.RECORD_FILE).is_file(), timeout=180), log_of(tmp_path, "w")
            assert jobs.cancel_job(pg_url, job_id)
            # the worker hears of it by notification at once, or by its 5 s poll: well inside this
            jobs.wait_until(lambda: False, timeout=12)
        assert jobs.wait_until(lambda: jobs.show_job(pg_url, job_id).status == "cancelled", timeout=180), \
            log_of(tmp_path, "w")
    finally:
        stop(worker)
    row = jobs.show_job(pg_url, job_id)
    assert row.run_status == "cancelled" and row.reason and "cancelled" in row.reason
    assert jobs.agrees(row.status, row.run_status)
    assert runs.summarize(run_dir, runs.load(run_dir)).resume  # checkpointed: it may be taken up again


# --- helpers the fault tests share ------------------------------------------------------

class gate:
    """Hold a table in EXCLUSIVE mode (reads go on, writes wait) until the block ends: a
    run reaches the write and waits there, whatever the machine's speed."""

    def __init__(self, url: str, table: str):
        self.url, self.table = url, table

    def __enter__(self) -> gate:
        import psycopg

        self.conn = psycopg.connect(self.url)
        self.conn.execute(f"LOCK TABLE {self.table} IN EXCLUSIVE MODE")
        return self

    def __exit__(self, *_: object) -> None:
        import contextlib

        with contextlib.suppress(Exception):
            self.conn.rollback()
        with contextlib.suppress(Exception):
            self.conn.close()


def checkpoint_tables(url: str) -> None:
    """Create the checkpoint tables now, so a gate can hold one before any run made them."""
    from briefroom.postgres.checkpoints import open_postgres

    open_postgres(url).conn.close()


def start_worker(url: str, tmp_path: Path, name: str, **env: str) -> subprocess.Popen:
    environment = {**os.environ, "BRIEFROOM_DATABASE_URL": url, "BRIEFROOM_JOB_STALLED_AFTER": "3",
                   "BRIEFROOM_USER": "jobs-test", **env}
    log = open(tmp_path / f"{name}.log", "a")  # noqa: SIM115 - the child keeps its copy
    return subprocess.Popen([BRIEFROOM, "worker"], env=environment, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGCONT)
        os.killpg(process.pid, sig)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def log_of(tmp_path: Path, name: str) -> str:
    path = tmp_path / f"{name}.log"
    return path.read_text(errors="replace")[-3000:] if path.is_file() else ""


def memory_texts(url: str, run_dir: Path) -> list[str]:
    from briefroom.config import Settings
    from briefroom.corpus.embeddings import make_embedder
    from briefroom.memory.namespace import Namespace
    from briefroom.postgres.memory import PgMemoryStore

    store = PgMemoryStore(url, make_embedder(Settings().embedder))
    try:
        return [str(r.get("text")) for r in store.items(Namespace("jobs-test", "default", run_dir.name), scope="user")]
    finally:
        store.close()


def events_once_each(run_dir: Path) -> bool:
    lines = [json.loads(line) for line in (run_dir / "run.jsonl").read_text(encoding="utf-8").splitlines()]
    return [e["seq"] for e in lines] == list(range(1, len(lines) + 1)) and \
        sum(e["event"] == "run_end" for e in lines) == 1
