"""What every memory backend does the same, whatever holds its rows (SQLite and chromadb
in `store.py`, PostgreSQL in `postgres/memory.py`): ids, the terms a fact is found by,
scoring a recalled row, retiring a skill, and the versioning of facts. A backend keeps
only its storage; a rule changed here changes for both.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from briefroom.corpus.embeddings import Embedder
from briefroom.memory.zones import FactRow, Recalled
from briefroom.protocol.extraction import content_words, numbers_in

DEFAULT_THRESHOLD = 0.75  # cosine similarity a memory needs to be recalled
FACT_THRESHOLD = 0.5  # share of a query's words and numbers a fact must hold to be recalled
FACT_CANDIDATES = 2000  # postings a read counts per term; a term in more facts is checked on the best only
HALF_LIFE_DAYS = 30.0  # recency: a memory's weight halves every month
SKILL_RETIRE_AFTER = 3  # failures (more than successes) before a skill is retired


def content_id(*parts: str) -> str:
    """A content-derived id: writing the same item twice writes one row."""
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def terms(text: str) -> set[str]:
    """What a fact is found by: its content words and its numbers (years, values)."""
    return content_words(text) | set(numbers_in(text))


def namespace_of(row: Mapping[str, Any]) -> dict[str, str]:
    """A row's namespace, from a SQLite row or a PostgreSQL dict row alike."""
    return {"user": row["user"], "session": row["session"], "task": row["task"]}


class Found(NamedTuple):
    """A memory row the namespace allows, as `MemoryRules.scored` takes it."""

    text: str
    importance: float
    created: float
    provenance: dict[str, Any]
    zone: str


# --- finding facts by their terms ---------------------------------------------------------
def fact_query(query: str, threshold: float) -> tuple[list[str], int]:
    """The query's terms, and how many of them a fact must hold."""
    wanted = sorted(terms(query))
    return wanted, max(1, math.ceil(threshold * len(wanted) - 1e-9))


def terms_to_read(wanted: Sequence[str], counts: Mapping[str, int], need: int) -> tuple[list[str], int] | None:
    """The terms whose postings are read (those in at most FACT_CANDIDATES facts, the
    rarest one at least), and how many of them a candidate must hold: the common terms
    may make up the rest. None when too few of the terms stand in any fact."""
    present = sorted((t for t in wanted if counts.get(t)), key=lambda t: counts[t])
    if len(present) < need:
        return None
    cheap = [t for t in present if counts[t] <= FACT_CANDIDATES] or present[:1]
    return cheap, need - (len(present) - len(cheap))


def candidate_facts(wanted: list[str], need: int, k: int, term_counts: Callable[[list[str]], Mapping[str, int]],
                    postings: Callable[[str], Iterable[str]]) -> list[str]:
    """The fact ids worth checking against the query, as every backend finds them: the
    counts of the wanted terms (`term_counts`), the postings of the cheap ones
    (`postings`, at most FACT_CANDIDATES each), the ids holding enough of them."""
    reading = terms_to_read(wanted, term_counts(wanted), need)
    if reading is None:
        return []
    cheap, floor = reading
    hits: dict[str, int] = {}
    for term in cheap:
        for fact_id in postings(term):
            hits[fact_id] = hits.get(fact_id, 0) + 1
    return best_candidates(hits, floor, k)


def best_candidates(hits: Mapping[str, int], floor: int, k: int) -> list[str]:
    """Fact ids holding at least `floor` of the terms read, most first (8 per wanted fact)."""
    return sorted((f for f, n in hits.items() if n >= floor), key=lambda f: -hits[f])[:8 * k]


def fact_relevance(wanted: Sequence[str], entity: str, text: str) -> float:
    """The share of the query's terms a fact holds (its entity counts)."""
    return len(set(wanted) & terms(f"{entity} {text}")) / len(wanted)


# --- versioning facts ---------------------------------------------------------------------
@dataclass(frozen=True)
class StoredFact:
    """A fact row that is not superseded, as the versioning rule reads it."""

    id: str
    value: str
    unit: str
    source_ids: tuple[str, ...]
    confirmed_by: tuple[str, ...]


