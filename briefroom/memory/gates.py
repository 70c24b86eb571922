"""Write gates: what a finished run may leave in long-term memory, and why.

Every candidate the run produced is judged, and every decision is logged with its
reason (`memory_write` events), including the rejections:

- Verification: a fact persists only if at least two roles back it (the Searcher found
  it in a source and the Critic accepted a conclusion resting on it). Worktable notes
  (intermediate reasoning), raw tool output and unconfirmed conclusions never persist,
  nor does anything that reads like an order to an agent or holds a secret. A fact must
  be a statement: a sentence that addresses the reader, or any sentence of a paragraph
  holding one (`protocol.extraction.statements`), is never a fact, however many roles
  passed it on.
- Dedup and update: the fact table merges, supersedes or keeps competing versions
  (`MemoryStore.put_fact`); nothing is overwritten.
- Skill evaluation: the run's plan becomes a skill only if the Critic passed the
  report against the acceptance criteria; a skill recalled at the start is credited
  with this run's outcome, and retired if it keeps failing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from briefroom.events import MemoryWrite
from briefroom.memory.namespace import Namespace
from briefroom.memory.zones import FactRow, MemoryBackend
from briefroom.protocol import injection
from briefroom.protocol.bus import Bus
from briefroom.protocol.chars import GARBAGE_RE
from briefroom.protocol.extraction import content_words, quotable
from briefroom.protocol.messages import MsgType
from briefroom.protocol.payloads import Conclusion, Instruction
from briefroom.protocol.redaction import redact
from briefroom.protocol.statements import directive
from briefroom.protocol.untrusted import instruction_like
from briefroom.records import Fact
from briefroom.runlog import RunLog
from briefroom.state.schema import AgentState

MIN_BACKERS = 2
_UNIT = re.compile(r"\s*(%|percent|per cent|(?:billion|million|trillion|thousand|bn|m)\b)?\s*"
                   r"(USD|EUR|GBP|dollars|euros|\$)?", re.IGNORECASE)


@dataclass(frozen=True)
class TeamRoles:
    """The run's roles as the gates need them, found by what each role declared, never
    by name: a renamed or replaced role needs no edit here."""

    names: tuple[str, ...] = ()  # every role: text that addresses one by name reads like an order
    plans: str | None = None  # capability "plan": its instructions are the plan a skill keeps
    drafts: str | None = None  # capability "draft": it wrote the report a task memory remembers
    checks: str | None = None  # capability "check": its verdict backs task memories and skills

    @classmethod
    def of(cls, bus: Bus) -> "TeamRoles":
        return cls(bus.roles, bus.holder("plan"), bus.holder("draft"), bus.holder("check"))

    def only(self, *names: str | None) -> tuple[str, ...]:
        """The given roles this team has."""
        return tuple(name for name in names if name is not None)


@dataclass
class Candidate:
    kind: str  # fact | task_memory | skill | note | tool_output | conclusion
    text: str
    backers: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)


def judge(candidate: Candidate, roles: TeamRoles = TeamRoles()) -> tuple[bool, str]:
    """Whether a candidate may persist, and why (the order of checks is the order of reasons)."""
    return judge_all([candidate], roles)[0]


def judge_all(batch: list[Candidate], roles: TeamRoles = TeamRoles()) -> list[tuple[bool, str]]:
    """`judge` for a run's candidates: the cheap checks one by one, then the learned
    detector once for every candidate still standing (one embedding call for all)."""
    verdicts = [_screen(candidate, roles) for candidate in batch]
    # Last, as the costly check: the learned, multilingual detector, on what would
    # otherwise be kept, each candidate in the passage it came from.
    standing = [i for i, (ok, _) in enumerate(verdicts) if ok]
    found = injection.judge_many([(batch[i].data.get("passage") or batch[i].text, batch[i].text) for i in standing])
    for i, verdict in zip(standing, found):
        if verdict.flagged:
            verdicts[i] = (False, f"reads like an instruction to an agent (detector: {verdict.reason})")
    return verdicts


def _screen(candidate: Candidate, roles: TeamRoles) -> tuple[bool, str]:
    if candidate.kind in ("note", "tool_output"):
        return False, "process traces and raw tool output never persist"
    if candidate.kind == "conclusion":
        return False, "a conclusion persists only as a fact two roles confirmed"
    if GARBAGE_RE.search(candidate.text):
        return False, "holds control or replacement characters (binary or mis-decoded text)"
    order = instruction_like(injection.normalize(candidate.text), roles.names)
    if order:
        return False, f"reads like an instruction to an agent ({order})"
    if redact(candidate.text)[1]:
        return False, "contains a secret"
    if candidate.kind == "fact":
        reason = directive(" ".join(candidate.text.split()))
        if reason:
            return False, f"not a statement: addresses the reader ({reason})"
        passage = candidate.data.get("passage") or ""
        if passage and candidate.text not in quotable(passage):
            return False, "not a statement: its paragraph addresses the reader"
    if candidate.kind == "fact" and len(set(candidate.backers)) < MIN_BACKERS:
        return False, f"unverified: backed by {len(set(candidate.backers))} role(s), {MIN_BACKERS} needed"
    if candidate.kind in ("task_memory", "skill") and not candidate.data.get("accepted"):
        return False, "the Critic did not pass the report against the acceptance criteria"
    return True, "verified"


def fact_row(fact: Fact, subjects: dict[str, str], run_id: str) -> FactRow:
    """Entity from the accepted conclusion's subject when there is one, else the
    sentence's content words; attribute from the unit of the first number."""
    value = fact.numbers[0] if fact.numbers else ""
    unit = ""
    position = fact.text.replace(",", "").find(value) if value else -1
    if position >= 0:
        m = _UNIT.match(fact.text.replace(",", ""), position + len(value))
        unit = " ".join(part for part in (m.group(1), m.group(2)) if part) if m else ""
    words = sorted(w for w in content_words(fact.text) if not any(ch.isdigit() for ch in w))
    entity = subjects.get(fact.fact_id) or " ".join(words[:8])
    return FactRow(entity=entity, attribute=unit.lower() or "value", value=value, unit=unit, text=fact.text,
                   source_ids=(fact.source_id,), confirmed_by=tuple(sorted(set(fact.confirmed_by))), run_id=run_id)


