"""Run records: `run.json` in each run directory says what the run is and how it stands.

It holds what `briefroom resume` needs to rebuild the run (question, corpus, roles,
settings without secrets, the scenario a replay reads, the memory namespace) and its
status: running, paused (stopped on purpose after a round), interrupted (Ctrl-C,
SIGTERM, a stopped worker, the database gone; resumable), cancelled (`jobs cancel`),
failed (an error; the reason is kept), done. Every way a run ends writes its status
here before the exception that ended it goes on (`ending_of`), so no run that stopped
stays `running`. `briefroom runs list|show` read it.
Written atomically (temp file + rename), so a crash leaves the old record or the new.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from briefroom.config import Settings
from briefroom.database import connection_lost, public_url
from briefroom.errors import BriefroomError, ConfigError
from briefroom.events import ErrorEvent, MemoryWrite
from briefroom.files import write_atomic
from briefroom.protocol.redaction import redact_data

RECORD_FILE = "run.json"
Status = Literal["running", "paused", "interrupted", "cancelled", "failed", "done"]


class RunStopped(BriefroomError):
    """The run was stopped from outside at a step boundary; `status` says how it ends."""

    status: Status = "interrupted"


class RunInterrupted(RunStopped):
    """Its worker is stopping, or lost the job's lease: another process goes on with it."""


class RunCancelled(RunStopped):
    """`briefroom jobs cancel` asked the run to stop."""

    status = "cancelled"


def ending_of(exc: BaseException) -> tuple[Status, str, bool]:
    """How a run that raised `exc` ends: its status, the reason kept in run.json, and
    whether `briefroom resume` can go on with it (a bad input fails again)."""
    reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:1000]
    if isinstance(exc, RunStopped):
        return exc.status, str(exc)[:1000], True
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", "interrupted (Ctrl-C or SIGTERM)", True
    if isinstance(exc, ConfigError):  # includes a database that refused the run at its start
        return "failed", reason, False
    if connection_lost(exc):  # the database went away mid-run: its checkpoint is intact
        return "interrupted", f"the database connection was lost ({reason[:300]})", True
    return "failed", reason, True


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class RunRecord(BaseModel):
    version: int = 1
    question: str
    corpus: list[str]
    constraints: list[str] = Field(default_factory=list)
    acceptance_criteria: list[str] = Field(default_factory=list)
    roles_dirs: list[str] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict, description="Settings without the API key")
    scenario: str | None = Field(default=None, description="replays: the scenario folder with the cassette")
    recording: bool = False
    thread_id: str
    namespace: dict[str, str] | None = None
    used_skills: list[str] = Field(default_factory=list)
    status: Status = "running"
    error: str | None = None
    resumable: bool = Field(default=True, description="false when the run failed on a bad input or database URL")
    round: int = 0
    started: str = Field(default_factory=_now)
    updated: str = Field(default_factory=_now)

    def settings_with(self, **overrides: Any) -> Settings:
        """The run's own settings, changed where the caller says (e.g. a larger
        --max-tokens); the API key comes from the environment again."""
        values = {k: v for k, v in {**self.settings, **{k: v for k, v in overrides.items() if v is not None}}.items()
                  if k != "database"}
        settings = Settings.from_env(**values)
        where = self.settings.get("database")
        if where and not settings.database_url:
            raise ConfigError(f"this run keeps its checkpoints in PostgreSQL ({where}): set BRIEFROOM_DATABASE_URL "
                              "(or --database-url) to resume it")
        return settings


def settings_for_record(settings: Settings) -> dict[str, Any]:
    """The settings as run.json keeps them: no key, no database password (a resume takes
    both from the environment again); a run on PostgreSQL says where, without them."""
    values = settings.model_dump(mode="json", exclude={"api_key", "database_url"})
    values["data_dir"] = str(settings.data_dir.expanduser().resolve())
    if settings.database_url:
        values["database"] = public_url(settings.database_url)
    return values


