"""Round end summary: one model call that replaces a finished round's raw messages.

The summary is built from the round's raw messages plus its facts, never from the
previous summary alone, so errors do not compound round after round. Its conclusions
pass the same checks as any claim: a point whose numbers are not in its cited
sources is replaced by the verified fact it was about, or dropped. Numbers are safe
regardless: the facts channel holds them verbatim.
"""

from __future__ import annotations

from briefroom.agents.base import Role, Turn
from briefroom.agents.prompting import message_item
from briefroom.graph.state import AgentState
from briefroom.protocol.extraction import content_words, numbers_in
from briefroom.protocol.messages import AgentMessage, Priority
from briefroom.records import RoundRecord, RoundSummary, SummaryPoint
from briefroom.report.checks import claim_problems, closest_fact
from briefroom.report.draft import Claim

SUMMARIZER = Role(name="summarizer", prompt="summarizer.md", subscriptions=(), publications=(),
                  step=lambda turn: None, order=10_000, budget_tokens=4000,
                  description="summarises each finished round")


def summarize_round(state: AgentState, ctx, replaced: list[AgentMessage]) -> RoundRecord:
    current = state.get("round", 1)
    turn = Turn(role=SUMMARIZER, state=state, ctx=ctx)
    task = f"Summarise round {current}."
    words = frozenset(content_words(task))
    material = [message_item(m, Priority.P1, words) for m in replaced]
    facts = [f for f in state.get("facts", []) if f.round == current]
    refs = sorted({r for m in replaced for r in m.body.references} | {f.source_id for f in facts})
    senders = sorted({m.header.sender for m in replaced}) or ["none"]
    summary = turn.ask(task, RoundSummary, material=material, facts=facts,
                       enums={"source_ids": refs or ["none"], "agents_involved": senders})
    texts = turn.source_texts()
    points = []
    for point in summary.conclusions:
        claim = Claim.model_construct(text=point.text, source_ids=[s for s in point.source_ids if s in refs])
        unsourced_number = not claim.source_ids and numbers_in(point.text)
        if unsourced_number or (claim.source_ids and claim_problems(claim, texts)):
            fact = closest_fact(claim, facts, texts)
            ctx.log.event("summary_point_replaced", round=current, text=point.text,
                          replaced_by=fact.fact_id if fact else None)
            if fact is None:
                continue
            point = SummaryPoint(text=fact.text, source_ids=(fact.source_id,))
        points.append(point)
    if not points:  # nothing survived: say what the round did, in code
        points = [SummaryPoint(text=f"Round {current}: {len(replaced)} message(s), no verified conclusion.")]
    record = RoundRecord(round=current, summary=summary.model_copy(update={"conclusions": tuple(points)}),
                         replaced=tuple(m.msg_id for m in replaced))
    ctx.log.event("round_summary", round=current, summary=record.summary, replaced=list(record.replaced))
    return record
