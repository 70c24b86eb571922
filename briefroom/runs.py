"""Run records: `run.json` in each run directory says what the run is and how it stands.

It holds what `briefroom resume` needs to rebuild the run (question, corpus, roles,
settings without secrets, the scenario a replay reads, the memory namespace) and its
status: running, paused (stopped on purpose after a round), interrupted (Ctrl-C),
failed (an error; the message is kept), done. `briefroom runs list|show` read it.
Written atomically (temp file + rename), so a crash leaves the old record or the new.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from briefroom.config import Settings
from briefroom.errors import ConfigError
from briefroom.files import write_atomic
from briefroom.protocol.redaction import redact_data

RECORD_FILE = "run.json"
STATUSES = ("running", "paused", "interrupted", "failed", "done")


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
    status: str = "running"
    error: str | None = None
    round: int = 0
    started: str = Field(default_factory=_now)
    updated: str = Field(default_factory=_now)

    def settings_with(self, **overrides: Any) -> Settings:
        """The run's own settings, changed where the caller says (e.g. a larger
        --max-tokens); the API key comes from the environment again."""
        values = {**self.settings, **{k: v for k, v in overrides.items() if v is not None}}
        return Settings.from_env(**values)


def settings_for_record(settings: Settings) -> dict[str, Any]:
    values = settings.model_dump(mode="json", exclude={"api_key"})
    values["data_dir"] = str(settings.data_dir.expanduser().resolve())
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


def summary(run_dir: Path, record: RunRecord) -> dict[str, Any]:
    """Counts from the run log for `runs show`: calls, tokens, tools, memory writes, errors."""
    from briefroom.inspect import agent_totals, calls_of, load_events

    events = load_events(run_dir) if (run_dir / "run.jsonl").is_file() else []
    counts = Counter(str(e.get("event")) for e in events)
    totals = agent_totals(calls_of(events)).values()
    prompt = sum(t["prompt_tokens"] for t in totals)
    completion = sum(t["completion_tokens"] for t in totals)
    errors = [str(e.get("message", ""))[:300] for e in events if e.get("event") == "error"]
    report = run_dir / "report.md"
    return {"run_dir": str(run_dir), "status": record.status, "question": record.question, "round": record.round,
            "max_rounds": record.settings.get("rounds"), "started": record.started, "updated": record.updated,
            "model_calls": counts.get("llm_call", 0), "prompt_tokens": prompt, "completion_tokens": completion,
            "tool_calls": counts.get("tool_call", 0), "messages": counts.get("bus_message", 0),
            "memory_written": sum(bool(e.get("accepted")) for e in events if e.get("event") == "memory_write"),
            "resumes": counts.get("run_resume", 0),
            "errors": errors, "error": record.error, "scenario": record.scenario,
            "report": str(report) if report.is_file() else None,
            "resume": None if record.status == "done" else resume_command(run_dir)}
