"""A queued job that asks its user (`briefroom submit --review-plan`, `--clarify`).

The run pauses at its question as any run does (`review.py`: the Planner's interrupt,
in the run's checkpoint in the queue's database), and `execute_run` returns `paused`
with the request. The worker then gives the job back to the queue as *waiting*: its
outcome row keeps the request (`jobs show` prints it), run.json says `paused`, and
procrastinate keeps the job `todo`, scheduled so far ahead that no worker takes it
(`JobWaiting`, `JobRetry`), so it holds no worker and no lease while nobody answers.

`briefroom jobs answer JOB --accept | --answer FILE.json` checks the answer against the
stored request (the CLI's schema and checks, one line when it does not fit), keeps it
in the outcome row and schedules the job now, in one transaction. The worker that takes
it up resumes the run from its checkpoint with that answer (`review.GivenAnswer`: it
answers the stored request only), and the run's Planner checks it once more. A run that
asks again (clarifying questions, then its plan) waits again.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from briefroom.errors import ConfigError
from briefroom.review import (
    ClarifyRequest,
    GivenAnswer,
    PlanReviewRequest,
    ReviewError,
    answer_for,
    check_answer,
    parse_request,
)

# How far ahead a waiting job is scheduled: never, in practice, until it is answered.
WAIT_YEARS = 100
WAITING = "waiting"  # the outcome row's run_status, and the job's status as `jobs list` shows it


class JobWaiting(Exception):
    """The run paused at a question for its user: the job waits for `jobs answer`."""

    def __init__(self, request: PlanReviewRequest | ClarifyRequest):
        super().__init__(f"the run waits for its {describe(request)}; answer with: briefroom jobs answer")
        self.request = request


def describe(request: PlanReviewRequest | ClarifyRequest) -> str:
    return "plan review" if request.kind == "plan_review" else "answers to its clarifying questions"


def retry_strategy(interrupted: type[Exception]) -> Any:
    """procrastinate's retry decision: an interrupted run goes back to the queue at once,
    a waiting one far ahead, anything else not at all (it would fail again)."""
    from procrastinate.retry import BaseRetryStrategy, RetryDecision

    class WaitOrRetry(BaseRetryStrategy):
        def get_retry_decision(self, *, exception: BaseException, job: Any) -> RetryDecision | None:
            if isinstance(exception, JobWaiting):
                return RetryDecision(retry_at=datetime.now(timezone.utc) + timedelta(days=365 * WAIT_YEARS))
            if isinstance(exception, interrupted):
                return RetryDecision(retry_in={"seconds": 0})
            return None

    return WaitOrRetry()


# Columns of the outcome table (jobs.OUTCOMES_TABLE) for a waiting job.
def columns_ddl(table: str) -> str:
    return (f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS request jsonb; "
            f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS answer jsonb")


def waiting_sql(table: str) -> str:
    """Parameters: job id, reason, the request's JSON."""
    return (f"INSERT INTO {table} (job_id, run_status, reason, request, answer) VALUES (%s, '{WAITING}', %s, %s, NULL) "
            "ON CONFLICT (job_id) DO UPDATE SET run_status = excluded.run_status, reason = excluded.reason, "
            "request = excluded.request, answer = NULL, updated = now()")


def stored_answer(conn: Any, table: str, job_id: int) -> GivenAnswer | None:
    """The answer `jobs answer` kept for the job's stored request, if any."""
    row = conn.execute(f"SELECT request, answer FROM {table} WHERE job_id = %s AND run_status = '{WAITING}'",
                       (job_id,)).fetchone()
    if not row or row[0] is None or row[1] is None:
        return None
    return GivenAnswer(parse_request(row[0]), row[1])


def answer_job(database_url: str, table: str, job_id: int, answers: dict[str, Any]) -> PlanReviewRequest | ClarifyRequest:
    """Check `answers` (an answer, or answers keyed by request kind, as `--answer FILE`
    holds) against the question job `job_id` waits on, keep it and put the job back in
    the queue; returns the request answered. A ConfigError or ReviewError in one line."""
    import psycopg
    from psycopg.types.json import Jsonb

    with psycopg.connect(database_url, connect_timeout=10) as conn, conn.transaction():
        job = conn.execute("SELECT status FROM procrastinate_jobs WHERE id = %s FOR UPDATE", (job_id,)).fetchone()
        if not job:
            raise ConfigError(f"no job {job_id} in the queue")
        row = conn.execute(f"SELECT request, answer FROM {table} WHERE job_id = %s AND run_status = '{WAITING}' "
                           "FOR UPDATE", (job_id,)).fetchone()
        if job[0] != "todo" or not row or row[0] is None:
            raise ConfigError(f"job {job_id} is not waiting for an answer (it is {job[0]})")
        if row[1] is not None:
            raise ConfigError(f"job {job_id} was answered already; it resumes when a worker takes it up")
        request = parse_request(row[0])
        entry = answer_for(answers, request)
        if entry is None:
            raise ReviewError(f"the answer holds nothing for the {describe(request)} job {job_id} waits on")
        answer = check_answer(entry, request)
        conn.execute(f"UPDATE {table} SET answer = %s, updated = now() WHERE job_id = %s",
                     (Jsonb(answer.model_dump(mode="json", exclude_defaults=True)), job_id))
        conn.execute("UPDATE procrastinate_jobs SET scheduled_at = now() WHERE id = %s", (job_id,))
    return request


def request_json(request: PlanReviewRequest | ClarifyRequest) -> str:
    return json.dumps(request.model_dump(mode="json"), ensure_ascii=False)


def shown_request(value: Any) -> list[str]:
    """The stored request as `jobs show` prints it: the plan's task ids and questions, or the questions."""
    try:
        request = parse_request(value)
    except Exception:
        return []
    if isinstance(request, PlanReviewRequest):
        return [f"  {t.task_id}  {t.question}" for t in request.tasks]
    return [f"  {n}. {q}" for n, q in enumerate(request.questions, start=1)]
