"""RunContext: the run's live dependencies, handed to nodes through LangGraph's runtime.

State is data that is checkpointed; this is everything that is not: model handles,
tools, the index, the bus, the token counter, the run log, progress reporting. It is
frozen; the run's live counters are its `RunMeter`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.bus import Bus
from briefroom.report.spec import ReportSpec
from briefroom.runlog import RunLog

if TYPE_CHECKING:
    from briefroom.corpus.index import CorpusIndex
    from briefroom.llm import ModelPool
    from briefroom.protocol.artifacts import ArtifactStore
    from briefroom.protocol.prompt_assembly import Item
    from briefroom.protocol.tools import Tool
    from briefroom.state.schema import Ledger


def _quiet(round: int, agent: str, step: str) -> None:
    return None


@dataclass(frozen=True)
class Compaction:
    """Shares of the run's token budget (--max-tokens) at which the run tightens:
    `warn` logs it, `compress` builds every later prompt inside `squeeze` of its budget
    (the builder compresses and drops by priority), `finish` leaves only the roles with a
    finishing duty (the Writer drafts from what is known, the Critic checks)."""

    warn: float = 0.6
    compress: float = 0.75
    finish: float = 0.85
    squeeze: float = 0.6

    def __post_init__(self) -> None:
        if not 0 < self.warn <= self.compress <= self.finish <= 1:
            raise ValueError("compaction thresholds must satisfy 0 < warn <= compress <= finish <= 1, got "
                             f"{self.warn}, {self.compress}, {self.finish}")
        if not 0.1 <= self.squeeze <= 1:
            raise ValueError(f"compaction squeeze must be between 0.1 and 1, got {self.squeeze}")

    def stage(self, used: int, budget: int | None) -> str | None:
        """The furthest threshold `used` tokens of `budget` have crossed, if any."""
        if not budget:
            return None
        share = used / budget
        for name, at in (("finish", self.finish), ("compress", self.compress), ("warn", self.warn)):
            if share >= at:
                return name
        return None


class RunMeter:
    """The run's live counters: tokens used (the budget is checked between a node's own
    model calls, across instances of a fan-out that run at once), the raw tool outputs
    the naive baseline replays, and the compaction stages already announced. The one
    part of a run's context that changes while it runs; every node writes its reading
    to the state's `ledger` channel (`graph.builder.with_ledger`), and a resumed run
    restores it from there. Thread-safe."""

    def __init__(self, transcript_path: Path | None = None) -> None:
        # Raw tool outputs are also appended to this file (JSON lines), so a resumed run
        # has them too; the memory gates judge them at the end (and reject them: raw
        # output never persists).
        self.transcript_path = transcript_path
        self._tokens = 0
        self._transcript: list[tuple[float, str]] = []
        self._stages: set[str] = set()
        self._lock = threading.Lock()

    @property
    def tokens_used(self) -> int:
        return self._tokens

    @property
    def transcript(self) -> tuple[tuple[float, str], ...]:
        """Raw tool outputs with the time they arrived (message timestamp scale)."""
        return tuple(self._transcript)

    @property
    def outputs_kept(self) -> int:
        """How many raw tool outputs there are, without copying them (every node asks)."""
        return len(self._transcript)

    def charge(self, tokens: int) -> None:
        """Add a call's tokens to the run's count."""
        with self._lock:
            self._tokens += tokens

    def add_tool_output(self, at: float, raw: str) -> None:
        """`raw` is a validated tool result, redacted already by `run_tool` (every tool,
        fallbacks and a user's own included), so it may go to disk as it is."""
        with self._lock:
            self._transcript.append((at, raw))
            if self.transcript_path is not None:
                with open(self.transcript_path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps([at, raw], ensure_ascii=False) + "\n")

    def announce(self, stage: str) -> bool:
        """True the first time a compaction stage is reached: it is logged once."""
        with self._lock:
            first = stage not in self._stages
            self._stages.add(stage)
            return first

    def restore(self, tokens_used: int, transcript: int) -> None:
        """Continue from a checkpoint's counters: what the interrupted step had added to
        the transcript file is cut off, as its log lines are."""
        with self._lock:
            self._tokens = tokens_used
            if self.transcript_path is not None and self.transcript_path.is_file():
                lines = self.transcript_path.read_text(encoding="utf-8").splitlines()[:transcript]
                self._transcript = [(float(at), str(raw)) for at, raw in map(json.loads, lines)]
                self.transcript_path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@dataclass(frozen=True)
class RunContext:
    """What every node of one run is handed (LangGraph's run context): dependencies and
    settings, fixed for the run. What changes while it runs is in `meter`, and from there
    in the state's `ledger` channel."""

    bus: Bus
    models: "ModelPool"
    counter: TokenCounter
    log: RunLog
    tools: dict[str, "Tool"] = field(default_factory=dict)
    artifacts: "ArtifactStore | None" = None  # offloaded tool results of this run
    index: "CorpusIndex | None" = None
    progress: Callable[[int, str, str], None] = _quiet
    context_strategy: str = "layered"  # or "naive", the append-everything baseline
    meter: RunMeter = field(default_factory=RunMeter)
    max_tokens: int | None = None  # run-level budget (prompt + completion tokens)
    # Recalled at task start for roles that read memory (untrusted data with provenance).
    memory_items: list["Item"] = field(default_factory=list)
    memory_threshold: float = 0.75  # cosine similarity at which a memory is recalled (the embedder's scale)
    fact_threshold: float = 0.5  # share of a question's words and numbers a fact must hold to answer it
    shares: dict[str, float] = field(default_factory=dict)  # overrides of the builder's section shares
    floors: dict[str, int] = field(default_factory=dict)
    parallel: int = 1  # instances of a fan-out role that may run at the same time
    compaction: Compaction = field(default_factory=Compaction)
    report: ReportSpec = field(default_factory=ReportSpec)  # --report, --words, --audience: for the Writer

    @property
    def tokens_used(self) -> int:
        return self.meter.tokens_used

    @property
    def transcript(self) -> tuple[tuple[float, str], ...]:
        """Raw tool outputs with the time they arrived, for the naive baseline only: it
        interleaves them with the messages, as a chat log would."""
        return self.meter.transcript

    def charge(self, tokens: int) -> None:
        """Add a call's tokens to the run's count (instances of a fan-out call at once)."""
        self.meter.charge(tokens)

    def add_tool_output(self, at: float, raw: str) -> None:
        self.meter.add_tool_output(at, raw)

    def ledger(self) -> "Ledger":
        """The run's counters, saved with each checkpoint (state channel `ledger`)."""
        return {"log_seq": self.log.seq, "tokens_used": self.meter.tokens_used,
                "transcript": self.meter.outputs_kept,
                "model_calls": {role: h.calls for role, h in self.models.handles.items() if h.calls}}

    def restore(self, ledger: "Ledger") -> None:
        """Continue from a checkpoint's ledger: tokens, the transcript, each role's replies."""
        self.meter.restore(int(ledger.get("tokens_used", 0)), int(ledger.get("transcript", 0)))
        calls = ledger.get("model_calls", {})
        for role in calls:  # instances of a fan-out get their handles back, with their counts
            self.models.for_role(role)
        for role, handle in self.models.handles.items():
            handle.calls = int(calls.get(role, 0))
