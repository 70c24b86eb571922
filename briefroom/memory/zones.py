"""What the memory zones (vectors, facts, skills) take in and hand out, and the port
every memory backend offers (`MemoryBackend`): the gates, the reader and the CLI call
these methods and nothing else, whichever backend holds the rows (`store.MemoryStore`
on SQLite and chromadb, `postgres.memory.PgMemoryStore`; `stores.open_memory` picks).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from briefroom.memory.namespace import Namespace, Scope

ZONES = ("vector", "fact", "skill")


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


class MemoryBackend(Protocol):
    """Long-term memory as its readers and writers see it. Ids, actions and results are
    the same from every backend (the rules are `memory/rules.py`)."""

    def transaction(self) -> AbstractContextManager[Any]:
        """Writes inside the block land together or not at all; a nested block joins."""
        ...

    def applied(self, key: str) -> Any:
        """What an idempotent write recorded under `key`, or None if it never landed."""
        ...

    def mark_applied(self, key: str, result: Any) -> None: ...

    def put_memory(self, ns: Namespace, kind: str, text: str, provenance: dict, importance: float,
                   key: str | None = None) -> str: ...

    def recall(self, query: str, ns: Namespace, scope: Scope = "user", k: int = 5,
               threshold: float = ..., fact_threshold: float = ...) -> list[Recalled]: ...

    def find_facts(self, query: str, ns: Namespace, scope: Scope = "user", k: int = 5,
                   threshold: float = ...) -> list[Recalled]: ...

    def put_fact(self, ns: Namespace, row: FactRow) -> tuple[str, str, str]: ...

    def put_facts(self, ns: Namespace, rows: list[FactRow]) -> list[tuple[str, str, str]]: ...

    def facts_about(self, entity: str, ns: Namespace, scope: Scope = "user") -> list[dict]: ...

    def put_skill(self, ns: Namespace, name: str, applies_when: str, steps: list[str],
                  evaluated_by: list[str]) -> tuple[str, str]: ...

    def skills_for(self, query: str, ns: Namespace, scope: Scope = "user", k: int = 2,
                   threshold: float = ...) -> list[Recalled]: ...

    def record_use(self, skill_id: str, ns: Namespace, success: bool) -> str: ...

    def items(self, ns: Namespace, scope: Scope = "user", zone: str | None = None) -> list[dict]: ...

    def forget(self, item_id: str, ns: Namespace, scope: Scope = "user") -> int: ...

    def compact(self) -> Any: ...

    def close(self) -> None: ...


