"""Round end summary: one model call that replaces a finished round's raw messages.

The summary is built from the round's raw messages plus its facts, never from the
previous summary alone, so errors do not compound round after round. It follows the
structured summary of the design documents: goal, constraints, decisions, open
questions, fact references and next action, besides the round's conclusions.

Code fills every field it knows exactly, and the model is not asked for them: goal
and constraints come from the charter, fact references from the round's facts (the
lossless channel), open questions from the Critic's gaps and from instructions no
evidence answered, the agents from the messages' senders. The model writes only what
needs judgement (`SummaryDraft`). Its conclusions pass the same checks as any claim:
a point whose numbers are not in its cited sources is replaced by the verified fact
it was about, or dropped; a judgement line (decision, todo, risk, next action) with a
number found in none of the round's facts and sources is dropped. Numbers are safe
regardless: the facts channel holds them verbatim.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from briefroom.agents.base import Role, Turn
from briefroom.agents.prompting import message_item
from briefroom.errors import ContractError
from briefroom.events import RoundSummaryEvent, SummaryPointReplaced
from briefroom.protocol.extraction import content_words, numbers_in
from briefroom.protocol.messages import AgentMessage, MsgType, Priority
from briefroom.protocol.payloads import Conclusion, Critique, Instruction
from briefroom.records import Claim, Fact, RoundRecord, RoundSummary, SummaryPoint
from briefroom.report.checks import claim_problems, closest_fact, readings_in, source_readings, unsupported_numbers
from briefroom.state.schema import AgentState

SUMMARIZER = Role(name="summarizer", prompt="summarizer.md", subscriptions=(), publications=(),
                  step=lambda turn: None, budget_tokens=4000,
                  description="summarises each finished round")

MAX_OPEN_QUESTIONS = 6


class SummaryDraft(BaseModel):
    """The part of a round summary that needs judgement: what the model is asked for."""

    conclusions: tuple[SummaryPoint, ...] = Field(min_length=1, max_length=6)
    decisions: tuple[str, ...] = Field(default=(), max_length=4,
                                       description="what the team settled this round, e.g. which figure it kept")
    todos: tuple[str, ...] = Field(default=(), max_length=4)
    risks: tuple[str, ...] = Field(default=(), max_length=4,
                                   description="conflicting figures, missing evidence")
    next_action: str = Field(default="", max_length=300, description="what the team should do next, one line")


def open_questions(state: AgentState, replaced: list[AgentMessage], current: int) -> tuple[str, ...]:
    """The Critic's gaps of this round, then this round's instructions that no sourced,
    unrejected conclusion answers (the user's goal is not a question for the round)."""
    by_id = {m.msg_id: m for m in [*state.get("whiteboard", []), *replaced] if m.header.round == current}
    messages = list(by_id.values())
    critiques = [m.body.payload for m in messages if isinstance(m.body.payload, Critique)]
    rejected = {msg_id for c in critiques for msg_id in c.rejected}
    answered = {m.header.relation for m in messages
                if isinstance(m.body.payload, Conclusion) and m.body.references and m.msg_id not in rejected}
    questions = [gap for c in critiques if c.kind == "gaps" for gap in c.gaps]
    questions += [m.body.content for m in messages if m.header.msg_type == MsgType.INSTRUCTION
                  and m.header.sender != "user" and m.msg_id not in answered]
    unique: dict[str, str] = {}  # one entry per question, first wording kept
    for question in (" ".join(q.split()) for q in questions):
        if question:
            unique.setdefault(question.lower(), question)
    return tuple(unique.values())[:MAX_OPEN_QUESTIONS]


def round_tasks(state: AgentState, current: int) -> tuple[str, ...]:
    """The tasks handed out this round, by lineage (`t0 > t1.2: question`), so later
    rounds and memory refer to a task by its id, not by re-quoting it."""
    out = []
    for m in [*state.get("archive", []), *state.get("whiteboard", [])]:
        payload = m.body.payload
        if m.header.round == current and isinstance(payload, Instruction) and payload.task_id not in (None, "t0"):
            out.append(f"{payload.path()}: {' '.join(m.body.content.split())[:160]}")
    return tuple(dict.fromkeys(out))


def _verified_line(text: str, facts: list[Fact], texts: dict[str, str], refs: list[str]) -> bool:
    """A judgement line may only carry numbers the round's facts or sources hold."""
    known = frozenset().union(*(readings_in(f.text) for f in facts),
                              *(source_readings(texts[sid]) for sid in refs if sid in texts))
    return not unsupported_numbers(text, known)


def summarize_round(state: AgentState, ctx, replaced: list[AgentMessage]) -> RoundRecord:
    current = state.get("round", 1)
    turn = Turn(role=SUMMARIZER, state=state, ctx=ctx)
    task = f"Summarise round {current}."
    words = frozenset(content_words(task))
    material = [message_item(m, Priority.P1, words) for m in replaced]
    facts = [f for f in state.get("facts", []) if f.round == current]
    refs = sorted({r for m in replaced for r in m.body.references} | {f.source_id for f in facts})
    senders = sorted({m.header.sender for m in replaced}) or ["none"]
    try:
        draft = turn.ask(task, SummaryDraft, material=material, facts=facts, enums={"source_ids": refs or ["none"]},
                         give_up_when_cut=True)
    except ContractError:
        # A summary is bookkeeping, not the answer: when the model cannot write one the
        # round's verbatim facts stand in for its conclusions (the contract errors are logged).
        draft = SummaryDraft.model_construct(
            conclusions=tuple(SummaryPoint(text=f.text, source_ids=(f.source_id,)) for f in facts[:6]),
            decisions=(), todos=(), risks=(), next_action="")
    texts = turn.source_texts()
    points = []
    for point in draft.conclusions:
        claim = Claim.model_construct(text=point.text, source_ids=[s for s in point.source_ids if s in refs])
        unsourced_number = not claim.source_ids and numbers_in(point.text)
        if unsourced_number or (claim.source_ids and claim_problems(claim, texts)):
            fact = closest_fact(claim, facts, texts)
            ctx.log.write(SummaryPointReplaced(round=current, text=point.text,
                                               replaced_by=fact.fact_id if fact else None))
            if fact is None:
                continue
            point = SummaryPoint(text=fact.text, source_ids=(fact.source_id,))
        points.append(point)
    if not points:  # nothing survived: say what the round did, in code
        points = [SummaryPoint(text=f"Round {current}: {len(replaced)} message(s), no verified conclusion.")]

    def judged(lines: tuple[str, ...]) -> tuple[str, ...]:
        kept = []
        for line in (" ".join(x.split()) for x in lines):
            if not line:
                continue
            if _verified_line(line, facts, texts, refs):
                kept.append(line)
            else:
                ctx.log.write(SummaryPointReplaced(round=current, text=line, replaced_by=None))
        return tuple(kept)

    charter = state["charter"]
    summary = RoundSummary(
        conclusions=tuple(points), agents_involved=tuple(senders), todos=judged(draft.todos),
        risks=judged(draft.risks), goal=charter.goal, constraints=tuple(charter.constraints),
        decisions=judged(draft.decisions), open_questions=open_questions(state, replaced, current),
        fact_refs=tuple(f.fact_id for f in facts), next_action=next(iter(judged((draft.next_action,))), ""),
        tasks=round_tasks(state, current))
    record = RoundRecord(round=current, summary=summary, replaced=tuple(m.msg_id for m in replaced))
    ctx.log.write(RoundSummaryEvent(round=current, summary=summary.model_dump(mode="json"),
                                    replaced=list(record.replaced)))
    return record
