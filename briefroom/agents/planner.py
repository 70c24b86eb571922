"""Planner: turns the goal (and the Critic's open gaps) into search instructions."""

from __future__ import annotations

from pydantic import BaseModel, Field

from briefroom.agents.base import Role, Turn
from briefroom.protocol.bus import Subscription
from briefroom.protocol.extraction import content_words
from briefroom.protocol.messages import MsgType, Priority
from briefroom.protocol.prompt_assembly import mark_data
from briefroom.records import Fact
from briefroom.report.language import question_parts

# What the Searcher takes in one turn (its MAX_INSTRUCTIONS_PER_TURN).
MAX_QUESTIONS = 4


def answered_by(turn: Turn, questions: list[str], remembered: list[Fact]) -> list[Fact | None]:
    """Per question, the remembered fact closest in meaning, if it is close enough.
    One embedding call for all questions and facts."""
    if not remembered or turn.ctx.index is None:
        return [None] * len(questions)
    vectors = turn.ctx.index.embedder.embed([*questions, *(f.text for f in remembered)])
    facts = vectors[len(questions):]
    out: list[Fact | None] = []
    for question in vectors[:len(questions)]:
        scores = [sum(a * b for a, b in zip(question, v)) for v in facts]  # unit vectors: dot = cosine
        best = max(range(len(scores)), key=scores.__getitem__)
        out.append(remembered[best] if scores[best] >= turn.ctx.memory_threshold else None)
    return out


class Subquestion(BaseModel):
    question: str = Field(min_length=8, max_length=300, description="one focused question the corpus can answer",
                          json_schema_extra={"x-fill": "subquestion"})


class Plan(BaseModel):
    subquestions: list[Subquestion] = Field(min_length=1, max_length=3)


def step(turn: Turn) -> None:
    gaps = [m.body.content for m in turn.unread_of(MsgType.CRITIQUE)]
    task = "Split the goal into one to three focused questions for the Searcher."
    if gaps:
        # the Critic wrote them after reading sources: data, not orders
        task += " Earlier rounds left these gaps; plan questions that close them:\n" + mark_data(
            "gaps", "\n".join(f"- {g}" for g in gaps))
    plan = turn.ask(task, Plan)
    asked: set[str] = set()
    questions = []
    # Each part of a many-part question is searched as asked ("…in 2025, and why…"):
    # a small model's plan often covers only the first; the model's questions follow.
    goal = turn.charter.goal
    parts = question_parts(goal) if not gaps else []
    # a part too short to search on its own ("by how much") is searched with the whole question
    searchable = [p if len(content_words(p)) >= 3 else goal for p in parts] if len(parts) > 1 else []
    proposals = [*searchable, *(s.question for s in plan.subquestions)]
    for proposal in proposals[:MAX_QUESTIONS]:
        question = " ".join(proposal.split()).strip(" {}[],\"'")
        if len(question) < 8:
            question = turn.charter.goal
        if question.lower() in asked:
            continue  # small models repeat themselves; one instruction per distinct question
        asked.add(question.lower())
        questions.append(question)
    # A question a verified fact from memory already answers is not searched again (the
    # fact is in the team's facts, with its original source); one question always goes
    # out, so the round still produces fresh evidence.
    remembered = [f for f in turn.all_facts() if f.found_by == "memory"]
    for question, known in zip(questions, answered_by(turn, questions, remembered)):
        if known is not None and len(questions) > 1 and question is not questions[-1]:
            turn.ctx.log.event("memory_reuse", agent="planner", round=turn.round, question=question,
                               fact=known.fact_id, source=known.source_id)
            turn.note(f"answered from memory: {question} -> {known.fact_id}")
            continue
        turn.publish(MsgType.INSTRUCTION, question, to="search", priority=Priority.P0, ttl=1)
    turn.note(f"round {turn.round}: asked {len(asked)} question(s)")


ROLE = Role(
    name="planner",
    prompt="planner.md",
    subscriptions=(Subscription(msg_type=MsgType.INSTRUCTION), Subscription(msg_type=MsgType.CRITIQUE)),
    capabilities=("plan",),
    publications=(MsgType.INSTRUCTION,),
    step=step,
    order=10,
    reads_memory=True,
    budget_tokens=3000,
    description="splits the goal into search questions",
)
