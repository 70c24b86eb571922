"""Planner: turns the goal (and the Critic's open gaps) into search instructions."""

from __future__ import annotations

from pydantic import BaseModel, Field

from briefroom.agents.base import Role, Turn
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import MsgType, Priority


class Subquestion(BaseModel):
    question: str = Field(min_length=8, max_length=300, description="one focused question the corpus can answer",
                          json_schema_extra={"x-fill": "subquestion"})


class Plan(BaseModel):
    subquestions: list[Subquestion] = Field(min_length=1, max_length=3)


def step(turn: Turn) -> None:
    gaps = [m.body.content for m in turn.unread_of(MsgType.CRITIQUE)]
    task = "Split the goal into one to three focused questions for the Searcher."
    if gaps:
        task += " Earlier rounds left these gaps; plan questions that close them:\n" + "\n".join(f"- {g}" for g in gaps)
    plan = turn.ask(task, Plan)
    asked: set[str] = set()
    for sub in plan.subquestions:
        question = " ".join(sub.question.split()).strip(" {}[],\"'")
        if len(question) < 8:
            question = turn.charter.goal
        if question.lower() in asked:
            continue  # small models repeat themselves; one instruction per distinct question
        asked.add(question.lower())
        turn.publish(MsgType.INSTRUCTION, question, receiver="searcher", priority=Priority.P0, ttl=1)
    turn.note(f"round {turn.round}: asked {len(asked)} question(s)")


ROLE = Role(
    name="planner",
    prompt="planner.md",
    subscriptions=(Subscription(msg_type=MsgType.INSTRUCTION, senders=("user",)),
                   Subscription(msg_type=MsgType.CRITIQUE, senders=("critic",))),
    publications=(MsgType.INSTRUCTION,),
    output_schema=Plan,
    step=step,
    order=10,
    reads_memory=True,
    budget_tokens=3000,
    description="splits the goal into search questions",
)
