"""Named, pure reducers for AgentState fields. Each takes (current, update) -> new.

They never mutate their inputs: LangGraph may hold on to old values in checkpoints.
Replacing a field wholesale uses `langgraph.types.Overwrite`, handled by LangGraph
before a reducer runs.
"""

from __future__ import annotations

from briefroom.protocol.messages import AgentMessage
from briefroom.records import Fact, SourceRecord, Worktable


def append_messages(current: list[AgentMessage] | None, update: list[AgentMessage] | None) -> list[AgentMessage]:
    """Append new messages in order; a message id already present is ignored (also
    within the starting list, which may come straight from a caller's input)."""
    merged: list[AgentMessage] = []
    ids: set[str] = set()
    for message in [*(current or []), *(update or [])]:
        if message.header.msg_id not in ids:
            merged.append(message)
            ids.add(message.header.msg_id)
    return merged


def append_records(current: list | None, update: list | None) -> list:
    """Append round summaries; one per round (a repeated round number replaces nothing)."""
    merged = list(current or [])
    rounds = {r.round for r in merged}
    for record in update or []:
        if record.round not in rounds:
            rounds.add(record.round)
            merged.append(record)
    return merged


def merge_worktables(current: dict[str, "Worktable"] | None,
                     update: dict[str, "Worktable"] | None) -> dict[str, "Worktable"]:
    """Merge per-role worktable updates; roles not in the update are untouched."""
    merged = dict(current or {})
    for role, table in (update or {}).items():
        merged[role] = merged[role].merged(table) if role in merged else table
    return merged


def merge_seen(current: dict[str, list[str]] | None, update: dict[str, list[str]] | None) -> dict[str, list[str]]:
    """Union of read cursors per role, preserving first-seen order."""
    merged = {role: list(ids) for role, ids in (current or {}).items()}
    for role, ids in (update or {}).items():
        known = merged.setdefault(role, [])
        present = set(known)
        for i in ids:
            if i not in present:
                present.add(i)
                known.append(i)
    return merged


def merge_facts(current: list["Fact"] | None, update: list["Fact"] | None) -> list["Fact"]:
    """Add facts by id; a repeated fact only gains confirmations (never loses text)."""
    merged = list(current or [])
    index = {f.fact_id: i for i, f in enumerate(merged)}
    for fact in update or []:
        if fact.fact_id in index:
            old = merged[index[fact.fact_id]]
            confirmed = tuple(dict.fromkeys(old.confirmed_by + fact.confirmed_by))
            merged[index[fact.fact_id]] = old.model_copy(update={"confirmed_by": confirmed})
        else:
            index[fact.fact_id] = len(merged)
            merged.append(fact)
    return merged


def merge_sources(current: dict[str, "SourceRecord"] | None,
                  update: dict[str, "SourceRecord"] | None) -> dict[str, "SourceRecord"]:
    """Union of sources; passages seen again are not duplicated."""
    merged = dict(current or {})
    for source_id, record in (update or {}).items():
        if source_id not in merged:
            merged[source_id] = record
            continue
        old = merged[source_id]
        known = {p.chunk_id for p in old.passages}
        extra = tuple(p for p in record.passages if p.chunk_id not in known)
        if extra:
            merged[source_id] = old.model_copy(update={"passages": old.passages + extra})
    return merged


def merge_memory_used(current: dict[str, list[str]] | None,
                      update: dict[str, list[str]] | None) -> dict[str, list[str]]:
    """Per role, the long-term memory items it has used at a decision point: a union,
    first use first (the same law as the read cursors of `merge_seen`)."""
    return merge_seen(current, update)


def furthest_ledger(current: dict | None, update: dict | None) -> dict:
    """The run's counters (`schema.Ledger`): each only grows, so the furthest of two
    values wins, per role for model replies. Instances of a fan-out role that report at
    once merge to the furthest count, whatever order their updates arrive in."""
    if not update:
        return dict(current or {})
    if not current:
        return dict(update)
    merged = dict(current)
    for key, value in update.items():
        if key == "model_calls":
            calls = dict(merged.get(key, {}))
            for role, n in value.items():
                calls[role] = max(calls.get(role, 0), n)
            merged[key] = calls
        else:
            merged[key] = max(merged.get(key, 0), value)
    return merged
