"""The workbench's job view against a real job queue: a PostgreSQL server of the tests'
own, a job queued by `briefroom submit`'s code, read back through the page's route."""

from __future__ import annotations

import json

from briefroom import jobs
from briefroom.workbench.api import Request, Workbench
from briefroom.workbench.guard import Origin

PORT = 8766
QUESTION = "How big is the 2026 public cloud market?"


def test_the_workbench_lists_a_queued_job_with_its_question_and_status(pg_url, small_corpus, tmp_path):
    job_id = jobs.submit(pg_url, QUESTION, [small_corpus], tmp_path / "runs", {"model": "test", "rounds": 1})
    (tmp_path / "runs").mkdir(exist_ok=True)
    bench = Workbench(corpus_root=small_corpus.parent, runs_root=tmp_path / "runs",
                      settings={"model": "test", "data_dir": tmp_path / "data", "database_url": pg_url},
                      origin=Origin("127.0.0.1", PORT), poll_s=0.05)
    response = bench.handle(Request("GET", "/api/jobs", {}, {"host": f"127.0.0.1:{PORT}"}))
    assert response.status == 200, response.body
    listed = json.loads(response.body)
    assert listed["configured"] is True
    assert [(j["id"], j["status"], j["question"]) for j in listed["jobs"]] == [(job_id, "todo", QUESTION)]


def test_a_job_queue_that_does_not_answer_is_one_line_without_the_password(tmp_path, small_corpus):
    url = "postgresql://briefroom:s3cret-pw@127.0.0.1:1/none"  # nothing listens on port 1
    bench = Workbench(corpus_root=small_corpus.parent, runs_root=tmp_path,
                      settings={"model": "test", "data_dir": tmp_path / "data", "database_url": url},
                      origin=Origin("127.0.0.1", PORT), poll_s=0.05)
    response = bench.handle(Request("GET", "/api/jobs", {}, {"host": f"127.0.0.1:{PORT}"}))
    assert response.status == 502
    error = json.loads(response.body)["error"]
    assert "s3cret-pw" not in error and "\n" not in error
