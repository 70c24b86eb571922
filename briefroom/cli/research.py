"""`research`, `resume` and `export`: the commands that run research and write its report."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from briefroom.cli.common import (
    Audience,
    DatabaseUrl,
    DataDir,
    Formats,
    Json,
    Language,
    Quiet,
    Quotes,
    ReportKindOption,
    Session,
    User,
    Words,
    _fail,
    _print_result,
    _progress,
    _run_errors,
    _settings,
    err,
    quote_mode,
    report_kind,
    stdout,
)
from briefroom.cli.drafts import follow_drafts
from briefroom.cli.reviewer import AnswerFile, Clarify, ReviewPlan, _reviewer, _still_waiting
from briefroom.config import parse_role_models, parse_section_values
from briefroom.errors import BriefroomError

if TYPE_CHECKING:
    from briefroom.report.export import Format


def research(
    question: Annotated[str, typer.Argument(help="the research question")],
    corpus: Annotated[list[Path], typer.Option("--corpus", "-c", help="folder of documents (repeatable)")] = [],
    model: Annotated[Optional[str], typer.Option(help="'test', 'embedded', or a model on your endpoint")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")] = None,
    role_model: Annotated[list[str], typer.Option("--role-model", help="per-role model, ROLE=MODEL")] = [],
    rounds: Annotated[int, typer.Option(min=1, max=20, help="maximum rounds")] = 3,
    out: Annotated[Optional[Path], typer.Option(help="run directory (default runs/<time>-<slug>)")] = None,
    record: Annotated[Optional[Path], typer.Option(help="also save this run as a replayable scenario (into a "
                                                "scenario's recordings/TAG: as that model's recording of it)")] = None,
    force: Annotated[bool, typer.Option("--force", help="with --record: replace a scenario's recording")] = False,
    reuse: Annotated[bool, typer.Option("--reuse", help="with --record: replace the recording there, taking the "
                                        "reply it holds for each prompt that has not changed (same model); only "
                                        "the calls a change moved are asked of the model")] = False,
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
    language: Language = None,
    report: ReportKindOption = None,
    words: Words = None,
    audience: Audience = None,
    quotes: Quotes = None,
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
    if record is not None:
        from briefroom.scenario import check_record_target

        try:  # a recording of a shipped scenario asks its question over its corpus
            check_record_target(record, question, list(corpus))
        except BriefroomError as exc:
            raise _fail(str(exc), 2) from None
    replies = None
    if reuse:
        from briefroom.scenario import recorded_replies

        if record is None:
            raise _fail("--reuse goes with --record: it re-records the recording there", 2)
        try:
            replies = recorded_replies(record)
        except BriefroomError as exc:
            raise _fail(str(exc), 2) from None
    if record is not None and not force and not reuse:
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
                             report_kind=report_kind(report), words=words, audience=audience,
                             **({"quotes": quote_mode(quotes)} if quotes else {}),
                             idle_timeout=idle_timeout, web=web, search_provider=search_provider, searxng_url=searxng_url,
                             allow_domains=allow_domain or None, deny_domains=deny_domain or None,
                             mcp_config=mcp_config)
        reviewer = _reviewer(answer, accept=False)
        result = run_research(ResearchRequest(question=question, corpus=list(corpus), out=out, record=record,
                                              reuse=replies, roles_dirs=list(roles_dir),
                                              review=ReviewOptions(plan=review_plan, clarify=clarify),
                                              reviewer=reviewer), settings,
                              progress=_progress(quiet, as_json), on_update=follow_drafts(quiet, as_json))
    if exports and result.report is not None:
        _export(result.run_dir, exports)
    if replies is not None and record is not None and result.report is not None:  # even --quiet: what --reuse did
        from briefroom.models.cassette import Cassette

        made = len(Cassette.load(record).entries)
        err.print(f"{record}: {replies.reused} of {made} call(s) reused from the recording it replaced, "
                  f"{made - replies.reused} asked of the model", markup=False)
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
                                 reviewer=reviewer, on_update=follow_drafts(quiet, as_json))
    _print_result(result, as_json)
    _still_waiting(result, reviewer)
