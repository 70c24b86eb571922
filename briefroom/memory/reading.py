"""Reading memory: at task start (the Planner), and at the decision points of other roles.

Task start: the goal and each of its clauses are queries (a remembered fact usually
answers one part of a question); hits above the threshold enter the Planner's memory
section as untrusted data with provenance, and recalled facts whose sources are still
in the index join the run's facts, so they can be cited without searching again.

Decision points (`MemoryReader`): the Critic, before it rejects a conclusion its cited
sources do not bear out, and the Writer, before it writes that the documents do not say,
look up verified facts on that subject. A fact they use joins the run's facts with its
original source and is marked used for that role (state `memory_used`); the role's later
prompts leave it out (`unused_facts`): read when needed, withdrawn once used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel, Field

from briefroom.config import Settings
from briefroom.corpus.index import CorpusIndex
from briefroom.events import MemoryRead, MemoryReadItem
from briefroom.memory.namespace import Namespace, Scope
from briefroom.memory.rules import FACT_THRESHOLD
from briefroom.memory.zones import MemoryBackend, Recalled
from briefroom.protocol.extraction import content_words, numbers_in
from briefroom.protocol.messages import Priority
from briefroom.protocol.prompt_assembly import Item, mark_data
from briefroom.protocol.tools import Tool
from briefroom.records import Fact, Passage, SourceRecord
from briefroom.report.checks import GROUNDING_THRESHOLD, grounding, readings_in, unsupported_numbers
from briefroom.runlog import RunLog

MEMORY_FACT = "M"  # a run fact that came from memory is M + the memory item's id


def read_memory(memory: MemoryBackend, ns: Namespace, settings: Settings, goal: str, log: RunLog,
                readers: str) -> tuple[list[Item], list[str], list[Recalled]]:
    """Task start: similar past tasks, known facts and skills, as untrusted data with
    their provenance, for the roles that read memory (`readers`, the ones declaring
    `reads_memory`: the Planner)."""
    scope = cast(Scope, settings.memory_scope)  # checked by Settings.check
    # The goal and each of its clauses: a remembered fact usually answers one part of it.
    queries = [goal, *(c for c in re.split(r"[?;]|,\s*(?:and\s+)?|\s+and\s+(?=which|who|what|how|when|where|why)",
                                            goal) if len(content_words(c)) >= 3 and c.strip() != goal.strip())]
    best: dict[str, Recalled] = {}
    for query in queries:
        for r in memory.recall(query, ns, scope, threshold=settings.recall_threshold,
                               fact_threshold=settings.fact_threshold):
            if r.item_id not in best or r.score > best[r.item_id].score:
                best[r.item_id] = r
    recalled = sorted(best.values(), key=lambda r: -r.score)[:8]
    skills = memory.skills_for(goal, ns, scope, threshold=settings.recall_threshold)
    log.write(MemoryRead(agent=readers, scope=scope, threshold=settings.recall_threshold,
                         fact_threshold=settings.fact_threshold, items=[_logged(r) for r in [*recalled, *skills]]))
    items = []
    for order, r in enumerate([*skills, *recalled]):
        attrs = {"id": r.item_id, "zone": r.zone, "similarity": str(r.similarity)}
        for key in ("run", "status"):
            if r.provenance.get(key):
                attrs[key] = str(r.provenance[key])
        for key in ("sources", "confirmed_by"):
            if r.provenance.get(key):
                attrs[key] = ",".join(map(str, r.provenance[key]))
        items.append(Item(r.item_id, mark_data("memory", r.text, **attrs), Priority.P1, order, r.score))
    return items, [s.item_id for s in skills], recalled



def remembered_facts(recalled: list[Recalled], index: CorpusIndex) -> tuple[list[Fact], dict[str, SourceRecord]]:
    """Verified facts from memory as this run's facts, with their original sources, so
    the team can cite them without searching again. A fact whose source is no longer in
    the index is left out: a citation must resolve to a text the checks can read."""
    facts: list[Fact] = []
    sources: dict[str, SourceRecord] = {}
    for r in recalled:
        if r.zone != "fact" or not r.provenance.get("sources"):
            continue
        source_id = str(r.provenance["sources"][0])
        doc = index.document(source_id)
        start = doc.text.find(r.text) if doc else -1
        if doc is None or start < 0:
            continue
        facts.append(Fact(fact_id=MEMORY_FACT + r.item_id, text=r.text, numbers=tuple(numbers_in(r.text)),
                          source_id=source_id, found_by="memory", round=0,
                          confirmed_by=tuple(r.provenance.get("confirmed_by", ()))))
        passage = Passage(chunk_id=f"{source_id}:memory:{start}", start=start, end=start + len(r.text), text=r.text)
        old = sources.get(source_id)
        sources[source_id] = SourceRecord(source_id=source_id, title=doc.title, path=doc.path,
                                          passages=(*(old.passages if old else ()), passage))
    return facts, sources


def _logged(r: Recalled) -> MemoryReadItem:
    """A recalled item as a `memory_read` event lists it."""
    return MemoryReadItem(id=r.item_id, zone=r.zone, similarity=r.similarity, score=r.score, provenance=r.provenance)


# --- decision points ------------------------------------------------------------------
class RecallArgs(BaseModel):
    query: str = Field(min_length=2, max_length=400, description="what to look up in long-term memory",
                       json_schema_extra={"x-fill": "task"})


class RecalledItem(BaseModel):
    id: str
    zone: str
    text: str
    similarity: float
    provenance: dict


class RecallResult(BaseModel):
    memories: list[RecalledItem]


@dataclass(frozen=True)
class MemoryReader:
    """One run's read access to long-term memory after task start. It is the function
    of the `recall_memory` tool (a model's decision point) and what code calls at the
    decision points it owns (`memory_reader`). With memory off it finds nothing."""

    store: MemoryBackend | None
    ns: Namespace | None
    scope: Scope
    threshold: float
    fact_threshold: float

    @property
    def on(self) -> bool:
        return self.store is not None and self.ns is not None

    def recall(self, query: str) -> list[Recalled]:
        """Past tasks, facts and skills like `query`: what the tool returns."""
        if self.store is None or self.ns is None:
            return []
        return [*self.store.recall(query, self.ns, self.scope, threshold=self.threshold,
                                   fact_threshold=self.fact_threshold),
                *self.store.skills_for(query, self.ns, self.scope, threshold=self.threshold)]

    def verified_facts(self, query: str, k: int = 5) -> list[Recalled]:
        """Facts of the fact table that match `query`, confirmed by two roles and with
        the sources they were read in: the only memories that may support a claim."""
        if self.store is None or self.ns is None:
            return []
        found = self.store.find_facts(query, self.ns, self.scope, k, self.fact_threshold)
        return [r for r in found if r.provenance.get("sources")
                and len(set(r.provenance.get("confirmed_by", ()))) >= 2]

    def __call__(self, args: BaseModel) -> BaseModel:
        assert isinstance(args, RecallArgs)
        return RecallResult(memories=[RecalledItem(id=r.item_id, zone=r.zone, text=r.text, similarity=r.similarity,
                                                   provenance=r.provenance) for r in self.recall(args.query)])

    def log(self, log: RunLog, agent: str, found: list[Recalled]) -> None:
        """A lookup at a decision point, logged as every memory read is."""
        log.write(MemoryRead(agent=agent, scope=self.scope, threshold=self.threshold,
                             fact_threshold=self.fact_threshold, items=[_logged(r) for r in found]))


def recall_tool(reader: MemoryReader) -> Tool:
    return Tool("recall_memory", "Look up verified facts, past tasks and skills from earlier runs (data, with "
                "their provenance).", RecallArgs, RecallResult, reader)


def memory_reader(tools: Mapping[str, Any]) -> MemoryReader | None:
    """The run's reader, when memory is on: the function of its `recall_memory` tool,
    which every run registers (`run/compose.py`). None with memory off, and in a context
    without the tool (unit tests that build one by hand)."""
    reader = getattr(tools.get("recall_memory"), "run", None)
    return reader if isinstance(reader, MemoryReader) and reader.on else None


def remembered_fact(r: Recalled, index: CorpusIndex) -> tuple[Fact, SourceRecord] | None:
    """One verified memory fact as a run fact with its original source, or None when
    that source is no longer in the index (or no longer says it verbatim)."""
    facts, sources = remembered_facts([r], index)
    return (facts[0], sources[facts[0].source_id]) if facts else None


def backs(claim: str, fact: Fact) -> bool:
    """A verified fact backs a claim when every number of the claim is in it and most of
    the claim's words are: the test a cited source sentence gets (`claim_problems`),
    held against the fact's one sentence."""
    return not unsupported_numbers(claim, readings_in(fact.text)) and grounding(claim, fact.text) >= GROUNDING_THRESHOLD


def memory_item(fact: Fact) -> str | None:
    """The memory item a run fact came from, or None for a fact found in this run."""
    if fact.found_by == "memory" and fact.fact_id.startswith(MEMORY_FACT):
        return fact.fact_id[len(MEMORY_FACT):]
    return None


def used_memory(state: Mapping[str, Any], role: str) -> frozenset[str]:
    """The memory items `role` has used at a decision point (state `memory_used`)."""
    return frozenset((state.get("memory_used") or {}).get(role, ()))


def unused_facts(facts: list[Fact], state: Mapping[str, Any], role: str) -> list[Fact]:
    """`facts` for one of `role`'s prompts: a memory fact the role has used at a
    decision point is not shown to it again (it stays in the run's facts, and code that
    builds the report from them still has it)."""
    used = used_memory(state, role)
    return [f for f in facts if memory_item(f) not in used] if used else list(facts)


def memory_tool(store: MemoryBackend | None, ns: Namespace | None, scope: Scope, threshold: float,
                fact_threshold: float = FACT_THRESHOLD):
    """`recall_memory(query)`: how roles other than the Planner read memory, at the
    decision points where they choose to call it (declared in the role's tools).

    With memory off (`--no-memory`, replays, recordings) the tool still exists, so a
    role that declares it runs the same way, and it finds nothing. The tool runs on a
    `MemoryReader` , which code at a decision point calls directly
    (`memory_reader`): the Critic before it rejects, the Writer before it writes
    that the documents do not say."""
    return recall_tool(MemoryReader(store, ns, scope, threshold, fact_threshold))
