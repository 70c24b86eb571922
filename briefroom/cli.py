"""The `briefroom` command: parse, call the library, print. Errors are one line."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import click
import typer
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

from briefroom.config import Settings, parse_role_models, parse_section_values
from briefroom.errors import BriefroomError

if TYPE_CHECKING:
    from briefroom.events import LlmCall
    from briefroom.inspect import CallRow, TaskRow
    from briefroom.report.export import Format
    from briefroom.review import ClarifyRequest, PlanReviewRequest
    from briefroom.run import RunResult

    UserRequest = PlanReviewRequest | ClarifyRequest

try:  # typer 0.2x runs on its own copy of click: its exceptions are not click's
    TyperClickException: type[click.ClickException] = importlib.import_module(
        "typer._click.exceptions").ClickException
except ImportError:  # older typer uses click itself
    TyperClickException = click.ClickException
EXIT = (click.exceptions.Exit, typer.Exit)
USAGE = (click.ClickException, TyperClickException)
ABORT = (click.exceptions.Abort, typer.Abort)

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="briefroom: a team of LLM agents that writes cited research reports.")
err = Console(stderr=True, highlight=False, soft_wrap=True)
stdout = Console(highlight=False)


def _fail(message: str, code: int = 1) -> typer.Exit:
    from briefroom.protocol.redaction import redact_text

    err.print(f"[bold red]error:[/] {redact_text(message)}", markup=True, soft_wrap=True)
    return typer.Exit(code)


def _progress(quiet: bool, as_json: bool = False):
    """Live progress on stderr: round, agent, step, tokens against the budget, elapsed."""
    from dataclasses import asdict

    def show(p) -> None:
        if quiet:
            return
        if as_json:
            sys.stderr.write(json.dumps({"progress": asdict(p)}) + "\n")
            return
        budget = f" of {p.max_tokens:,}" if p.max_tokens else ""
        err.print(f"[dim]round {p.round} · {p.agent} · {p.step} · {p.tokens_used:,}{budget} tokens · "
                  f"{p.elapsed_s:.1f}s[/]", markup=True)
    return show


class _Run:
    """The run directory a run command works in, once it is known."""

    dir: Path | None = None


@contextlib.contextmanager
def _run_errors():
    """How a run command ends when it does not finish: one line for the error and, if
    the run can go on (it is checkpointed and the cause was not a bad input), the
    command that resumes it; on Ctrl-C or SIGTERM the same, and exit 130."""
    from briefroom import runs
    from briefroom.errors import ConfigError
    from briefroom.models.cassette import ReplayDivergence

    run = _Run()

    def resumable() -> bool:
        return run.dir is not None and (run.dir / runs.RECORD_FILE).is_file()

    try:
        yield run
    except KeyboardInterrupt:
        if resumable():
            err.print(f"interrupted; checkpointed after the last finished step. Resume with: "
                      f"{runs.resume_command(run.dir)}")  # type: ignore[arg-type]
        else:
            err.print("interrupted; the run directory keeps everything done so far")
        sys.exit(130)  # not typer.Exit: typer would report a Ctrl-C of its own
    except BriefroomError as exc:
        failure = _fail(str(exc))
        # a bad input is fixed by running again; a diverged replay would diverge again
        if not isinstance(exc, (ConfigError, ReplayDivergence)) and resumable():
            err.print(f"the run is checkpointed; after fixing the cause: {runs.resume_command(run.dir)}",
                      markup=False)  # type: ignore[arg-type]
        raise failure from None


def _print_result(result, as_json: bool) -> None:
    if as_json:
        stdout.print_json(json.dumps({"run_dir": str(result.run_dir), "status": result.status,
                                      "report": str(result.run_dir / "report.md") if result.report else None,
                                      "models": sorted(result.labels),
                                      "cited": list(result.state["report"].cited_sources)
                                      if result.state.get("report") else []}))
    elif result.report is not None:
        sys.stdout.write(result.report)
        err.print(f"[green]report:[/] {result.run_dir / 'report.md'}  (models: {', '.join(sorted(result.labels))})")
    if result.over_budget:  # the budget is a promise: an overrun is said, and the exit code says it
        err.print(f"[bold yellow]over budget:[/] the run spent {result.tokens_used:,} tokens, {result.over_budget:,} "
                  f"past its budget of {result.budget:,} (the last model call's size is known only once it "
                  "returns); exit 3")
        raise typer.Exit(3)


class RoleListing(BaseModel):
    """A row of `briefroom roles`."""

    order: int
    name: str
    description: str
    tools: list[str]
    budget_tokens: int
    finishing_duty: str | None
    publishes: list[str]
    subscribes: list[str]
    capabilities: list[str]
    guards: list[str]


def _settings(**overrides) -> Settings:
    return Settings.from_env(**overrides)


# Options several commands share, declared once.
DatabaseUrl = Annotated[Optional[str], typer.Option("--database-url", help="PostgreSQL URL: the job queue, and "
                                                  "for runs their checkpoints and long-term memory (env "
                                                  "BRIEFROOM_DATABASE_URL; needs the server extra)")]
Json = Annotated[bool, typer.Option("--json", help="machine-readable output (JSON) instead of text")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="no progress lines")]
DataDir = Annotated[Optional[Path], typer.Option("--data-dir", help="index and memory stores "
                                                 "(env BRIEFROOM_DATA_DIR; default ~/.local/share/briefroom)")]
User = Annotated[Optional[str], typer.Option("--user", help="memory namespace: user (env BRIEFROOM_USER; "
                                             "default: login name)")]
Session = Annotated[Optional[str], typer.Option("--session", help="memory namespace: session (env "
                                                "BRIEFROOM_SESSION; default 'default')")]
Formats = Annotated[list[str], typer.Option("--format", help="also write the report as md, html, pdf, docx or "
                                            "json next to report.md (repeatable or comma-separated; pdf needs "
                                            "Chromium: `make browser`)")]


ReviewPlan = Annotated[bool, typer.Option("--review-plan", help="show the plan (its sub-questions) before any "
                                          "search and take accept, edit, add, drop or a note; without a "
                                          "terminal, answer with `briefroom resume RUN --answer FILE.json`")]
Clarify = Annotated[bool, typer.Option("--clarify", help="let the Planner first ask up to 3 short questions when "
                                       "the question is ambiguous; the answers become constraints")]
AnswerFile = Annotated[Optional[Path], typer.Option("--answer", metavar="FILE.json", help="the answer to a run's "
                                                    "plan review or clarifying questions, as JSON (instead of "
                                                    "asking at the terminal)")]


class _Reviewer:
    """Answers a run's questions for its user (`briefroom/review.py`): from --accept,
    an answer file, or the person at the terminal. When it cannot, `problem` says why
    and the run stays paused at the question, resumable."""

    def __init__(self, answers: dict | None, source: Path | None, accept: bool, interactive: bool):
        self.answers, self.source, self.accept, self.interactive = answers, source, accept, interactive
        self.problem: str | None = None
        self.bad_input = False  # the answer given was refused: exit 2, like a bad flag
        self._file_used = False

    def __call__(self, request: UserRequest) -> dict | None:
        from briefroom.review import accept_all, prompt_answer

        if self.accept:
            return accept_all(request)
        if self.answers is not None:
            return self._from_file(request, self.answers)
        if not self.interactive:
            self.problem = f"the run waits for its {_asked(request)} and stdin is not a terminal"
            return None
        answer = prompt_answer(request, _read_line, lambda line: err.print(line, markup=False, highlight=False))
        if answer is None:
            self.problem = f"no answer to the {_asked(request)} (end of input)"
        return answer

    def _from_file(self, request: UserRequest, answers: dict) -> dict | None:
        from briefroom.review import ReviewError, answer_for, check_answer

        entry = None if self._file_used else answer_for(answers, request)
        if entry is None:
            self.problem = f"{self.source} holds no answer to the {_asked(request)}"
            return None
        try:
            check_answer(entry, request)
        except ReviewError as exc:
            self.problem, self.bad_input = f"{self.source}: {exc}", True
            return None
        if not ({"plan_review", "clarify"} & set(answers)):
            self._file_used = True  # one answer, not keyed by kind, answers the first question only
        return entry


def _asked(request: UserRequest) -> str:
    return "plan review" if request.kind == "plan_review" else "answers to clarifying questions"


def _read_line(prompt: str) -> str | None:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else None


def _reviewer(answer: Path | None, accept: bool) -> _Reviewer:
    """Who answers this run's questions; an unreadable answer file stops before the run."""
    from briefroom.review import ReviewError, answer_file

    try:
        answers = answer_file(answer) if answer is not None else None
    except ReviewError as exc:
        raise _fail(str(exc), 2) from None
    return _Reviewer(answers, answer, accept, interactive=sys.stdin.isatty())


