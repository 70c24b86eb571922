"""The job queue: `submit`, `worker`, `migrate` and `jobs list|show|cancel`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from briefroom.cli.common import (
    Audience,
    DatabaseUrl,
    DataDir,
    Json,
    Language,
    Quotes,
    ReportKindOption,
    Words,
    _fail,
    _settings,
    err,
    quote_mode,
    report_kind,
    stdout,
)
from briefroom.cli.reviewer import AnswerFile, Clarify
from briefroom.errors import BriefroomError


def _database_url(url: str | None) -> str:
    found = url or os.environ.get("BRIEFROOM_DATABASE_URL")
    if not found:
        raise _fail("the job queue needs --database-url postgresql://... (or BRIEFROOM_DATABASE_URL)", 2)
    return found


def submit(
    question: Annotated[str, typer.Argument(help="the research question")],
    corpus: Annotated[list[Path], typer.Option("--corpus", "-c", help="folder of documents (repeatable), as the "
                                               "workers see it")] = [],
    runs_root: Annotated[Path, typer.Option("--runs", help="folder the workers write job-<id>/ run "
                                            "directories into")] = Path("runs"),
    model: Annotated[Optional[str], typer.Option(help="'test', 'embedded', or a model on the workers' "
                                                 "endpoint")] = None,
    rounds: Annotated[int, typer.Option(min=1, max=20, help="maximum rounds")] = 3,
    max_tokens: Annotated[Optional[int], typer.Option(min=1000, help="run budget in tokens")] = None,
    parallel: Annotated[Optional[int], typer.Option(min=1, max=8, help="searcher instances at once")] = None,
    data_dir: DataDir = None,
    language: Language = None,
    report: ReportKindOption = None,
    words: Words = None,
    audience: Audience = None,
    quotes: Quotes = None,
    review_plan: Annotated[bool, typer.Option("--review-plan", help="the job waits at its plan (status waiting, "
                                              "the plan in `jobs show`) for `briefroom jobs answer`")] = False,
    clarify: Clarify = False,
    database_url: DatabaseUrl = None,
    as_json: Json = False,
) -> None:
    """Queue a research job for `briefroom worker`; prints its id. Keys stay with the workers."""
    from briefroom import jobs

    url = _database_url(database_url)
    if not corpus:
        raise _fail("no corpus: pass --corpus DIR", 2)
    choices = {"model": model, "rounds": rounds, "max_tokens": max_tokens, "parallel": parallel,
               "data_dir": data_dir, "language": language, "report_kind": report_kind(report), "words": words,
               "audience": audience, "quotes": quote_mode(quotes)}  # what this command chose; the rest is each worker's
    review = {"plan": review_plan, "clarify": clarify}
    job_id = _on_database(lambda: jobs.submit(url, question, corpus, runs_root, choices, review), url)
    if as_json:
        sys.stdout.write(json.dumps({"job": job_id, "run_dir": str(jobs.run_dir_of(runs_root, job_id))}) + "\n")
    else:
        stdout.print(f"job {job_id} queued; its run directory will be {jobs.run_dir_of(runs_root, job_id)}",
                     markup=False)


def worker(
    processes: Annotated[int, typer.Option("--processes", "-n", min=1, max=64, help="worker processes, one job "
                                           "at a time each")] = 1,
    until_empty: Annotated[bool, typer.Option("--until-empty", help="stop once the queue is empty")] = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Run research jobs from the queue. A job whose worker died is taken up by another and
    goes on from its last checkpoint."""
    from briefroom import job_workers, jobs

    url = _database_url(database_url)
    stalled = float(os.environ.get("BRIEFROOM_JOB_STALLED_AFTER", jobs.STALLED_AFTER_S))
    heartbeat = min(jobs.HEARTBEAT_S, stalled / 3)
    try:
        job_workers.work(url, processes, stalled_after=stalled, heartbeat=heartbeat, wait=not until_empty)
    except BriefroomError as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def migrate(
    to: Annotated[Optional[str], typer.Option("--to", help="PostgreSQL URL (env BRIEFROOM_DATABASE_URL)")] = None,
    runs_dirs: Annotated[list[Path], typer.Option("--runs", help="run directories, or folders of them, whose "
                                                 "checkpoints move too (repeatable; default runs/)")] = [],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="count what would move; write nothing")] = False,
    data_dir: DataDir = None,
    as_json: Json = False,
) -> None:
    """Move the data directory's long-term memory and the runs' checkpoints to PostgreSQL.
    Safe to run again: it copies only what is missing. The corpus index stays (a cache)."""
    from briefroom.server.migrate import migrate as move

    url = _database_url(to)
    settings = _on_database(lambda: _settings(data_dir=data_dir), url)
    report = _on_database(lambda: move(settings.data_dir, url, list(runs_dirs) or [Path("runs")], dry_run=dry_run),
                          url, "migrate")
    if as_json:
        sys.stdout.write(report.model_dump_json() + "\n")
    else:
        for line in report.lines():
            stdout.print(line, markup=False)