@dataclass(frozen=True)
class FactVersion:
    """What writing a fact row does. `update`: the row `fact_id` gets the merged
    provenance. Otherwise a new row `fact_id` with `status` is written, and the rows in
    `replaced` become its superseded history."""

    action: Literal["update", "supersede", "competing", "insert"]
    fact_id: str
    reason: str
    status: Literal["current", "competing"] = "current"
    replaced: tuple[str, ...] = ()
    source_ids: tuple[str, ...] = ()  # update: the merged sources
    confirmed_by: tuple[str, ...] = ()  # update: the merged roles


def fact_version(user: str, row: FactRow, current: Iterable[StoredFact]) -> FactVersion:
    """Same entity and attribute in the user's table (`current`): the same value adds
    provenance to the existing row; a new value from a source an old row rests on
    supersedes that row (kept as history, no longer found by its terms); a new value
    from other sources is a competing version, kept side by side."""
    rows = list(current)
    for old in rows:
        if old.value == row.value and old.unit == row.unit:
            return FactVersion("update", old.id, "same entity, attribute and value: provenance merged",
                               source_ids=tuple(sorted(set(old.source_ids) | set(row.source_ids))),
                               confirmed_by=tuple(sorted(set(old.confirmed_by) | set(row.confirmed_by))))
    new_id = "f" + content_id(user, row.entity, row.attribute, row.value, row.unit, ",".join(row.source_ids))
    replaced = tuple(r.id for r in rows if set(r.source_ids) & set(row.source_ids))
    if replaced:
        return FactVersion("supersede", new_id, f"new value from the same source replaces {', '.join(replaced)}",
                           replaced=replaced)
    if rows:
        return FactVersion("competing", new_id, f"{len(rows)} other value(s) for this entity and attribute from "
                           "other sources: kept side by side", status="competing")
    return FactVersion("insert", new_id, "new entity and attribute")


# --- scoring ------------------------------------------------------------------------------
def skill_recalled(skill_id: str, similarity: float, row: Mapping[str, Any], steps: list[str],
                   evaluated_by: list[str]) -> Recalled:
    """A skill read back: its steps as text, scored by similarity and its record of reuse."""
    wins, losses = row["successes"], row["failures"]
    text = (f"Skill: {row['name']} (used {wins + losses} times, {wins} passed)\nWhen: {row['applies_when']}"
            "\nSteps:\n" + "\n".join(f"{i + 1}. {s}" for i, s in enumerate(steps)))
    return Recalled(skill_id, "skill", text, round(similarity, 4),
                    round(similarity * (wins + 1) / (wins + losses + 2), 4),
                    {"evaluated_by": evaluated_by, "steps": steps, "namespace": namespace_of(row)})


class MemoryRules:
    """The rules a backend class takes in: embedding a text once, scoring a recalled row,
    retiring a skill."""

    _embedder: Embedder
    _now: Any
    _vectors: dict[str, list[list[float]]]

    def vector_of(self, query: str) -> list[list[float]]:
        """Embed each text once per store: a run asks the same goal of several zones,
        and its skill is filed under that goal at the end."""
        vector = self._vectors.get(query)
        if vector is None:
            if len(self._vectors) > 256:
                self._vectors.clear()
            vector = self._vectors[query] = self._embedder.embed([query])
        return vector

    def scored(self, item_id: str, relevance: float, text: str, importance: float, created: float,
               provenance: dict, zone: str) -> Recalled:
        """Relevance x recency (half-life HALF_LIFE_DAYS) x importance."""
        age_days = max(self._now() - created, 0.0) / 86400
        score = relevance * math.pow(0.5, age_days / HALF_LIFE_DAYS) * (0.5 + 0.5 * importance)
        return Recalled(item_id, zone, text, round(relevance, 4), round(score, 4), provenance)

    @staticmethod
    def retires(successes: int, failures: int) -> bool:
        """A skill that failed SKILL_RETIRE_AFTER times, more often than it worked."""
        return failures >= SKILL_RETIRE_AFTER and failures > successes