def candidates(state: AgentState, transcript: list[str], roles: TeamRoles) -> list[Candidate]:
    """Everything a run could be tempted to remember."""
    report = state.get("report")
    accepted = bool(report and report.accepted)
    messages = [*state.get("archive", []), *state.get("whiteboard", [])]
    sources = state.get("sources", {})
    out = [Candidate("fact", f.text, tuple(f.confirmed_by), {"fact": f, "passage": _passage(f, sources)})
           for f in state.get("facts", [])]
    out += [Candidate("note", note) for table in state.get("worktables", {}).values() for note in table.notes]
    out += [Candidate("tool_output", raw[:2000]) for raw in transcript]
    out += [Candidate("conclusion", m.body.content, (m.header.sender,)) for m in messages
            if m.header.msg_type is MsgType.CONCLUSION]
    charter = state["charter"]
    if report is not None:
        cited = [f"{sources[s].title} ({s})" if s in sources else s for s in report.cited_sources]
        # the run's tasks by lineage ("t0 > t1.2: question"), so a later run can say which
        # sub-task a remembered answer came from
        tasks = list(dict.fromkeys(f"{m.body.payload.path()}: {m.body.content}" for m in messages
                                   if isinstance(m.body.payload, Instruction) and m.body.payload.task_id
                                   and m.body.payload.task_id != "t0"))
        out.append(Candidate("task_memory", f"Question: {charter.goal}\nAnswered with: {'; '.join(cited)}",
                             roles.only(roles.drafts, roles.checks), {"accepted": accepted, "sources": list(report.cited_sources),
                                                    "repairs": len(report.repairs), "tasks": tasks}))
        plan = list(dict.fromkeys(m.body.content for m in messages if m.header.sender == roles.plans
                                  and m.header.msg_type is MsgType.INSTRUCTION))
        if plan:
            out.append(Candidate("skill", "\n".join(plan), roles.only(roles.plans, roles.checks),
                                 {"accepted": accepted, "steps": plan[:8], "when": charter.goal}))
    return out


def _passage(fact: Fact, sources: dict) -> str:
    """The retrieved passage a fact was quoted from: the context its detector verdict needs."""
    record = sources.get(fact.source_id)
    return next((p.text for p in record.passages if fact.text in p.text), "") if record else ""


