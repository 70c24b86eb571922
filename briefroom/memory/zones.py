"""The three memory zones as small protocols, so another backend can replace one.

The shipped implementation (`store.py`) keeps text and rows in SQLite and vectors in
a chromadb PersistentClient; a Postgres table or a chroma server would implement the
same methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from briefroom.memory.namespace import Namespace, Scope


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


class VectorZone(Protocol):
    def put_memory(self, ns: Namespace, kind: str, text: str, provenance: dict, importance: float,
                   key: str | None = None) -> str: ...

    def recall(self, query: str, ns: Namespace, scope: Scope, k: int, threshold: float) -> list[Recalled]: ...


class FactZone(Protocol):
    def put_fact(self, ns: Namespace, row: FactRow) -> tuple[str, str, str]: ...

    def facts_about(self, entity: str, ns: Namespace, scope: Scope) -> list[dict]: ...

    def find_facts(self, query: str, ns: Namespace, scope: Scope, k: int, threshold: float) -> list[Recalled]: ...


class SkillZone(Protocol):
    def put_skill(self, ns: Namespace, name: str, applies_when: str, steps: list[str],
                  evaluated_by: list[str]) -> tuple[str, str]: ...

    def record_use(self, skill_id: str, ns: Namespace, success: bool) -> str: ...
