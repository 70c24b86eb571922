"""Memory: `query_memory` and `persist_memory` over the long-term stores (`memory/store.py`)
behind the write gates (`memory/gates.py`); a refused write comes back refused, with the
gate's reason, and nothing of it is stored.

The store and the run log are imported where they are first used: chromadb is slow to
import, and a protocol with memory off never needs it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from briefroom.context_protocol.prompts import ContextItem, PriorityName
from briefroom.memory.namespace import Namespace, Scope
from briefroom.protocol.extraction import numbers_in, sentences


class MemoryHit(BaseModel):
    """One memory read back, with its provenance (run, sources, who confirmed, status)."""

    model_config = ConfigDict(frozen=True)

    id: str
    zone: str
    text: str
    similarity: float
    score: float
    provenance: dict[str, Any] = Field(default_factory=dict)

    def as_item(self, priority: PriorityName = "P1") -> ContextItem:
        """The memory as a prompt item: data, with where it came from."""
        sources = self.provenance.get("sources") or []
        return ContextItem(kind="memory", text=self.text, priority=priority, key=self.id,
                           source=",".join(map(str, sources)) or None)


class MemoryCandidate(BaseModel):
    """Something an agent would like to remember.

    `fact`: a verbatim sentence; the gate keeps it only if at least two distinct parties
    back it (e.g. `source:<path>`, the tool that read it, and `answer`, the step that
    used it), nothing in it reads like an order or holds a secret, and, when `passage`
    is given, it occurs verbatim in that passage. `task_memory`: "this task was answered
    with these sources"; kept only when `accepted` (an independent check passed the
    answer). `note`, `tool_output` and `conclusion` are never kept: they exist so that
    an agent can ask and be told why not."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["fact", "task_memory", "note", "tool_output", "conclusion"]
    text: str = Field(min_length=1)
    backers: tuple[str, ...] = ()
    source_ids: tuple[str, ...] = ()
    passage: str | None = Field(default=None, description="the text it was quoted from (judged with it)")
    entity: str | None = Field(default=None, description="what a fact is about; default its content words")
    accepted: bool = False
    importance: float = Field(default=0.5, ge=0.0, le=1.0)


class MemoryWriteResult(BaseModel):
    """The gate's decision on one candidate, and what the store did when it passed."""

    model_config = ConfigDict(frozen=True)

    accepted: bool
    reason: str
    action: str = "rejected"  # rejected | insert | update | supersede | competing
    zone: str | None = None
    id: str | None = None


def open_store(data_dir: Path, embedder: Any) -> tuple[Any, Any]:
    """A `MemoryStore` on `data_dir` and the embedder it uses (the local MiniLM when none is given)."""
    from briefroom.memory.store import MemoryStore

    if embedder is None:
        from briefroom.corpus.embeddings import make_embedder

        embedder = make_embedder("local")
    return MemoryStore(data_dir, embedder), embedder


def query(store: Any, namespace: Namespace, text: str, *, k: int, scope: Scope, threshold: float | None,
          fact_threshold: float | None, skills: bool) -> list[MemoryHit]:
    """Memories similar to `text`, facts holding its words and numbers, and skills for it, best first."""
    from briefroom.memory.rules import DEFAULT_THRESHOLD, FACT_THRESHOLD

    sim = DEFAULT_THRESHOLD if threshold is None else threshold
    found = list(store.recall(text, namespace, scope, k=k, threshold=sim,
                              fact_threshold=FACT_THRESHOLD if fact_threshold is None else fact_threshold))
    if skills:
        found += store.skills_for(text, namespace, scope, threshold=sim)
    found.sort(key=lambda r: -r.score)
    return [MemoryHit(id=r.item_id, zone=r.zone, text=r.text, similarity=r.similarity, score=r.score,
                      provenance=dict(r.provenance)) for r in found]