def _subjects(state: AgentState) -> dict[str, str]:
    """fact id -> subject of an accepted conclusion quoting it (from the Searcher's structured data)."""
    out: dict[str, str] = {}
    conclusions = [m for m in [*state.get("archive", []), *state.get("whiteboard", [])]
                   if isinstance(m.body.payload, Conclusion) and m.body.payload.subject]
    for fact in state.get("facts", []):
        for m in conclusions:
            if fact.source_id in m.body.references and fact.text in m.body.content:
                out[fact.fact_id] = str(m.payload_as(Conclusion).subject)
                break
    return out


def apply_gates(store: MemoryBackend, ns: Namespace, run_id: str, state: AgentState, transcript: list[str],
                used_skills: list[str], log: RunLog, roles: TeamRoles) -> list[MemoryWrite]:
    """Judge every candidate, write what passes, log every decision; returns the decisions.

    A run's writes land in one transaction, recorded under the run's key with what they
    did (ids and actions, never text: a rejected candidate must leave no bytes, and
    `forget` must reach everything written). Judging is deterministic, so a resumed run
    whose gates already ran judges again, writes nothing, and logs the same decisions;
    one that crashed half-way wrote nothing and starts over."""
    subjects = _subjects(state)
    found = candidates(state, transcript, roles)
    judged = [(candidate, ok, reason) for candidate, (ok, reason) in zip(found, judge_all(found, roles))]
    key = f"gates/{ns.user}/{ns.session}/{ns.task}/{run_id}"
    outcomes = store.applied(key)
    if outcomes is None:
        with store.transaction():
            outcomes = _write(store, ns, run_id, state, judged, subjects, used_skills, roles)
            store.mark_applied(key, outcomes)
    decisions: list[MemoryWrite] = []
    for i, (candidate, ok, reason) in enumerate(judged):
        fields: dict[str, Any] = {"kind": candidate.kind, "accepted": ok, "reason": reason,
                                  "preview": candidate.text[:120], "zone": None, "action": "rejected"}
        fields.update(outcomes["written"].get(str(i), {}))
        if ok and candidate.kind == "fact":
            fields["entity"] = fact_row(candidate.data["fact"], subjects, run_id).entity
        decisions.append(MemoryWrite(**fields))
    uses = [MemoryWrite(kind="skill_use", zone="skill", accepted=True, id=use["id"], action=use["action"],
                        reason="a skill recalled at the start is credited with this run's outcome")
            for use in outcomes["skill_uses"]]
    for decision in [*decisions, *uses]:
        log.write(decision)
    return decisions


def _write(store: MemoryBackend, ns: Namespace, run_id: str, state: AgentState,
           judged: list[tuple[Candidate, bool, str]], subjects: dict[str, str], used_skills: list[str],
           roles: TeamRoles) -> dict:
    """The writes of the accepted candidates: candidate index -> zone, id, action (and the
    fact table's reason); skill reuses -> id, outcome."""
    written: dict[str, dict[str, Any]] = {}
    facts: list[tuple[int, FactRow]] = []  # written together
    for i, (candidate, ok, _) in enumerate(judged):
        if not ok:
            continue
        if candidate.kind == "fact":
            facts.append((i, fact_row(candidate.data["fact"], subjects, run_id)))
        elif candidate.kind == "task_memory":
            item_id = store.put_memory(ns, "task", candidate.text, {"run": run_id,
                                                                     "sources": candidate.data["sources"],
                                                                     "tasks": candidate.data["tasks"][:12],
                                                                     "confirmed_by": list(roles.only(roles.checks))},
                                       importance=0.5 if candidate.data["repairs"] else 0.8,
                                       key=state["charter"].goal)
            written[str(i)] = {"zone": "vector", "id": item_id, "action": "insert"}
        elif candidate.kind == "skill":
            item_id, action = store.put_skill(ns, "Research plan: " + candidate.data["when"][:80],
                                              candidate.data["when"], candidate.data["steps"],
                                              list(roles.only(roles.checks)))
            written[str(i)] = {"zone": "skill", "id": item_id, "action": action}
    for (i, _), (item_id, action, why) in zip(facts, store.put_facts(ns, [r for _, r in facts])):
        written[str(i)] = {"zone": "fact", "id": item_id, "action": action, "reason": why}
    report = state.get("report")
    uses = [{"id": skill_id, "action": store.record_use(skill_id, ns, success=bool(report and report.accepted))}
            for skill_id in used_skills]
    return {"written": written, "skill_uses": uses}
