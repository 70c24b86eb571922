"""RunContext: the run's live dependencies, handed to nodes through LangGraph's runtime.

State is data that is checkpointed; this is everything that is not: model handles,
tools, the index, the bus, the token counter, the run log, progress reporting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.bus import Bus
from briefroom.runlog import RunLog

if TYPE_CHECKING:
    from briefroom.corpus.index import CorpusIndex
    from briefroom.llm import ModelPool
    from briefroom.protocol.artifacts import ArtifactStore
    from briefroom.protocol.context import Item
    from briefroom.protocol.tools import Tool


def _quiet(round: int, agent: str, step: str) -> None:
    return None


@dataclass
class RunContext:
    bus: Bus
    models: "ModelPool"
    counter: TokenCounter
    log: RunLog
    tools: dict[str, "Tool"] = field(default_factory=dict)
    artifacts: "ArtifactStore | None" = None  # offloaded tool results of this run
    index: "CorpusIndex | None" = None
    progress: Callable[[int, str, str], None] = _quiet
    context_strategy: str = "layered"  # or "naive", the append-everything baseline
    # Raw tool outputs with the time they arrived (message timestamp scale), for the
    # naive baseline only: it interleaves them with the messages, as a chat log would.
    transcript: list[tuple[float, str]] = field(default_factory=list)
    max_tokens: int | None = None  # run-level budget (prompt + completion tokens)
    # Recalled at task start for roles that read memory (untrusted data with provenance).
    memory_items: list["Item"] = field(default_factory=list)
    memory_threshold: float = 0.75  # cosine similarity at which a remembered fact answers a question
    shares: dict[str, float] = field(default_factory=dict)  # overrides of the builder's section shares
    floors: dict[str, int] = field(default_factory=dict)
    tokens_used: int = 0
