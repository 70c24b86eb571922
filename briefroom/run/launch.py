"""A run about to be built: its directory and run.json, for a new run or for one taken
up again from its run directory. Nothing here opens a store or starts a model, so a run
that cannot start fails before it leaves anything but its checks' error.
"""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from briefroom import runs
from briefroom.config import Settings
from briefroom.errors import ConfigError
from briefroom.llm import ModelPool
from briefroom.memory.namespace import Namespace, default_user
from briefroom.models.cassette import Cassette
from briefroom.review import Reviewer
from briefroom.run.request import ResearchRequest, clean_question, default_run_dir, slugify


@dataclass(frozen=True)
class RunLaunch:
    """A run about to be built: its directory, its record (run.json), the settings it
    runs with and what it was asked. `new_run` makes one for a new run, `resumed_run`
    from a run directory; `execute_run` builds and finishes either."""

    run_dir: Path
    record: runs.RunRecord
    settings: Settings
    request: ResearchRequest

    @property
    def namespace(self) -> Namespace | None:
        """Where the run reads and writes long-term memory; None: it uses none."""
        return Namespace(**self.record.namespace) if self.record.namespace else None


def new_run(request: ResearchRequest, settings: Settings) -> RunLaunch:
    """A new run's directory and run.json, after the checks that need no run directory."""
    request = replace(request, question=clean_question(request.question))
    if not request.corpus and not settings.web:
        raise ConfigError("no corpus: pass --corpus DIR (a folder of md, txt, html or pdf files), or --web")
    for folder in request.corpus:  # before a run directory exists for a run that cannot start
        if not Path(folder).is_dir():
            raise ConfigError(f"corpus folder not found: {folder}")
    run_dir = request.out or default_run_dir(request.question)
    if (run_dir / "report.md").exists() or (run_dir / "run.jsonl").exists() or (run_dir / runs.RECORD_FILE).exists():
        raise ConfigError(f"{run_dir} already holds a run; choose another --out (or: briefroom resume {run_dir})")
    run_dir.mkdir(parents=True, exist_ok=True)
    # Replays and recordings must not depend on what this machine remembers.
    use_memory = settings.memory and request.cassette is None and request.record is None
    namespace = Namespace(settings.user or default_user(), settings.session, slugify(run_dir.resolve().name, 64)) \
        if use_memory else None
    # absolute paths: `briefroom resume` may run from another folder
    record = runs.RunRecord(question=request.question, corpus=[str(p.resolve()) for p in request.corpus],
                            constraints=list(request.constraints),
                            acceptance_criteria=list(request.acceptance_criteria),
                            roles_dirs=[str(p.resolve()) for p in request.roles_dirs],
                            settings=runs.settings_for_record(settings),
                            scenario=str(request.scenario) if request.scenario else None,
                            recording=request.record is not None, thread_id=_thread_id(request, run_dir, settings),
                            namespace=asdict(namespace) if namespace else None)
    runs.save(run_dir, record)
    return RunLaunch(run_dir, record, settings, request)


def _thread_id(request: ResearchRequest, run_dir: Path, settings: Settings) -> str:
    """The run's folder name names its thread in its own checkpoints.sqlite; a database
    shared by many machines gets a suffix so two runs named alike stay apart."""
    if request.thread_id:
        return request.thread_id
    return f"{run_dir.name}-{secrets.token_hex(4)}" if settings.database_url else run_dir.name


def resumed_run(run_dir: Path, overrides: dict[str, Any] | None = None, *, live: bool = False,
                models: ModelPool | None = None, tools: dict[str, Any] | None = None,
                reviewer: Reviewer | None = None) -> RunLaunch:
    """A run directory's run, as run.json says it was asked, with the settings changed
    where `overrides` says."""
    record = runs.load(run_dir)
    if record.recording:
        raise ConfigError("a recording cannot be resumed (its cassette would have a hole); record it again")
    settings = record.settings_with(**(overrides or {}))
    cassette = replay_handles = None
    scenario = Path(record.scenario) if record.scenario else None
    if scenario is not None and live:
        record.scenario = None  # from here on a live model answers; run.json says so
        scenario = None
    if scenario is not None:
        from briefroom.scenario import load_recorded

        cassette, replay_handles = Cassette.load(scenario), load_recorded(scenario).scenario.handles
    request = ResearchRequest(question=record.question, corpus=[Path(p) for p in record.corpus], out=run_dir,
                              constraints=list(record.constraints),
                              acceptance_criteria=list(record.acceptance_criteria),
                              roles_dirs=[Path(p) for p in record.roles_dirs], cassette=cassette,
                              replay_handles=replay_handles, models=models, tools=dict(tools or {}),
                              scenario=scenario, reviewer=reviewer)
    record.settings = runs.settings_for_record(settings)
    return RunLaunch(run_dir, record, settings, request)