def persist(store: Any, namespace: Namespace, candidates: Sequence[MemoryCandidate], task_id: str | None,
            lock: threading.RLock, agents: Sequence[str] = ()) -> list[MemoryWriteResult]:
    """Judge every candidate (one detector call for all), write what passes in one
    transaction, and return every decision with its reason (`agents`: the names text
    may not address)."""
    from briefroom.memory.gates import Candidate, TeamRoles, judge_all

    ns = Namespace(namespace.user, namespace.session, task_id or "default")
    run_id = f"context-protocol:{task_id or 'default'}"
    verdicts: list[tuple[bool, str]] = [_precheck(c) for c in candidates]
    standing = [i for i, (ok, _) in enumerate(verdicts) if ok]
    gate = judge_all([Candidate(c.kind, c.text, tuple(c.backers), {"passage": c.passage or "",
                                                                     "accepted": c.accepted})
                      for c in (candidates[i] for i in standing)], TeamRoles(names=tuple(agents)))
    for i, verdict in zip(standing, gate):
        verdicts[i] = verdict
    results: list[MemoryWriteResult] = []
    with lock, store.transaction():
        for candidate, (ok, reason) in zip(candidates, verdicts):
            if not ok:
                results.append(MemoryWriteResult(accepted=False, reason=reason))
            elif candidate.kind == "fact":
                item_id, action, why = store.put_fact(ns, _fact_row(candidate, run_id))
                results.append(MemoryWriteResult(accepted=True, reason=f"{reason}; {why}", action=action,
                                                 zone="fact", id=item_id))
            else:  # task_memory: the gate passed only an accepted one
                item_id = store.put_memory(ns, "task", candidate.text,
                                           {"run": run_id, "sources": list(candidate.source_ids),
                                            "confirmed_by": sorted(set(candidate.backers))},
                                           importance=candidate.importance)
                results.append(MemoryWriteResult(accepted=True, reason=reason, action="insert", zone="vector",
                                                 id=item_id))
    return results


def log_decisions(log: Any, candidates: Sequence[MemoryCandidate], results: Sequence[MemoryWriteResult]) -> None:
    """Every gate decision as a `memory_write` event of the protocol's log."""
    from briefroom.events import MemoryWrite

    for candidate, result in zip(candidates, results):
        log.write(MemoryWrite(kind=candidate.kind, accepted=result.accepted, reason=result.reason,
                              zone=result.zone, action=result.action, preview=candidate.text[:120],
                              id=result.id))


def fact_candidates(answer: str, sources: Mapping[str, str]) -> list[MemoryCandidate]:
    """Fact candidates from an answer's sentences with numbers (see `ContextProtocol.fact_candidates`)."""
    out: list[MemoryCandidate] = []
    flat_sources = {sid: " ".join(text.split()) for sid, text in sources.items()}
    for sentence in sentences(answer):
        if not numbers_in(sentence):
            continue
        flat = " ".join(sentence.split())
        holder = next((sid for sid, text in flat_sources.items() if flat in text), None)
        if holder is not None:
            out.append(MemoryCandidate(kind="fact", text=sentence, backers=(f"source:{holder}", "answer"),
                                       source_ids=(holder,), passage=sources[holder]))
        else:
            out.append(MemoryCandidate(kind="fact", text=sentence, backers=("answer",),
                                       source_ids=tuple(sources)))
    return out


def _precheck(candidate: MemoryCandidate) -> tuple[bool, str]:
    """What the gate cannot know outside a run: a fact must say where it was read, and
    must be verbatim in the passage it claims to quote."""
    if candidate.kind != "fact":
        return True, ""
    if not candidate.source_ids:
        return False, "a fact needs the source it was read from (source_ids)"
    if candidate.passage is not None and " ".join(candidate.text.split()) not in " ".join(candidate.passage.split()):
        return False, "not verbatim in the passage it claims to quote"
    return True, ""


def _fact_row(candidate: MemoryCandidate, run_id: str) -> Any:
    from briefroom.memory.gates import fact_row
    from briefroom.records import Fact

    fact = Fact(fact_id="candidate", text=candidate.text, numbers=tuple(dict.fromkeys(numbers_in(candidate.text))),
                source_id=candidate.source_ids[0], found_by=candidate.backers[0], round=0,
                confirmed_by=tuple(candidate.backers))
    row = fact_row(fact, {"candidate": candidate.entity} if candidate.entity else {}, run_id)
    return replace(row, source_ids=tuple(candidate.source_ids))