jobs_app = typer.Typer(help="The research job queue: list, show, answer, cancel.")


def _on_database(call, url: str, what: str = "job queue"):
    """`call()`, with a briefroom error or any failure of the database (down, refused,
    wrong password) as one line, without the URL's password."""
    from briefroom.database import first_line, scrub

    try:
        return call()
    except BriefroomError as exc:
        raise _fail(scrub(str(exc), url)) from None
    except Exception as exc:
        raise _fail(f"{what} at the database failed: {first_line(exc, url)}") from None


@jobs_app.command("list")
def jobs_list(
    status: Annotated[Optional[str], typer.Option(help="todo, doing, waiting, succeeded, failed, cancelled")] = None,
    database_url: DatabaseUrl = None,
    as_json: Json = False,
) -> None:
    """Every job in the queue: id, status, attempts, question."""
    from briefroom import jobs

    url = _database_url(database_url)
    rows = _on_database(lambda: jobs.list_jobs(url, status), url)
    if as_json:
        sys.stdout.write(json.dumps([vars(r) for r in rows], ensure_ascii=False) + "\n")
        return
    for r in rows:
        stdout.print(f"{r.id}  {r.status:<10} attempts {r.attempts}  {r.run_dir}  {r.question[:60]}", markup=False)
    if not rows:
        err.print("no jobs")


@jobs_app.command("show")
def jobs_show(
    job_id: Annotated[int, typer.Argument(help="a job id")],
    database_url: DatabaseUrl = None,
    as_json: Json = False,
) -> None:
    """One job: its status, attempts and run directory (`briefroom runs show` reads it)."""
    from briefroom import jobs

    url = _database_url(database_url)
    row = _on_database(lambda: jobs.show_job(url, job_id), url)
    if as_json:
        sys.stdout.write(json.dumps(vars(row), ensure_ascii=False) + "\n")
        return
    from briefroom.job_review import shown_request

    for key, value in vars(row).items():
        if value is not None and key != "waiting_for":  # no run directory, no run.json, no reason yet: not shown
            stdout.print(f"{key}: {value}", markup=False)
    if row.waiting_for is not None:
        kind = "plan (task id, what it must find)" if row.waiting_for.get("kind") == "plan_review" \
            else "clarifying questions"
        stdout.print(f"waiting_for: {kind}", markup=False)
        for line in shown_request(row.waiting_for):
            stdout.print(line, markup=False)
        stdout.print(f"answer with: briefroom jobs answer {row.id} --accept (or --answer FILE.json)", markup=False)


@jobs_app.command("answer")
def jobs_answer(
    job_id: Annotated[int, typer.Argument(help="a job waiting for its user (`jobs list --status waiting`)")],
    answer: AnswerFile = None,
    accept: Annotated[bool, typer.Option("--accept", help="take the plan as proposed, answer no clarifying "
                                         "question")] = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Answer the plan review or clarifying questions a waiting job asks; a worker then
    resumes it from its checkpoint with the answer."""
    from briefroom import jobs
    from briefroom.review import ReviewError, answer_file

    if accept == (answer is not None):
        raise _fail("give the answer: --accept or --answer FILE.json (one of them)", 2)
    try:
        answers = {"accept": True} if accept else answer_file(answer)  # type: ignore[arg-type]
    except ReviewError as exc:
        raise _fail(str(exc), 2) from None
    url = _database_url(database_url)
    refused: list[str] = []

    def give():
        try:
            return jobs.answer(url, job_id, answers)
        except ReviewError as exc:  # an answer that does not fit: exit 2, like a bad flag
            refused.append(f"{answer or '--accept'}: {exc}")
            return None

    asked = _on_database(give, url)
    if asked is None:
        raise _fail(refused[0], 2)
    stdout.print(f"job {job_id}: {asked.kind.replace('_', ' ')} answered; back in the queue, it resumes from its "
                 "checkpoint", markup=False)


@jobs_app.command("cancel")
def jobs_cancel(
    job_id: Annotated[int, typer.Argument(help="a job id")],
    database_url: DatabaseUrl = None,
) -> None:
    """Cancel a waiting job; ask a running one to stop at its next step (it keeps its checkpoint)."""
    from briefroom import jobs

    url = _database_url(database_url)
    if not _on_database(lambda: jobs.cancel_job(url, job_id), url):
        raise _fail(f"job {job_id} has already finished; nothing to cancel")
    stdout.print(f"job {job_id}: cancel requested", markup=False)
