"""What the memory zones (vectors, facts, skills in `store.py`) take in and hand out."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Recalled:
    """One memory read back, with where it came from."""

    item_id: str
    zone: str  # vector | fact | skill
    text: str
    similarity: float
    score: float  # relevance x recency x importance
    provenance: dict = field(default_factory=dict)  # run, sources, confirmed_by, namespace


@dataclass(frozen=True)
class FactRow:
    entity: str
    attribute: str
    value: str
    unit: str
    text: str  # the verbatim sentence
    source_ids: tuple[str, ...]
    confirmed_by: tuple[str, ...]
    run_id: str
