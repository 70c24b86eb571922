"""Commands that read runs and the team back: `runs list|show`, `index`, `inspect`, `roles`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from pydantic import BaseModel
from rich.markup import escape

from briefroom.cli.common import DatabaseUrl, DataDir, Json, _fail, _settings, err, stdout
from briefroom.errors import BriefroomError

if TYPE_CHECKING:
    from briefroom.events import LlmCall
    from briefroom.inspect import CallRow, TaskRow


runs_app = typer.Typer(help="Runs in a folder: their status, and what each did.")


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
    after: list[str]
    before: list[str]



def roles(roles_dir: Annotated[list[Path], typer.Option("--roles-dir", help="folder of extra role files")] = [],
          as_json: Json = False) -> None:
    """List the roles a run would use: speaking order, subscriptions, publications, tools."""
    from briefroom.agents.registry import discover

    try:
        found = discover(list(roles_dir))
    except BriefroomError as exc:
        raise _fail(str(exc)) from None
    rows = [RoleListing(order=n, name=r.name, description=r.description,
                        tools=[*r.tools, *(f"{t} (optional)" for t in r.optional_tools)],
                        budget_tokens=r.budget_tokens, finishing_duty=r.finishing_duty,
                        publishes=[t.value for t in r.publications],
                        subscribes=[s.msg_type.value + (f" from {'/'.join(s.senders)}" if s.senders else "")
                                    for s in r.subscriptions],
                        capabilities=list(r.capabilities), guards=[t.value for t in r.guards],
                        after=list(r.after), before=list(r.before)) for n, r in enumerate(found, start=1)]
    if as_json:
        stdout.print_json(json.dumps([row.model_dump(mode="json") for row in rows]))
        return
    for row in rows:
        stdout.print(f"{row.order:>4}  [bold]{row.name}[/]  {row.description}\n"
                     f"      reads: {', '.join(row.subscribes) or '-'}; publishes: {', '.join(row.publishes) or '-'}; "
                     f"tools: {', '.join(row.tools) or '-'}; budget: {row.budget_tokens} tokens"
                     + (f"; answers to: {', '.join(row.capabilities)}" if row.capabilities else "")
                     + (f"; guards: {', '.join(row.guards)}" if row.guards else "")
                     + (f"; after: {', '.join(row.after)}" if row.after else "")
                     + (f"; before: {', '.join(row.before)}" if row.before else "")
                     + (f"; when finishing: {row.finishing_duty}" if row.finishing_duty else ""))
