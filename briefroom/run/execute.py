"""The composition root: every run (`briefroom research` and `resume`, a queued job, a
replay, a served run, a workbench run) is built and finished by `execute_run`, and
however it ends, run.json and the run log say how (`_record_ending`).
"""

from __future__ import annotations

import contextlib
import traceback
from pathlib import Path
from typing import Any

from briefroom import runs
from briefroom.config import Settings
from briefroom.events import ErrorEvent, Interrupted
from briefroom.llm import ModelPool
from briefroom.protocol.redaction import redact_text
from briefroom.review import Reviewer
from briefroom.run.compose import compose
from briefroom.run.drive import drive
from briefroom.run.launch import RunLaunch, new_run, resumed_run
from briefroom.run.locks import exclusive_run_dir
from briefroom.run.request import ProgressFn, ResearchRequest, RunHooks, RunResult, UpdateFn, Watch
from briefroom.run.thread import charter_of, open_thread, reopen_log, team_of
from briefroom.runlog import RunLog


def run_research(request: ResearchRequest, settings: Settings, progress: ProgressFn | None = None,
                 stop_after_round: int | None = None, *, on_update: UpdateFn | None = None) -> RunResult:
    """A new run in a new run directory. `stop_after_round=K` pauses it, checkpointed,
    once round K has ended (`replay --until-round`); `resume_research` goes on from there."""
    return execute_run(new_run(request, settings), RunHooks(progress, on_update), stop_after_round)


def resume_research(run_dir: Path, overrides: dict[str, Any] | None = None, progress: ProgressFn | None = None,
                    *, live: bool = False, models: ModelPool | None = None, tools: dict[str, Any] | None = None,
                    stop_after_round: int | None = None, reviewer: Reviewer | None = None,
                    on_update: UpdateFn | None = None) -> RunResult:
    """Continue a run from its last checkpoint, after a crash, Ctrl-C, a dead endpoint or
    a FatalBreaker whose cause was fixed (`overrides`, e.g. {"max_tokens": 60000}).
    A replay continues with its cassette, or with a live model when `live` is set.
    A run paused at a question for its user is asked again, through `reviewer`."""
    launch = resumed_run(run_dir, overrides, live=live, models=models, tools=tools, reviewer=reviewer)
    return execute_run(launch, RunHooks(progress, on_update), stop_after_round)


def execute_run(launch: RunLaunch, hooks: RunHooks | None = None, stop_after_round: int | None = None) -> RunResult:
    """The one composition root: every run (`briefroom research` and `resume`, a queued
    job, a served run) is built and finished here, in named steps: the team; its
    checkpointed thread; the log and charter; the stores (corpus index, memory); the
    models; the run context and the graph's input; then the graph runs, and the run is
    paused or finished. However the run ends, run.json and the log say how
    (`_record_ending`)."""
    hooks = hooks or RunHooks()
    run_dir, record = launch.run_dir, launch.record
    watch = Watch(launch.settings, hooks.progress)
    team = team_of(launch.request, launch.settings)
    with contextlib.ExitStack() as stack:
        stack.enter_context(exclusive_run_dir(run_dir))  # (outside the try: run.json may be another process's)
        try:  # a database that refuses the run ends it here, recorded as failed, never left `running`
            thread = open_thread(launch, team, stack)
        except BaseException as exc:
            _record_ending(run_dir, record, None, exc)
            raise
        log: RunLog | None = None
        try:
            runs.update(run_dir, record, status="running", error=None, resumable=True)
            log, moved = reopen_log(launch, thread)
            charter = charter_of(launch, thread, log, moved, watch.say)
            parts = compose(launch, team, thread, log, moved, charter, stack, watch)
            return drive(parts, hooks, stop_after_round)
        except BaseException as exc:
            _record_ending(run_dir, record, log, exc)
            raise
        finally:
            if log is not None:
                log.close()


def _record_ending(run_dir: Path, record: runs.RunRecord, log: RunLog | None, exc: BaseException) -> None:
    """Write how the run ended (run.log, then run.json) before `exc` goes on: every way
    out (an error, Ctrl-C, a cancel, a lost database) leaves a final status and its reason."""
    status, reason, resumable = runs.ending_of(exc)
    if log is not None:
        with contextlib.suppress(Exception):  # a full disk must not hide the status below
            if status == "interrupted":
                log.write(Interrupted(round=record.round, resume=runs.resume_command(run_dir)))
            else:
                log.write(ErrorEvent(kind=type(exc).__name__, message=str(exc)[:1000],
                                     traceback=traceback.format_exc(limit=12)[-4000:]))
    runs.update(run_dir, record, status=status, error=redact_text(reason), resumable=resumable)
