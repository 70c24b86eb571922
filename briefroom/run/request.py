"""What a caller hands a run and gets back: the request, the result, the progress line
and the hooks that follow a run as it goes, and the question's own checks.

These types are the run's boundary with the CLI, the job worker, the workbench and the
served graph, so they sit apart from the code that builds a run.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from briefroom import runs
from briefroom.agents.run_context import RunContext
from briefroom.config import Settings
from briefroom.errors import ConfigError
from briefroom.events import Event
from briefroom.llm import ModelPool
from briefroom.models.cassette import Cassette, ReplyBank
from briefroom.review import ClarifyRequest, PlanReviewRequest, Reviewer, ReviewOptions
from briefroom.state.schema import AgentState

# A question is a question: its words go into every role's prompt (P0, never cut).
MAX_QUESTION_CHARS = 2000
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass
class ResearchRequest:
    question: str
    corpus: list[Path]
    out: Path | None = None
    constraints: list[str] = field(default_factory=list)
    acceptance_criteria: list[str] = field(default_factory=list)
    roles_dirs: list[Path] = field(default_factory=list)
    record: Path | None = None
    cassette: Cassette | None = None
    reuse: ReplyBank | None = None  # with `record`: the recording it replaces, for its unchanged calls
    replay_handles: dict[str, Any] | None = None  # scenario.RecordedHandle per role
    models: ModelPool | None = None  # bring your own LangChain chat models (tests, library use)
    tools: dict[str, Any] = field(default_factory=dict)  # replace or add tools by name (protocol.tools.Tool)
    scenario: Path | None = None  # replays: the scenario folder (kept in run.json so a replay can resume)
    thread_id: str | None = None  # the graph's thread; a queued job's is `job-<id>` (default: the run's name)
    review: ReviewOptions = field(default_factory=ReviewOptions)  # what the run asks its user (review.py)
    reviewer: Reviewer | None = None  # who answers; None: a run that asks stays paused at the question


@dataclass
class RunResult:
    run_dir: Path
    report: str | None  # None when the run was paused on purpose (`stop_after_round`)
    state: AgentState
    labels: set[str]
    events: list[Event]
    status: runs.Status = "done"
    tokens_used: int = 0
    budget: int | None = None
    waiting_for: PlanReviewRequest | ClarifyRequest | None = None  # paused at a question for its user

    @property
    def over_budget(self) -> int:
        """Tokens spent past the run budget: a model call's size is known only once it returns."""
        return max(0, self.tokens_used - self.budget) if self.budget else 0


@dataclass
class Progress:
    """What a live progress line shows: where the run is and what it has spent."""

    round: int
    agent: str
    step: str
    tokens_used: int
    max_tokens: int | None
    elapsed_s: float


ProgressFn = Callable[[Progress], None]
UpdateFn = Callable[[dict[str, Any]], None]  # a node's update, as the graph streams it
Say = Callable[[int, str, str], None]  # (round, agent, step): one progress line, from the run's own steps


@dataclass(frozen=True)
class RunHooks:
    """How a caller follows a run as it goes: its progress lines, and each node's update
    as the graph streams it (the served graph passes both on to its client)."""

    progress: ProgressFn | None = None
    on_update: UpdateFn | None = None


class Watch:
    """The progress line: the run's clock, and the tokens spent once a run context counts them."""

    def __init__(self, settings: Settings, progress: ProgressFn | None):
        self.max_tokens, self.progress = settings.max_tokens, progress
        self.clock = time.monotonic()
        self.ctx: RunContext | None = None

    def say(self, at_round: int, agent: str, step: str) -> None:
        if self.progress:
            self.progress(Progress(at_round, agent, step, self.ctx.tokens_used if self.ctx else 0, self.max_tokens,
                                   round(time.monotonic() - self.clock, 1)))


def clean_question(question: str) -> str:
    """The question as a run uses it, one line of text, or a ConfigError saying why not."""
    if not question.strip():
        raise ConfigError("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:  # it goes into every prompt, and memory matches it
        raise ConfigError(f"the question is {len(question):,} characters; at most {MAX_QUESTION_CHARS:,} "
                          "(put long material in a document of the corpus instead)")
    if any(ch in question for ch in "\x00\ufffd"):
        raise ConfigError("the question holds NUL or replacement characters (a binary or mis-decoded paste?)")
    # ESC, BEL and other controls would reach the terminal and report.md raw: a question is one line of text
    return " ".join(_CONTROL.sub(" ", question).split())


def slugify(text: str, limit: int = 40) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-") or "run"


def default_run_dir(question: str) -> Path:
    return Path("runs") / f"{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}-{slugify(question)}"
