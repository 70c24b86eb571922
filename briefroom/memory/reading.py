"""Reading memory at task start: what the Planner sees, and which facts the run reuses.

The goal and each of its clauses are queries (a remembered fact usually answers one
part of a question); hits above the threshold enter the Planner's memory section as
untrusted data with provenance, and recalled facts whose sources are still in the
index join the run's facts, so they can be cited without searching again.
"""

from __future__ import annotations

import re
from typing import cast

from briefroom.config import Settings
from briefroom.corpus.index import CorpusIndex
from briefroom.memory.namespace import Namespace, Scope
from briefroom.memory.store import MemoryStore
from briefroom.memory.zones import Recalled
from briefroom.protocol.extraction import content_words, numbers_in
from briefroom.protocol.messages import Priority
from briefroom.protocol.prompt_assembly import Item, mark_data
from briefroom.records import Fact, Passage, SourceRecord
from briefroom.runlog import RunLog


def read_memory(memory: MemoryStore, ns: Namespace, settings: Settings, goal: str,
                log: RunLog) -> tuple[list[Item], list[str], list[Recalled]]:
    """Task start: similar past tasks, known facts and skills, as untrusted data with
    their provenance, for the roles that read memory (the Planner)."""
    scope = cast(Scope, settings.memory_scope)  # checked by Settings.check
    # The goal and each of its clauses: a remembered fact usually answers one part of it.
    queries = [goal, *(c for c in re.split(r"[?;]|,\s*(?:and\s+)?|\s+and\s+(?=which|who|what|how|when|where|why)",
                                            goal) if len(content_words(c)) >= 3 and c.strip() != goal.strip())]
    best: dict[str, Recalled] = {}
    for query in queries:
        for r in memory.recall(query, ns, scope, threshold=settings.memory_threshold,
                               fact_threshold=settings.fact_threshold):
            if r.item_id not in best or r.score > best[r.item_id].score:
                best[r.item_id] = r
    recalled = sorted(best.values(), key=lambda r: -r.score)[:8]
    skills = memory.skills_for(goal, ns, scope, threshold=settings.memory_threshold)
    log.event("memory_read", agent="planner", scope=scope, threshold=settings.memory_threshold,
              fact_threshold=settings.fact_threshold,
              items=[{"id": r.item_id, "zone": r.zone, "similarity": r.similarity, "score": r.score,
                      "provenance": r.provenance} for r in [*recalled, *skills]])
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
        facts.append(Fact(fact_id="M" + r.item_id, text=r.text, numbers=tuple(numbers_in(r.text)),
                          source_id=source_id, found_by="memory", round=0,
                          confirmed_by=tuple(r.provenance.get("confirmed_by", ()))))
        passage = Passage(chunk_id=f"{source_id}:memory:{start}", start=start, end=start + len(r.text), text=r.text)
        old = sources.get(source_id)
        sources[source_id] = SourceRecord(source_id=source_id, title=doc.title, path=doc.path,
                                          passages=(*(old.passages if old else ()), passage))
    return facts, sources