def save(run_dir: Path, record: RunRecord) -> None:
    """Atomically; through redaction, like everything the run writes (a question, a
    constraint or an endpoint URL may carry a secret)."""
    record.updated = _now()
    write_atomic(run_dir / RECORD_FILE,
                 json.dumps(redact_data(record.model_dump(mode="json")), indent=2, ensure_ascii=False) + "\n")


def load(run_dir: Path) -> RunRecord:
    path = run_dir / RECORD_FILE
    if not run_dir.is_dir():
        raise ConfigError(f"no such run directory: {run_dir}")
    if not path.is_file():
        raise ConfigError(f"{run_dir} has no {RECORD_FILE}: not a run directory, or written by an older briefroom")
    try:
        return RunRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise ConfigError(f"{path}: not a valid run record ({exc.errors()[0]['msg']})") from None


def update(run_dir: Path, record: RunRecord, **fields: Any) -> None:
    for key, value in fields.items():
        setattr(record, key, value)
    save(run_dir, record)


def find_runs(root: Path) -> list[tuple[Path, RunRecord | None]]:
    """Run directories under `root` (or `root` itself), newest first; a directory whose
    record is unreadable is listed with None."""
    if not root.is_dir():
        raise ConfigError(f"no such folder: {root}")
    dirs = [root] if (root / RECORD_FILE).is_file() else sorted(
        (d for d in root.iterdir() if d.is_dir() and ((d / RECORD_FILE).is_file() or (d / "run.jsonl").is_file())),
        key=lambda d: d.name, reverse=True)
    out: list[tuple[Path, RunRecord | None]] = []
    for d in dirs:
        try:
            out.append((d, load(d)))
        except ConfigError:
            out.append((d, None))
    return out


def resume_command(run_dir: Path) -> str:
    return f"briefroom resume {run_dir}"


class RunListing(BaseModel):
    """A row of `briefroom runs list`: a run directory, with or without a run.json."""

    run_dir: str
    status: Status | Literal["unknown"]
    round: int | None
    max_rounds: int | None
    question: str | None
    updated: str | None
    report: bool


class RunSummary(BaseModel):
    """What `runs show` prints: the record's status and counts from the run log."""

    run_dir: str
    status: Status
    question: str
    round: int
    max_rounds: int | None
    started: str
    updated: str
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    tool_calls: int
    messages: int
    memory_written: int
    resumes: int
    errors: list[str]
    error: str | None
    scenario: str | None
    report: str | None
    resume: str | None


def summarize(run_dir: Path, record: RunRecord) -> RunSummary:
    """Counts from the run log for `runs show`: calls, tokens, tools, memory writes, errors."""
    from briefroom.runlog import calls_of, load_events, totals_by_agent

    events = load_events(run_dir) if (run_dir / "run.jsonl").is_file() else []
    counts = Counter(e.event for e in events)
    totals = totals_by_agent(calls_of(events)).values()
    report = run_dir / "report.md"
    return RunSummary(
        run_dir=str(run_dir), status=record.status, question=record.question, round=record.round,
        max_rounds=record.settings.get("rounds"), started=record.started, updated=record.updated,
        model_calls=counts["llm_call"], prompt_tokens=sum(t.prompt_tokens for t in totals),
        completion_tokens=sum(t.completion_tokens for t in totals), tool_calls=counts["tool_call"],
        messages=counts["bus_message"],
        memory_written=sum(e.accepted for e in events if isinstance(e, MemoryWrite)),
        resumes=counts["run_resume"],
        errors=[e.message[:300] for e in events if isinstance(e, ErrorEvent)], error=record.error,
        scenario=record.scenario, report=str(report) if report.is_file() else None,
        resume=resume_command(run_dir) if can_resume(record) else None)


def can_resume(record: RunRecord) -> bool:
    """`briefroom resume` can go on with it: not done, and not failed on a bad input."""
    return record.status != "done" and record.resumable

