"""What every `briefroom` command shares: the consoles, one-line errors, progress
lines, how a run command ends, and the options several commands take."""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import click
import typer
from rich.console import Console

from briefroom.config import Settings
from briefroom.errors import BriefroomError

try:  # typer 0.2x runs on its own copy of click: its exceptions are not click's
    TyperClickException: type[click.ClickException] = importlib.import_module(
        "typer._click.exceptions").ClickException
except ImportError:  # older typer uses click itself
    TyperClickException = click.ClickException
EXIT = (click.exceptions.Exit, typer.Exit)
USAGE = (click.ClickException, TyperClickException)
ABORT = (click.exceptions.Abort, typer.Abort)

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
# What kind of report: `research` and `submit` take the same three.
ReportKindOption = Annotated[Optional[str], typer.Option("--report", metavar="brief|standard|detailed",
                                                         help="how much the report says (default standard)")]
Words = Annotated[Optional[int], typer.Option(min=50, max=20_000, help="the report's target length in words")]
Audience = Annotated[Optional[str], typer.Option(help="who the report is for, e.g. 'policy makers': its tone")]
Language = Annotated[Optional[str], typer.Option(help="the report's language, en or zh (default: the question's)")]
Quotes = Annotated[Optional[str], typer.Option("--quotes", metavar="keep|restate",
                                               help="the source sentences the report quotes: verbatim (keep, the "
                                                    "default) or said again in the model's words where code finds "
                                                    "a rewrite says the same (restate; env BRIEFROOM_QUOTES)")]


def quote_mode(mode: str | None) -> str | None:
    if mode is not None and mode not in ("keep", "restate"):
        raise _fail(f"--quotes must be keep or restate, got {mode[:40]!r}", 2)
    return mode


def report_kind(kind: str | None) -> str | None:
    from briefroom.report.spec import REPORT_KINDS

    if kind is not None and kind not in REPORT_KINDS:
        raise _fail(f"--report must be brief, standard or detailed, got {kind[:40]!r}", 2)
    return kind
