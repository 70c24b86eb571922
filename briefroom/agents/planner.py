"""Planner: turns the goal (and the Critic's open gaps) into search instructions."""

from __future__ import annotations

from pydantic import BaseModel, Field

from briefroom.agents.base import Role, Turn
from briefroom.memory.store import terms
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import AgentMessage, MsgType, Priority
from briefroom.protocol.payloads import ArtifactRef, Conclusion, Instruction
from briefroom.protocol.prompt_assembly import mark_data
from briefroom.records import Fact
from briefroom.report.language import part_query, question_parts

# What the Searcher takes in one turn (its MAX_INSTRUCTIONS_PER_TURN).
MAX_QUESTIONS = 4
MAX_ARTIFACTS = 4  # references an envelope carries: enough to start from, not a copy of the run


def handed_out(turn: Turn) -> dict[str, Instruction]:
    """Every task envelope this Planner has published in the run, newest version per
    question (live or archived: a task's identity outlives its message)."""
    mine = [m for m in [*turn.state.get("archive", []), *turn.state.get("whiteboard", [])]
            if m.header.sender == turn.role.name and m.header.msg_type is MsgType.INSTRUCTION]
    return {m.body.content.lower(): m.payload_as(Instruction) for m in mine}


def parent_of(gap_text: str, tasks: dict[str, Instruction], root: Instruction) -> Instruction:
    """The task a gap is about: the one whose question the Critic's gap quotes."""
    for question, envelope in tasks.items():
        if question and question in gap_text.lower():
            return envelope
    return root


def artifacts_for(turn: Turn, parent: Instruction) -> tuple[ArtifactRef, ...]:
    """What the team already holds for the parent task, by reference: the sources its
    conclusions cited (a re-asked question starts from them, it does not copy them)."""
    if parent.task_id in (None, "t0"):
        return ()
    sources = turn.all_sources()
    cited: list[str] = []
    for message in [*turn.state.get("archive", []), *turn.state.get("whiteboard", [])]:
        payload = message.body.payload
        if isinstance(payload, Conclusion) and payload.task_id == parent.task_id:
            cited += [s for s in message.body.references if s in sources and s not in cited]
    return tuple(ArtifactRef(ref=s, kind="source", summary=f"{sources[s].title} ({len(sources[s].passages)} "
                             f"passage(s) already retrieved)"[:300]) for s in cited[:MAX_ARTIFACTS])


def envelope(turn: Turn, question: str, number: int, gaps: list[AgentMessage],
             tasks: dict[str, Instruction], root: Instruction) -> Instruction:
    """The task-state envelope for one sub-question: a question handed out before keeps
    its task id with the next version; a new one is `t<round>.<n>`, child of the task the
    gap it closes was about (or of the user's goal)."""
    earlier = tasks.get(question.lower())
    if earlier is not None and earlier.task_id:
        return earlier.model_copy(update={"version": earlier.version + 1,
                                          "artifacts": artifacts_for(turn, earlier) or earlier.artifacts})
    parent = root
    for gap in gaps:
        candidate = parent_of(gap.body.content, tasks, root)
        if candidate is not root:
            parent = candidate
            break
    return Instruction(task_id=f"t{turn.round}.{number}", lineage=(parent.task_id or "t0", *parent.lineage),
                       artifacts=artifacts_for(turn, parent))


def answered_by(turn: Turn, questions: list[str], remembered: list[Fact]) -> list[Fact | None]:
    """Per question, the remembered fact closest in meaning, if it answers it: close in
    meaning (cosine at the recall threshold), or related (two thirds of it) and holding
    the question's terms as fact recall counts them (`--fact-threshold` of its words and
    numbers). A question and the sentence answering it share a subject, not a wording;
    a multilingual model scores them lower than an English-only one did. One embedding
    call for all questions and facts."""
    if not remembered or turn.ctx.index is None:
        return [None] * len(questions)
    vectors = turn.ctx.index.embedder.embed([*questions, *(f.text for f in remembered)])
    facts = vectors[len(questions):]
    close, related = turn.ctx.memory_threshold, turn.ctx.memory_threshold * 2 / 3
    out: list[Fact | None] = []
    for text, question in zip(questions, vectors[:len(questions)]):
        wanted = terms(text)
        scores = [sum(a * b for a, b in zip(question, v)) for v in facts]  # unit vectors: dot = cosine
        best = max(range(len(scores)), key=scores.__getitem__)
        held = len(wanted & terms(remembered[best].text)) / len(wanted) if wanted else 0.0
        answers = scores[best] >= close or (scores[best] >= related and held >= turn.ctx.fact_threshold)
        out.append(remembered[best] if answers else None)
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
    searchable = [part_query(p, goal) for p in parts] if len(parts) > 1 else []
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
    tasks = handed_out(turn)
    goals = [m for m in turn.unread_of(MsgType.INSTRUCTION) if m.payload_as(Instruction).task_id]
    root = goals[0].payload_as(Instruction) if goals else Instruction(task_id="t0")
    gap_messages = turn.unread_of(MsgType.CRITIQUE)
    for number, (question, known) in enumerate(zip(questions, answered_by(turn, questions, remembered)), start=1):
        if known is not None and len(questions) > 1 and question is not questions[-1]:
            turn.ctx.log.event("memory_reuse", agent="planner", round=turn.round, question=question,
                               fact=known.fact_id, source=known.source_id)
            turn.note(f"answered from memory: {question} -> {known.fact_id}")
            continue
        turn.publish(MsgType.INSTRUCTION, question, to="search", priority=Priority.P0, ttl=1,
                     payload=envelope(turn, question, number, gap_messages, tasks, root))
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