def _still_waiting(result: RunResult, reviewer: _Reviewer) -> None:
    """A run left paused at a question: one line saying why and how to answer, exit 1
    (2 when the answer given was refused)."""
    from briefroom import runs

    if result.status != "paused" or result.waiting_for is None:
        return
    why = reviewer.problem or f"the run waits for its {_asked(result.waiting_for)}"
    raise _fail(f"{why}; the run is paused there. Answer with: {runs.resume_command(result.run_dir)} "
                "--answer FILE.json (or --accept, or at a terminal)", 2 if reviewer.bad_input else 1)


@app.command()
def research(
    question: Annotated[str, typer.Argument(help="the research question")],
    corpus: Annotated[list[Path], typer.Option("--corpus", "-c", help="folder of documents (repeatable)")] = [],
    model: Annotated[Optional[str], typer.Option(help="'test', 'embedded', or a model on your endpoint")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")] = None,
    role_model: Annotated[list[str], typer.Option("--role-model", help="per-role model, ROLE=MODEL")] = [],
    rounds: Annotated[int, typer.Option(min=1, max=20, help="maximum rounds")] = 3,
    out: Annotated[Optional[Path], typer.Option(help="run directory (default runs/<time>-<slug>)")] = None,
    record: Annotated[Optional[Path], typer.Option(help="also save this run as a replayable scenario")] = None,
    force: Annotated[bool, typer.Option("--force", help="with --record: replace a scenario's recording")] = False,
    roles_dir: Annotated[list[Path], typer.Option("--roles-dir", help="folder of extra role files")] = [],
    structured: Annotated[Optional[str], typer.Option(help="auto|json_schema|json_object|json_object_schema")] = None,
    context: Annotated[Optional[str], typer.Option(help="layered (default) or naive: the append-everything baseline")] = None,
    max_tokens: Annotated[Optional[int], typer.Option(min=1000, help="run budget in tokens: at 85% only the Writer "
                                                      "works, at 100% the run stops")] = None,
    compact_at: Annotated[Optional[str], typer.Option("--compact-at", metavar="WARN,COMPRESS,FINISH",
                                                      help="shares of --max-tokens at which the run logs a "
                                                      "warning, builds smaller prompts, and leaves only the "
                                                      "Writer (default 0.6,0.75,0.85)")] = None,
    share: Annotated[list[str], typer.Option("--share", help="SECTION=FRACTION of a role's budget a prompt section "
                                             "fills first (memory, facts, summaries, whiteboard, sources, "
                                             "worktable)")] = [],
    floor: Annotated[list[str], typer.Option("--floor", help="SECTION=TOKENS a section always gets if it has "
                                             "items")] = [],
    data_dir: DataDir = None,
    user: User = None,
    session: Session = None,
    memory: Annotated[bool, typer.Option("--memory/--no-memory", help="recall verified facts, past tasks and "
                                         "skills at the start; keep what passes the write gates")] = True,
    memory_scope: Annotated[Optional[str], typer.Option(help="what the run may recall: user (all sessions) or "
                                                        "session")] = None,
    memory_threshold: Annotated[Optional[float], typer.Option(min=0.0, max=1.0, help="cosine similarity a "
                                                              "memory needs to be recalled (default 0.75)")] = None,
    fact_threshold: Annotated[Optional[float], typer.Option(min=0.0, max=1.0, help="share of the question's words "
                                                            "and numbers a remembered fact must hold to be recalled "
                                                            "(default 0.5)")] = None,
    language: Annotated[Optional[str], typer.Option(help="the report's language, en or zh (default: the "
                                                    "question's)")] = None,
    database_url: DatabaseUrl = None,
    parallel: Annotated[Optional[int], typer.Option(min=1, max=8, help="sub-questions searched at the same time, "
                                                    "one searcher instance each (env BRIEFROOM_PARALLEL; default "
                                                    "1; the embedded model serves each instance in a slot of "
                                                    "its own, batched)")] = None,
    threads: Annotated[Optional[int], typer.Option(min=1, max=64, help="threads of the embedded llama.cpp server "
                                                   "(env BRIEFROOM_THREADS; default: the cores free when it "
                                                   "starts)")] = None,
    idle_timeout: Annotated[Optional[float], typer.Option(min=1.0, help="seconds a model call may produce nothing "
                                                          "before it is given up (env BRIEFROOM_IDLE_TIMEOUT; "
                                                          "default 300); a call that is still producing is never "
                                                          "cut")] = None,
    web: Annotated[Optional[bool], typer.Option("--web/--no-web", help="let the Searcher search the web and read "
                                                "pages (cited by URL); env BRIEFROOM_WEB")] = None,
    search_provider: Annotated[Optional[str], typer.Option(help="searxng (self-hosted, --searxng-url) or brave "
                                                           "(key in BRIEFROOM_BRAVE_API_KEY)")] = None,
    searxng_url: Annotated[Optional[str], typer.Option(help="your SearXNG instance (env BRIEFROOM_SEARXNG_URL)")] = None,
    allow_domain: Annotated[list[str], typer.Option("--allow-domain", help="fetch only this domain and its "
                                                    "subdomains (repeatable)")] = [],
    deny_domain: Annotated[list[str], typer.Option("--deny-domain", help="never fetch this domain or its "
                                                   "subdomains (repeatable)")] = [],
    mcp_config: Annotated[Optional[Path], typer.Option(help="MCP servers file (JSON or YAML, Claude Desktop's "
                                                       "mcpServers; env BRIEFROOM_MCP_CONFIG): the Searcher may "
                                                       "call their tools and cite what they return")] = None,
    review_plan: ReviewPlan = False,
    clarify: Clarify = False,
    answer: AnswerFile = None,
    as_json: Json = False,
    quiet: Quiet = False,
    formats: Formats = [],
) -> None:
    """Research QUESTION over your documents (and the web, with --web) and write a cited report."""
    from briefroom.review import ReviewOptions
    from briefroom.run import ResearchRequest, default_run_dir, run_research

    exports = _export_formats(formats)  # a misspelt format fails before the run, not after it
    if out is not None and out.exists() and not out.is_dir():
        raise _fail(f"--out {out} is a file; give a folder for the run", 2)
    if record is not None and not force:
        recorded = [name for name in ("cassette.jsonl", "report.md") if (record / name).exists()]
        if recorded:  # before any work: a recording is not replaced by accident
            raise _fail(f"{record} already holds a recording ({', '.join(recorded)}); add --force to replace it "
                        "(its scenario.yaml answer key is kept)", 2)
    with _run_errors() as run:
        run.dir = out = out or default_run_dir(question)
        settings = _settings(model=model, base_url=base_url, role_models=parse_role_models(role_model),
                             rounds=rounds, data_dir=data_dir, structured=structured, context=context,
                             max_tokens=max_tokens, context_shares=parse_section_values(share, "--share", float),
                             context_floors=parse_section_values(floor, "--floor", int), memory=memory, user=user,
                             session=session, memory_scope=memory_scope, memory_threshold=memory_threshold,
                             fact_threshold=fact_threshold, parallel=parallel, compact_at=compact_at,
                             language=language, database_url=database_url, threads=threads,
                             idle_timeout=idle_timeout, web=web, search_provider=search_provider, searxng_url=searxng_url,
                             allow_domains=allow_domain or None, deny_domains=deny_domain or None,
                             mcp_config=mcp_config)
        reviewer = _reviewer(answer, accept=False)
        result = run_research(ResearchRequest(question=question, corpus=list(corpus), out=out, record=record,
                                              roles_dirs=list(roles_dir),
                                              review=ReviewOptions(plan=review_plan, clarify=clarify),
                                              reviewer=reviewer), settings,
                              progress=_progress(quiet, as_json))
    if exports and result.report is not None:
        _export(result.run_dir, exports)
    _print_result(result, as_json)
    _still_waiting(result, reviewer)


def _export_formats(values: list[str]) -> list[Format]:
    from briefroom.report.export import parse_formats

    try:
        return parse_formats(values)
    except BriefroomError as exc:
        raise _fail(str(exc), 2) from None


def _export(run_dir: Path, formats: list[Format]) -> list[Path]:
    from briefroom.report.export import export_run

    try:
        written = export_run(run_dir, formats)
    except BriefroomError as exc:
        raise _fail(str(exc)) from None
    for path in written:
        err.print(f"[green]exported:[/] {path}", markup=True)
    return written


@app.command("export")
def export_report(
    run_dir: Annotated[Path, typer.Argument(help="a finished run directory (it holds report.md)")],
    formats: Formats = [],
    as_json: Json = False,
) -> None:
    """Write a finished run's report as HTML, PDF, DOCX or JSON into its run directory."""
    exports = _export_formats(formats)
    if not exports:
        raise _fail("nothing to export: pass --format html,pdf,docx,json (or md)", 2)
    written = _export(run_dir, exports)
    if as_json:
        sys.stdout.write(json.dumps({"run_dir": str(run_dir), "files": [str(p) for p in written]}) + "\n")


@app.command()
def resume(
    run_dir: Annotated[Path, typer.Argument(help="a run directory that was interrupted, failed or paused")],
    model: Annotated[Optional[str], typer.Option(help="continue with another model")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")] = None,
    role_model: Annotated[list[str], typer.Option("--role-model", help="per-role model, ROLE=MODEL")] = [],
    max_tokens: Annotated[Optional[int], typer.Option(min=1000, help="a larger run budget, if the budget stopped "
                                                      "the run")] = None,
    live: Annotated[bool, typer.Option("--live", help="a replay goes on with a live model (--model) instead of "
                                       "its cassette")] = False,
    database_url: DatabaseUrl = None,
    answer: AnswerFile = None,
    accept: Annotated[bool, typer.Option("--accept", help="a run paused at its plan review: take the plan as "
                                         "proposed (and answer no clarifying question)")] = False,
    as_json: Json = False,
    quiet: Quiet = False,
) -> None:
    """Continue a run from its last checkpoint (after a crash, Ctrl-C, a failing endpoint
    or the token budget), with the same settings unless you change them here. A run
    paused at its plan review asks again (or takes --answer FILE.json, --accept)."""
    from briefroom import runs
    from briefroom.run import resume_research

    with _run_errors() as run:
        run.dir = run_dir
        record = runs.load(run_dir)
        if record.status == "done":
            err.print(f"{run_dir} is already complete: {run_dir / 'report.md'}")
            if as_json:
                stdout.print_json(runs.summarize(run_dir, record).model_dump_json())
            return
        if live and not (model or role_model):
            raise BriefroomError("--live needs --model (the model that continues the replay)")
        if answer is not None and accept:
            raise _fail("--answer and --accept both answer the review; give one", 2)
        overrides = {"model": model, "base_url": base_url, "max_tokens": max_tokens,
                     "role_models": parse_role_models(role_model) or None, "database_url": database_url}
        reviewer = _reviewer(answer, accept=accept)
        result = resume_research(run_dir, overrides, progress=_progress(quiet, as_json), live=live,
                                 reviewer=reviewer)
    _print_result(result, as_json)
    _still_waiting(result, reviewer)


def _database_url(url: str | None) -> str:
    found = url or os.environ.get("BRIEFROOM_DATABASE_URL")
    if not found:
        raise _fail("the job queue needs --database-url postgresql://... (or BRIEFROOM_DATABASE_URL)", 2)
    return found


@app.command()
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
    database_url: DatabaseUrl = None,
    as_json: Json = False,
) -> None:
    """Queue a research job for `briefroom worker`; prints its id. Keys stay with the workers."""
    from briefroom import jobs

    url = _database_url(database_url)
    if not corpus:
        raise _fail("no corpus: pass --corpus DIR", 2)
    choices = {"model": model, "rounds": rounds, "max_tokens": max_tokens, "parallel": parallel,
               "data_dir": data_dir}  # what this command chose; the rest is each worker's
    job_id = _on_database(lambda: jobs.submit(url, question, corpus, runs_root, choices), url)
    if as_json:
        sys.stdout.write(json.dumps({"job": job_id, "run_dir": str(jobs.run_dir_of(runs_root, job_id))}) + "\n")
    else:
        stdout.print(f"job {job_id} queued; its run directory will be {jobs.run_dir_of(runs_root, job_id)}",
                     markup=False)


@app.command()
def worker(
    processes: Annotated[int, typer.Option("--processes", "-n", min=1, max=64, help="worker processes, one job "
                                           "at a time each")] = 1,
    until_empty: Annotated[bool, typer.Option("--until-empty", help="stop once the queue is empty")] = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Run research jobs from the queue. A job whose worker died is taken up by another and
    goes on from its last checkpoint."""
    from briefroom import jobs

    url = _database_url(database_url)
    stalled = float(os.environ.get("BRIEFROOM_JOB_STALLED_AFTER", jobs.STALLED_AFTER_S))
    heartbeat = min(jobs.HEARTBEAT_S, stalled / 3)
    try:
        jobs.work(url, processes, stalled_after=stalled, heartbeat=heartbeat, wait=not until_empty)
    except BriefroomError as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


@app.command()
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


jobs_app = typer.Typer(help="The research job queue: list, show, cancel.")
app.add_typer(jobs_app, name="jobs")


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
    status: Annotated[Optional[str], typer.Option(help="todo, doing, succeeded, failed, cancelled, aborted")] = None,
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
    for key, value in vars(row).items():
        if value is not None:  # no run directory, no run.json, no reason yet: not shown
            stdout.print(f"{key}: {value}", markup=False)


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


runs_app = typer.Typer(help="Runs in a folder: their status, and what each did.")
app.add_typer(runs_app, name="runs")


@runs_app.command("list")
def runs_list(
    folder: Annotated[Path, typer.Argument(help="folder of run directories")] = Path("runs"),
    as_json: Json = False,
) -> None:
    """Every run under FOLDER, newest first: status, rounds, question."""
    from briefroom import runs

    try:
        found = runs.find_runs(folder)
    except BriefroomError as exc:
        raise _fail(str(exc)) from None
    rows = [runs.RunListing(run_dir=str(d), status=r.status if r else "unknown", round=r.round if r else None,
                            max_rounds=r.settings.get("rounds") if r else None, question=r.question if r else None,
                            updated=r.updated if r else None, report=(d / "report.md").is_file()) for d, r in found]
    if as_json:
        sys.stdout.write(json.dumps([row.model_dump(mode="json") for row in rows], ensure_ascii=False) + "\n")
        return
    if not rows:
        err.print(f"no runs in {folder}")
    from rich.table import Table

    grid = Table("run", "status", "rounds", "updated", "question", box=None, pad_edge=False)
    for row in rows:
        rounds = f"{row.round}/{row.max_rounds}" if row.round is not None else "-"
        updated = (row.updated or "-")[:16].replace("T", " ")  # to the minute, UTC
        grid.add_row(Path(row.run_dir).name, row.status, rounds, updated,
                     (row.question or "(no run.json: an older run)")[:60])
    stdout.print(grid)


@runs_app.command("show")
def runs_show(
    run_dir: Annotated[Path, typer.Argument(help="a run directory")],
    as_json: Json = False,
) -> None:
    """One run: status, question, counts from its log, and how to resume it."""
    from briefroom import runs

    try:
        info = runs.summarize(run_dir, runs.load(run_dir)).model_dump(mode="json")
    except BriefroomError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps(info, ensure_ascii=False) + "\n")
        return
    for key, value in info.items():
        if value not in (None, [], ""):
            stdout.print(f"[bold]{key}[/]: {escape(str(value))}", markup=True)


@app.command()
def index(folders: Annotated[list[Path], typer.Argument(help="folders of documents")], data_dir: DataDir = None,
          database_url: DatabaseUrl = None) -> None:
    """Index FOLDERS so later research runs start without embedding."""
    from briefroom.stores import open_index

    try:
        settings = _settings(data_dir=data_dir, database_url=database_url)
        idx = open_index(settings)
        stats = idx.sync(list(folders), progress=lambda line: err.print(line, markup=False))
        idx.close()
    except BriefroomError as exc:
        raise _fail(str(exc)) from None
    stdout.print(f"{stats.documents} documents ({stats.reused_documents} already indexed), "
              f"{stats.embedded_chunks} chunks embedded, in {settings.data_dir}")


@app.command()
def inspect(
    run_dir: Annotated[Path, typer.Argument(help="a run directory (with run.jsonl)")],
    html_file: Annotated[Optional[Path], typer.Option("--html", help="write a self-contained HTML page here")] = None,
    as_json: Json = False,
) -> None:
    """Show every model call of a run: agent, round, tokens by section, budget use, what was cut.
    --html writes the full run page: timeline, message flow, prompts, tools, memory, report."""
    from briefroom import inspect as look
    from briefroom.runpage import render_page

    bad: list[str] = []  # what is valid is shown; each garbled line is named, and the exit is 1
    try:
        events = look.load_events(run_dir, on_bad_line=lambda line: bad.append(
            f"{run_dir / 'run.jsonl'}:{line.line}: {line.reason}"))
    except BriefroomError as exc:
        raise _fail(str(exc)) from None
    for line in bad:
        err.print(f"skipped {line}", markup=False)
    calls = look.calls_of(events)
    table = look.call_rows(calls)
    if html_file is not None:
        try:
            html_file.write_text(render_page(run_dir, events), encoding="utf-8")
        except OSError as exc:
            raise _fail(f"cannot write {html_file}: {exc.strerror}") from None
        err.print(f"wrote {html_file}")
    if as_json:
        stdout.print_json(json.dumps([r.as_dict() for r in table]))
    else:
        _print_calls(calls, table)
        _print_tasks(look.task_rows(events))
    if bad:
        raise _fail(f"{len(bad)} line(s) of run.jsonl are not events (named above); the rest is shown")


def _print_calls(calls: list["LlmCall"], table: list["CallRow"]) -> None:
    from rich.table import Table

    from briefroom import inspect as look

    names = look.sections_present(calls)
    grid = Table("#", "agent", "rnd", *names, "total", "budget", "cut", "cached", box=None, pad_edge=False)
    for r in table:
        cut = f"{r.compressed}c/{r.dropped}d" if r.compressed or r.dropped else ""
        cached = f"{r.cached_tokens}/{r.served_prompt_tokens}" if r.cached_tokens is not None else "-"
        grid.add_row(str(r.n), r.agent, str(r.round), *(str(r.sections.get(s, 0)) for s in names),
                     str(r.prompt_tokens), f"{r.use_pct}%", cut, cached)
    stdout.print(grid)
    rate = look.cache_hit_rate(calls)
    stdout.print("prompt cache: " + (f"{rate:.0%} of the prompt tokens the endpoint counted were served from its "
                                     "cache" if rate is not None else "the endpoint did not report cached tokens"))
    for agent, t in sorted(look.totals_by_agent(calls).items()):
        stdout.print(f"{agent}: {t.calls} calls, {t.prompt_tokens} prompt + {t.completion_tokens} "
                     "completion tokens")


def _print_tasks(rows: list["TaskRow"]) -> None:
    """The task tree: lineage, version, who answered, how many conclusions."""
    if rows:
        stdout.print("tasks (lineage, root first):")
    for t in rows:
        refs = f", {len(t.artifacts)} reference(s) handed over" if t.artifacts else ""
        stdout.print(f"  {t.path}  v{t.version}  round {t.round}  {', '.join(t.workers) or 'unanswered'}: "
                     f"{t.conclusions} conclusion(s){refs}  | {t.question[:90]}", markup=False, soft_wrap=True)


bench_app = typer.Typer(help="Benchmarks (need a source checkout: the code lives in bench/).")
app.add_typer(bench_app, name="bench")


@bench_app.command("context")
def bench_context(
    rounds: Annotated[list[int], typer.Option("--rounds", min=1, max=200, help="rounds (repeatable)")] = [10, 30],
    window: Annotated[int, typer.Option("--window", min=8_000, max=2_000_000,
                                        help="model context window in tokens")] = 128_000,
    as_json: Json = False,
) -> None:
    """Layered vs naive prompts over a long synthetic run: tokens, slope, fact recall, build time."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "bench" / "context.py"
    if not path.is_file():
        raise _fail("the benchmarks live in bench/ of a source checkout; clone the repository to run them")
    spec = importlib.util.spec_from_file_location("briefroom_bench_context", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    for n in rounds:
        result = module.run(n, window)
        if as_json:
            sys.stdout.write(json.dumps(result) + "\n")
        else:
            stdout.print(f"{n} rounds: layered {result['layered_prompt_tokens']:,} vs naive "
                         f"{result['naive_prompt_tokens']:,} prompt tokens (ratio {result['ratio']}); fact recall "
                         f"{result['fact_recall']:.0%} vs {result['naive_fact_recall']:.0%}; slope "
                         f"{result['per_round_slope_pct_of_budget']}% of budget/round; build p95 "
                         f"{result['build_ms_p95']} ms at 10k messages")


from briefroom.models.catalog_cli import models_app  # its commands live beside the catalog they use

app.add_typer(models_app, name="models")


memory_app = typer.Typer(help="Long-term memory: list, search, show, forget, export (per namespace).")
app.add_typer(memory_app, name="memory")
Zone = Annotated[Optional[str], typer.Option("--zone", help="vector | fact | skill (default: all)")]
Scope_ = Annotated[str, typer.Option("--scope", help="user (all sessions) | session")]


@contextlib.contextmanager
def _memory(data_dir: Path | None, user: str | None, session: str | None, scope: str, zone: str | None = None):
    """The store, namespace and scope for a memory command; closed after, errors as one line."""
    from briefroom.corpus.embeddings import make_embedder
    from briefroom.memory.namespace import Namespace, default_user
    from briefroom.memory.store import MemoryStore
    from briefroom.memory.zones import ZONES

    try:
        settings = _settings(data_dir=data_dir, user=user, session=session, memory_scope=scope)
        if zone is not None and zone not in ZONES:
            raise BriefroomError(f"--zone must be one of {', '.join(ZONES)}")
        ns = Namespace(settings.user or default_user(), settings.session)
        store = MemoryStore(settings.data_dir, make_embedder(settings.embedder))
        try:
            yield store, ns, settings.memory_scope
        finally:
            store.close()
    except BriefroomError as exc:
        raise _fail(str(exc)) from None


def _print_items(items: list[dict], as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(items, indent=1, ensure_ascii=False) + "\n")
        return
    if not items:
        err.print("no memories in this namespace")
    for item in items:
        status = f" [{item['status']}]" if item.get("status") else ""
        head = f"{item['id']}  {item['zone']}{status}"
        stdout.print(f"[bold]{head}[/]  {item.get('entity', '') or item.get('kind', '')}", markup=True)
        stdout.print("    " + str(item["text"]).replace("\n", "\n    "), markup=False)


@memory_app.command("list")
def memory_list(data_dir: DataDir = None, user: User = None, session: Session = None, zone: Zone = None,
                scope: Scope_ = "user",
                as_json: Json = False) -> None:
    """Every memory in the namespace, oldest first."""
    with _memory(data_dir, user, session, scope, zone) as (store, ns, scope):
        items = store.items(ns, scope, zone)
    _print_items(items, as_json)


@memory_app.command("search")
def memory_search(query: Annotated[str, typer.Argument(help="what to look for")], data_dir: DataDir = None,
                  user: User = None, session: Session = None, scope: Scope_ = "user",
                  threshold: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.5,
                  as_json: Json = False) -> None:
    """Memories and skills similar to QUERY (what a run would recall), best first."""
    with _memory(data_dir, user, session, scope) as (store, ns, scope):
        found = [*store.recall(query, ns, scope, threshold=threshold),
                 *store.skills_for(query, ns, scope, threshold=threshold)]
    _print_items([{"id": r.item_id, "zone": r.zone, "text": r.text, "similarity": r.similarity, "score": r.score,
                   "provenance": r.provenance} for r in found], as_json)


@memory_app.command("show")
def memory_show(item_id: Annotated[str, typer.Argument(help="a memory id from list or search")],
                data_dir: DataDir = None, user: User = None, session: Session = None, scope: Scope_ = "user") -> None:
    """One memory with its provenance, as JSON."""
    with _memory(data_dir, user, session, scope) as (store, ns, scope):
        items = [i for i in store.items(ns, scope) if i["id"] == item_id]
        if not items:
            raise BriefroomError(f"no memory {item_id!r} in this namespace")
    sys.stdout.write(json.dumps(items[0], indent=1, ensure_ascii=False) + "\n")


@memory_app.command("forget")
def memory_forget(item_id: Annotated[str, typer.Argument(help="a memory id from list or search")],
                  data_dir: DataDir = None, user: User = None, session: Session = None,
                  scope: Scope_ = "user") -> None:
    """Remove a memory from every zone and compact the stores (no plaintext left on disk)."""
    with _memory(data_dir, user, session, scope) as (store, ns, scope):
        removed = store.forget(item_id, ns, scope)
        if not removed:
            raise BriefroomError(f"no memory {item_id!r} in this namespace")
    err.print(f"forgot {item_id} ({removed} row(s), history included)")


@memory_app.command("export")
def memory_export(data_dir: DataDir = None, user: User = None, session: Session = None, zone: Zone = None,
                  scope: Scope_ = "user") -> None:
    """The namespace's memories as JSON lines, one per memory (to back up or move)."""
    with _memory(data_dir, user, session, scope, zone) as (store, ns, scope):
        items = store.items(ns, scope, zone)
    for item in items:
        sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")


@app.command()
def roles(roles_dir: Annotated[list[Path], typer.Option("--roles-dir", help="folder of extra role files")] = [],
          as_json: Json = False) -> None:
    """List the roles a run would use: speaking order, subscriptions, publications, tools."""
    from briefroom.agents.registry import discover

    try:
        found = discover(list(roles_dir))
    except BriefroomError as exc:
        raise _fail(str(exc)) from None
    rows = [RoleListing(order=r.order, name=r.name, description=r.description,
                        tools=[*r.tools, *(f"{t} (optional)" for t in r.optional_tools)],
                        budget_tokens=r.budget_tokens, finishing_duty=r.finishing_duty,
                        publishes=[t.value for t in r.publications],
                        subscribes=[s.msg_type.value + (f" from {'/'.join(s.senders)}" if s.senders else "")
                                    for s in r.subscriptions],
                        capabilities=list(r.capabilities), guards=[t.value for t in r.guards]) for r in found]
    if as_json:
        stdout.print_json(json.dumps([row.model_dump(mode="json") for row in rows]))
        return
    for row in rows:
        stdout.print(f"{row.order:>4}  [bold]{row.name}[/]  {row.description}\n"
                     f"      reads: {', '.join(row.subscribes) or '-'}; publishes: {', '.join(row.publishes) or '-'}; "
                     f"tools: {', '.join(row.tools) or '-'}; budget: {row.budget_tokens} tokens"
                     + (f"; answers to: {', '.join(row.capabilities)}" if row.capabilities else "")
                     + (f"; guards: {', '.join(row.guards)}" if row.guards else "")
                     + (f"; when finishing: {row.finishing_duty}" if row.finishing_duty else ""))


@app.command()
def replay(
    scenario_dir: Annotated[Path, typer.Argument(help="a scenario folder (scenario.yaml, corpus/, cassette.jsonl)")],
    check: Annotated[bool, typer.Option("--check", help="exit 1 unless the recorded report is reproduced")] = False,
    out: Annotated[Optional[Path], typer.Option(help="run directory for the replay")] = None,
    until_round: Annotated[Optional[int], typer.Option("--until-round", min=1, help="replay rounds 1..K from the "
                                                       "cassette, then go on with a live model (--model)")] = None,
    model: Annotated[Optional[str], typer.Option(help="the live model after --until-round")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="its OpenAI-compatible endpoint")] = None,
    role_model: Annotated[list[str], typer.Option("--role-model", help="per-role live model, ROLE=MODEL")] = [],
    data_dir: DataDir = None,
    as_json: Json = False,
    quiet: Quiet = False,
) -> None:
    """Re-run a recorded scenario with its recorded model responses (no model needed);
    with --until-round K, only up to round K, then a live model takes over."""
    from briefroom.models.cassette import ReplayDivergence
    from briefroom.replay import replay_scenario
    from briefroom.scenario import report_diff

    with _run_errors() as run:
        if until_round is not None and check:
            raise BriefroomError("--check compares a whole replay with its recording; drop it with --until-round")
        run.dir = out or Path(tempfile.mkdtemp(prefix=f"briefroom-replay-{scenario_dir.name}-"))
        live = {"model": model, "base_url": base_url, "role_models": parse_role_models(role_model) or None}
        try:
            replayed = replay_scenario(scenario_dir, _settings(data_dir=data_dir), run.dir, until_round=until_round,
                                       live=live, progress=_progress(quiet, as_json), on_handover=err.print)
        except ReplayDivergence as exc:
            err.print(exc.diff, markup=False)
            raise
    result = replayed.result
    if check:
        problems = replayed.check()
        if problems:
            if replayed.recorded_report is not None and result.report != replayed.recorded_report:
                err.print(report_diff(replayed.recorded_report, result.report or ""), markup=False)
            raise _fail(problems[0] if replayed.recorded_report is None else "; ".join(problems))
        err.print(f"[green]ok:[/] {replayed.scenario.name} reproduced its recorded report "
                  f"({len(replayed.cassette.entries)} calls)")
    elif as_json or until_round is not None:
        _print_result(result, as_json)
    else:
        sys.stdout.write(result.report or "")
    err.print(f"run directory: {result.run_dir}")


@app.command("eval")
def eval_(
    scenarios: Annotated[list[Path], typer.Argument(help="scenario folders, or folders of them")] = [Path("scenarios")],
    model: Annotated[Optional[str], typer.Option(help="run live with this model ('embedded', a GGUF path, a model "
                                                 "on your endpoint); without it, each scenario replays its "
                                                 "recording")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")] = None,
    context: Annotated[list[str], typer.Option("--context", help="layered and/or naive (repeat the flag to "
                                               "compare both in one run)")] = [],
    repeat: Annotated[int, typer.Option(min=1, max=20, help="runs per scenario and context; the summary shows "
                                        "each metric's mean, stdev and range over the repeats")] = 1,
    split: Annotated[str, typer.Option(help="dev (tuned on), test (held out) or all (both, reported "
                                       "apart)")] = "all",
    score: Annotated[Optional[Path], typer.Option("--score", help="score this Markdown report (a peer's, say) "
                                                  "against the one scenario given, instead of running")] = None,
    out: Annotated[Optional[Path], typer.Option(help="folder for the run directories (default: a temp folder)")] = None,
    html_file: Annotated[Optional[Path], typer.Option("--html", help="also write an offline page with charts")] = None,
    min_recall: Annotated[Optional[float], typer.Option(min=0, max=1, help="exit 1 below this mean recall")] = None,
    min_support: Annotated[Optional[float], typer.Option(min=0, max=1, help="exit 1 below this citation support")] = None,
    min_coverage: Annotated[Optional[float], typer.Option(min=0, max=1, help="exit 1 below this part coverage")] = None,
    max_unsupported: Annotated[Optional[int], typer.Option(min=0, help="exit 1 above this many unsupported "
                                                           "numbers")] = None,
    max_unretrieved: Annotated[Optional[int], typer.Option(min=0, help="exit 1 above this many citations to "
                                                           "unretrieved sources")] = None,
    data_dir: DataDir = None,
    as_json: Json = False,
    quiet: Quiet = False,
) -> None:
    """Score reports against answer keys: recall, citation support, unsupported numbers,
    coverage of the question's parts, traps in the short answer, the authoritative figure,
    language, tokens, calls and time; the dev and test splits apart (thresholds apply to each)."""
    from briefroom.evaluation import page, text
    from briefroom.evaluation.suite import SplitChoice, discover, run_suite, unrecorded
    from briefroom.evaluation.summary import rows_by_label, summarize, summarize_splits, threshold_failures

    if split not in ("dev", "test", "all"):
        raise _fail(f"--split must be dev, test or all, not {split!r}", 2)
    chosen: SplitChoice = "dev" if split == "dev" else "test" if split == "test" else "all"
    if score is not None:
        _eval_score_file(score, scenarios, as_json)
        return
    contexts = list(dict.fromkeys(context)) or ["layered"]
    for c in contexts:
        if c not in ("layered", "naive"):
            raise _fail(f"--context must be layered or naive, not {c!r}", 2)
    if model is None and (context or base_url):
        raise _fail("--context and --base-url go with --model: without a model, scenarios replay their recordings", 2)
    settings = _settings(data_dir=data_dir, **({"base_url": base_url} if base_url else {}))
    try:
        skipped = [] if model is not None else unrecorded(discover(scenarios, chosen))
        results = run_suite(scenarios, contexts=contexts, repeat=repeat, model=model, settings=settings, out_root=out,
                            split=chosen,
                            progress=None if quiet or as_json else (lambda s: err.print(f"[dim]{s}[/]", markup=True)))
    except BriefroomError as exc:
        raise _fail(str(exc)) from None
    splits = summarize_splits(results)
    summary = summarize(results)
    if as_json:
        sys.stdout.write(json.dumps({"splits": splits, "summary": summary, "skipped_unrecorded": skipped,
                                     "runs": [r.as_dict() for r in results]}, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(text.render(results, splits, skipped))
    if html_file is not None:
        html_file.write_text(page.render(results, summary), encoding="utf-8")
        err.print(f"wrote {html_file}")
    failures = threshold_failures(rows_by_label(splits), {
        "min_recall": min_recall, "min_support": min_support, "min_coverage": min_coverage,
        "max_unsupported": max_unsupported, "max_unretrieved": max_unretrieved}, results)
    if failures:
        for line in failures:
            err.print(f"[bold red]below threshold:[/] {escape(line)}", markup=True)
        raise typer.Exit(1)


def _eval_score_file(report: Path, scenarios: list[Path], as_json: bool) -> None:
    """`eval --score REPORT.md SCENARIO`: the suite's scores for one report written anywhere."""
    from dataclasses import asdict

    from briefroom.evaluation.scoring import score_report_file

    if len(scenarios) != 1:
        raise _fail("--score needs exactly one scenario folder: briefroom eval --score REPORT.md scenarios/NAME", 2)
    try:
        s = score_report_file(report, scenarios[0])
    except BriefroomError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps({**asdict(s), "support": round(s.support, 4)}, indent=2,
                                    ensure_ascii=False) + "\n")
        return
    authoritative = {None: "-", True: "yes", False: "NO"}[s.short_answer_authoritative]
    sys.stdout.write(f"{report}: recall {s.recall:.2f}  support {s.support:.2f}  coverage {s.coverage:.2f}  "
                     f"unsupported {len(s.unsupported_numbers)}  unretrieved {s.unretrieved_citations}  "
                     f"traps {len(s.trap_hits)} (short answer {len(s.short_answer_trap_hits)})  "
                     f"authoritative {authoritative}  language {'ok' if s.language_ok else 'WRONG'}\n"
                     f"missed: {', '.join(s.missed) or '-'}\n")


def _stop_like_ctrl_c(*_: object) -> None:
    raise KeyboardInterrupt


def install_stop_signals() -> None:
    """SIGTERM and SIGHUP (a closed terminal) end the run like Ctrl-C does: checkpointed,
    run.json says "interrupted", context managers stop the model server."""
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stop_like_ctrl_c)


def main() -> None:
    install_stop_signals()
    try:
        # Not standalone, click returns a command's exit code instead of exiting
        # (typer turns Ctrl-C into 130): pass it on, or every error would exit 0.
        code = app(standalone_mode=False)
        if code == 130:
            raise KeyboardInterrupt
        if isinstance(code, int) and code:
            sys.exit(code)
    except EXIT as exc:
        sys.exit(exc.exit_code)
    except USAGE as exc:  # bad flags, missing arguments: click's own message
        exc.show()
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, *ABORT):  # run commands say more (`_run_errors`)
        err.print("interrupted")
        sys.exit(130)
    except BriefroomError as exc:
        _fail(str(exc))
        sys.exit(1)
    except OSError as exc:  # the machine said no: a path that is a file, no permission, a full disk
        where = f" ({exc.filename})" if exc.filename else ""
        _fail(f"{exc.strerror or type(exc).__name__}{where}: check the paths given (--out, --data-dir, "
              "--corpus) and free disk space")
        sys.exit(1)
    except Exception as exc:  # a bug: still one line for the user; the run log has the details
        from briefroom.protocol.redaction import redact_text

        first = redact_text(str(exc).splitlines()[0][:300]) if str(exc) else ""
        err.print(f"[bold red]error:[/] internal error (a bug in briefroom, please report it): "
                  f"{type(exc).__name__}: {first}", soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
