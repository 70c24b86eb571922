"""The fault test: each party of a job (worker, database) is killed, paused (SIGSTOP /
SIGCONT) or restarted in the middle of a job, and afterwards the queue, run.json,
run.jsonl and long-term memory agree: the job succeeded, the run is done with the report
of an uninterrupted run, every log event and memory row is there once.

Where a run is "in the middle" is fixed, not timed: a killed worker kills itself at its
3rd checkpoint (BRIEFROOM_CRASH), and the others wait at a gate, the memory store's
`applied` table held in EXCLUSIVE mode by the test, which the run reaches when it writes
its memories after the graph (`pg_stat_activity` says when it waits there)."""

from __future__ import annotations

import signal
from pathlib import Path

import psycopg
import pytest

from briefroom import job_workers, jobs
from briefroom.config import Settings
from briefroom.corpus.embeddings import make_embedder
from briefroom.postgres.memory import schema_name
from briefroom.run import ResearchRequest, run_research
from tests.server.test_job_states import events_once_each, gate, log_of, memory_texts, start_worker, stop

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"
CHOICES = {"model": "test", "rounds": 2}
STALLED_AFTER = 3  # start_worker's BRIEFROOM_JOB_STALLED_AFTER
pytestmark = pytest.mark.e2e


@pytest.fixture
def reference(small_corpus, tmp_path):
    """The report of the same run, uninterrupted, on this machine."""
    settings = Settings(model="test", rounds=2, data_dir=tmp_path / "ref-data")
    return run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=tmp_path / "ref"),
                        settings).report


def submit(url, corpus, tmp_path):
    job_id = jobs.submit(url, QUESTION, [corpus], tmp_path / "runs", {**CHOICES, "data_dir": tmp_path / "data"})
    return job_id, jobs.run_dir_of(tmp_path / "runs", job_id)


def memory_gate(url):
    memory_texts(url, Path("no-run"))  # opening the store creates its tables, which the gate holds
    return gate(url, f"{schema_name(make_embedder(Settings().embedder).name)}.applied")


def waiting_on_a_lock(url) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                           "AND datname = current_database()").fetchone()
    return bool(row and row[0])


def stalled(url, job_id) -> bool:
    """procrastinate's own rule: `doing`, and its worker silent past the stall timeout."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT 1 FROM procrastinate_jobs j LEFT JOIN procrastinate_workers w "
                           "ON w.id = j.worker_id WHERE j.id = %s AND j.status = 'doing' AND "
                           "(w.id IS NULL OR w.last_heartbeat < now() - make_interval(secs => %s))",
                           (job_id, STALLED_AFTER)).fetchone()
    return row is not None


def assert_all_agree(url, job_id, run_dir, report, *, attempts=None):
    row = jobs.show_job(url, job_id)
    assert row.status == "succeeded" and row.run_status == "done" and jobs.agrees(row.status, row.run_status), row
    if attempts is not None:
        assert row.attempts == attempts, row
    assert (run_dir / "report.md").read_text() == report
    assert events_once_each(run_dir)
    texts = memory_texts(url, run_dir)
    assert texts and len(texts) == len(set(texts))  # every memory row once


def succeeded(url, job_id) -> bool:
    return jobs.show_job(url, job_id).status == "succeeded"


def test_a_killed_worker_leaves_the_job_to_another(pg_url, small_corpus, tmp_path, reference):
    job_id, run_dir = submit(pg_url, small_corpus, tmp_path)
    first = start_worker(pg_url, tmp_path, "first", BRIEFROOM_CRASH="checkpoint:3")
    assert first.wait(timeout=300) == -signal.SIGKILL, log_of(tmp_path, "first")
    assert jobs.show_job(pg_url, job_id).status == "doing"
    second = start_worker(pg_url, tmp_path, "second")
    try:
        assert jobs.wait_until(lambda: succeeded(pg_url, job_id), timeout=300), log_of(tmp_path, "second")
    finally:
        stop(second)
    assert_all_agree(pg_url, job_id, run_dir, reference)
    assert jobs.show_job(pg_url, job_id).attempts >= 2


def test_a_worker_paused_past_the_stall_timeout_keeps_its_job(pg_url, small_corpus, tmp_path, reference):
    job_id, run_dir = submit(pg_url, small_corpus, tmp_path)
    paused = other = None
    try:
        with memory_gate(pg_url):
            paused = start_worker(pg_url, tmp_path, "paused")
            assert jobs.wait_until(lambda: waiting_on_a_lock(pg_url), timeout=300), log_of(tmp_path, "paused")
            paused.send_signal(signal.SIGSTOP)
        other = start_worker(pg_url, tmp_path, "other")
        assert jobs.wait_until(lambda: stalled(pg_url, job_id), timeout=120)
        # the rule that re-queued it before: heartbeat silent. Its lease is held: not re-queued.
        assert job_workers._requeue_if_free(pg_url, job_id) is False
        jobs.wait_until(lambda: jobs.show_job(pg_url, job_id).status != "doing", timeout=4 * jobs.SWEEP_EVERY_S)
        assert jobs.show_job(pg_url, job_id).status == "doing"  # the other worker's sweeps left it too
        paused.send_signal(signal.SIGCONT)
        assert jobs.wait_until(lambda: succeeded(pg_url, job_id), timeout=300), log_of(tmp_path, "paused")
    finally:
        for process in (paused, other):
            if process is not None:
                stop(process)
    assert_all_agree(pg_url, job_id, run_dir, reference, attempts=1)
    assert "in use by another" not in log_of(tmp_path, "other")


def test_a_worker_outlives_a_database_restart_and_finishes_the_job(pg_server, pg_url, small_corpus, tmp_path,
                                                                    reference):
    job_id, run_dir = submit(pg_url, small_corpus, tmp_path)
    worker = start_worker(pg_url, tmp_path, "w")
    try:
        with memory_gate(pg_url):
            assert jobs.wait_until(lambda: waiting_on_a_lock(pg_url), timeout=300), log_of(tmp_path, "w")
            pg_server.restart()  # every session ends, the gate's and the worker's with them
        assert jobs.wait_until(lambda: succeeded(pg_url, job_id), timeout=300), log_of(tmp_path, "w")
        assert worker.poll() is None, log_of(tmp_path, "w")  # the same worker: it reconnected
    finally:
        stop(worker)
    log = log_of(tmp_path, "w")
    assert "went away" in log and "internal error" not in log and "Traceback" not in log, log
    assert_all_agree(pg_url, job_id, run_dir, reference)


def test_a_paused_database_does_not_hand_a_job_to_a_second_worker(pg_server, pg_url, small_corpus, tmp_path,
                                                                  reference):
    job_id, run_dir = submit(pg_url, small_corpus, tmp_path)
    first = second = None
    try:
        with memory_gate(pg_url):
            first = start_worker(pg_url, tmp_path, "first")
            second = start_worker(pg_url, tmp_path, "second")
            assert jobs.wait_until(lambda: waiting_on_a_lock(pg_url), timeout=300), log_of(tmp_path, "first")
            pg_server.pause()
            try:  # wall time, not speed: every heartbeat is older than the stall timeout when it wakes
                jobs.wait_until(lambda: False, timeout=STALLED_AFTER + 2)
            finally:
                pg_server.resume()
        assert jobs.wait_until(lambda: succeeded(pg_url, job_id), timeout=300), log_of(tmp_path, "first")
    finally:
        for process in (first, second):
            if process is not None:
                stop(process)
    assert_all_agree(pg_url, job_id, run_dir, reference, attempts=1)
