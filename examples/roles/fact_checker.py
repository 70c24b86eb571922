"""Fact-checker: a sixth role that changes the flow, in this one file plus its prompt.

It *guards* conclusions: the bus hands every conclusion to it first, and the Critic
and the Writer see only the ones it forwards. A conclusion passes when its citations
resolve, its numbers stand in the sources it cites, and the model, shown the cited
passages, says the sources state it. A conclusion without sources ("no passage
answers ...") is news for the team, not a claim, and passes unchanged.

    briefroom research "..." --corpus docs/ --roles-dir examples/roles

No other file names this role: the Searcher still publishes to whoever subscribes,
and the bus routes through the guard because this file declares `guards=`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from briefroom.agents.base import Role, Turn, passage_items
from briefroom.events import ClaimRejected
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import AgentMessage, MsgType
from briefroom.records import Claim
from briefroom.report.checks import claim_problems


class Check(BaseModel):
    msg_id: str = Field(json_schema_extra={"x-fill": "distinct"})
    verdict: Literal["supported", "unsupported"]


class Checks(BaseModel):
    checks: list[Check] = Field(min_length=1)


def problems_in_code(turn: Turn, message: AgentMessage) -> str | None:
    """Why the conclusion fails the deterministic checks, or None."""
    claim = Claim(text=message.body.content, source_ids=list(message.body.references))
    found = claim_problems(claim, turn.source_texts())
    return found[0].line() if found else None


def step(turn: Turn) -> None:
    held = turn.unread_of(MsgType.CONCLUSION)
    claims = [m for m in held if m.body.references]
    why: dict[str, str] = {}
    for message in claims:
        problem = problems_in_code(turn, message)
        if problem:
            why[message.msg_id] = problem
    to_ask = [m for m in claims if m.msg_id not in why]
    if to_ask and not turn.finishing:
        ids = [m.msg_id for m in to_ask]
        cited = {sid for m in to_ask for sid in m.body.references}
        records = [record for sid, record in turn.all_sources().items() if sid in cited]
        answer = turn.ask("For each conclusion on the whiteboard, say whether the passages it cites state it.",
                          Checks, material=passage_items(records, turn.charter.goal), enums={"msg_id": ids},
                          max_items={"checks": len(ids)})
        for check in answer.checks:
            if check.msg_id in ids and check.verdict == "unsupported":
                why.setdefault(check.msg_id, "the model found no passage stating it")
    for message in held:
        if message.msg_id in why:
            turn.ctx.log.write(ClaimRejected(agent=turn.role.name, round=turn.round, claim=message.body.content,
                                             replaced_by=None))
            turn.note(f"held back {message.msg_id}: {why[message.msg_id]}")
        else:
            turn.forward(message)


ROLE = Role(
    name="fact_checker",
    prompt=Path(__file__).with_name("fact_checker.md"),
    subscriptions=(Subscription(msg_type=MsgType.CONCLUSION),),
    publications=(MsgType.CONCLUSION,),
    guards=(MsgType.CONCLUSION,),
    step=step,
    budget_tokens=4000,
    description="passes only conclusions its sources state",
)
