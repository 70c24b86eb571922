"""Planner: turns the goal (and the Critic's open gaps) into search instructions."""

from __future__ import annotations

from pydantic import BaseModel, Field

from briefroom.agents.base import Role, Turn
from briefroom.events import Clarification, MemoryReuse, PlanReview, ReviewedTask
from briefroom.memory.rules import terms
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import AgentMessage, MsgType, Priority
from briefroom.protocol.payloads import ArtifactRef, Conclusion, Instruction
from briefroom.protocol.prompt_assembly import mark_data
from briefroom.records import Fact
from briefroom.report.language import part_query, question_parts
from briefroom.review import (
    MAX_CLARIFYING_QUESTIONS,
    ClarifyAnswer,
    ClarifyRequest,
    PlanAnswer,
    PlannedTask,
    PlanReviewRequest,
    clarified_constraints,
    reviewed_tasks,
)
from briefroom.state.schema import ReviewState

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


class ClarifyingQuestion(BaseModel):
    question: str = Field(min_length=8, max_length=200, description="one short question to the user")


class ClarifyingQuestions(BaseModel):
    questions: list[ClarifyingQuestion] = Field(max_length=MAX_CLARIFYING_QUESTIONS)  # none: the goal is clear


def step(turn: Turn) -> None:
    # A run that asks its user goes in turns that each end after a model call or with
    # a question (see `review.py`): clarify -> ask -> plan -> review -> publish. Until the
    # plan is out, the user's goal stays unread, so routing brings the Planner back.
    review: ReviewState = turn.state.get("review") or {}
    if review.get("clarify") and not review.get("clarified") and "questions" not in review:
        return write_clarifying_questions(turn, review)
    if review.get("questions") is not None and not review.get("clarified"):
        return take_clarifications(turn, review)
    if review.get("proposed") is not None:
        return take_plan_review(turn, review)
    planned, distinct = plan(turn)
    if review.get("plan") and not review.get("reviewed"):
        return hold_for_review(turn, review, planned)
    publish_plan(turn, planned)
    turn.note(f"round {turn.round}: asked {distinct} question(s)")


def plan(turn: Turn) -> tuple[list[tuple[str, Instruction]], int]:
    """The sub-questions to hand out, each with its task envelope, and how many distinct
    questions were planned (one model call)."""
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
    tasks, root = handed_out(turn), root_task(turn)
    gap_messages = turn.unread_of(MsgType.CRITIQUE)
    planned = []
    for number, (question, known) in enumerate(zip(questions, answered_by(turn, questions, remembered)), start=1):
        if known is not None and len(questions) > 1 and question is not questions[-1]:
            turn.ctx.log.write(MemoryReuse(agent="planner", round=turn.round, question=question,
                                           fact=known.fact_id, source=known.source_id))
            turn.note(f"answered from memory: {question} -> {known.fact_id}")
            continue
        planned.append((question, envelope(turn, question, number, gap_messages, tasks, root)))
    return planned, len(asked)


def root_task(turn: Turn) -> Instruction:
    goals = [m for m in turn.unread_of(MsgType.INSTRUCTION) if m.payload_as(Instruction).task_id]
    return goals[0].payload_as(Instruction) if goals else Instruction(task_id="t0")


def publish_plan(turn: Turn, planned: list[tuple[str, Instruction]]) -> None:
    for question, task in planned:
        turn.publish(MsgType.INSTRUCTION, question, to="search", priority=Priority.P0, ttl=1, payload=task)


# --- asking the user (review.py) -------------------------------------------------------
def keep_goal_unread(turn: Turn) -> None:
    """End this turn without reading the user's goal: the Planner speaks again next."""
    turn.extra["seen"] = {}


def write_clarifying_questions(turn: Turn, review: ReviewState) -> None:
    """Ask the model whether the goal needs the user's answers first (one model call);
    the questions are asked in the next turn, none when the goal is clear."""
    found = turn.ask("Is the goal ambiguous in a way that would change what to search (a region, a period, "
                     "a measure, a definition)? If so, write up to three short questions for the user whose "
                     "answers would change the plan; if the goal is clear, write none.", ClarifyingQuestions)
    questions = list(dict.fromkeys(" ".join(q.question.split()) for q in found.questions))
    turn.note(f"clarifying questions: {len(questions)}")
    turn.extra["review"] = {**review, "questions": questions, "clarified": not questions}
    keep_goal_unread(turn)


def take_clarifications(turn: Turn, review: ReviewState) -> None:
    request = ClarifyRequest(goal=turn.charter.goal, questions=list(review.get("questions") or []))
    answer = turn.ask_user(request)
    assert isinstance(answer, ClarifyAnswer)
    answers = [*answer.answers, *[""] * (len(request.questions) - len(answer.answers))]
    turn.ctx.log.write(Clarification(agent=turn.worker, round=turn.round, questions=request.questions,
                                     answers=answers))
    added = clarified_constraints(request, answer)
    if added:  # the plan, made next turn, and every later prompt read them in the charter
        turn.extra["charter"] = turn.charter.model_copy(update={"constraints": (*turn.charter.constraints, *added)})
    turn.extra["review"] = {**review, "clarified": True,
                            "answers": [*review.get("answers", []), answer.model_dump(exclude_defaults=True)]}
    keep_goal_unread(turn)


def hold_for_review(turn: Turn, review: ReviewState, planned: list[tuple[str, Instruction]]) -> None:
    """Keep the plan for the user's review, asked in the next turn (the model call is done)."""
    proposed = [{"question": q, "envelope": task.model_dump(mode="json")} for q, task in planned]
    turn.extra["review"] = {**review, "proposed": proposed}
    keep_goal_unread(turn)


def take_plan_review(turn: Turn, review: ReviewState) -> None:
    """Ask the user about the plan kept last turn, then hand out the plan they left."""
    proposed = {p["envelope"]["task_id"]: (p["question"], Instruction.model_validate(p["envelope"]))
                for p in review.get("proposed") or []}
    before = [PlannedTask(task_id=tid, question=q) for tid, (q, _) in proposed.items()]
    answer = turn.ask_user(PlanReviewRequest(goal=turn.charter.goal, round=turn.round, tasks=before,
                                                 max_tasks=MAX_QUESTIONS))
    assert isinstance(answer, PlanAnswer)
    after = reviewed_tasks(before, answer, turn.round)
    turn.ctx.log.write(PlanReview(agent=turn.worker, round=turn.round,
                                  before=[ReviewedTask(task_id=t.task_id, question=t.question) for t in before],
                                  after=[ReviewedTask(task_id=t.task_id, question=t.question) for t in after],
                                  accepted=not answer.changes, note=answer.note))
    root, gaps = root_task(turn), turn.unread_of(MsgType.CRITIQUE)
    planned = []
    for task in after:
        if task.task_id in proposed:
            planned.append((task.question, proposed[task.task_id][1]))
        else:  # an added question: a task of its own, child of the user's goal
            added = envelope(turn, task.question, 0, gaps, handed_out(turn), root)
            planned.append((task.question, added.model_copy(update={"task_id": task.task_id})))
    publish_plan(turn, planned)
    if answer.changes:  # the plan the user left is the team's: every prompt reads it in the charter
        turn.extra["charter"] = turn.charter.model_copy(
            update={"constraints": (*turn.charter.constraints, *reviewed_plan_constraints(after, answer.note))})
    turn.note(f"round {turn.round}: the user reviewed the plan; asked {len(after)} question(s)")
    turn.extra["review"] = {**review, "proposed": None, "reviewed": True,
                            "answers": [*review.get("answers", []), answer.model_dump(exclude_defaults=True)]}


def reviewed_plan_constraints(tasks: list[PlannedTask], note: str | None) -> list[str]:
    lines = ["The user reviewed the plan; the report must answer: "
             + "; ".join(f"{t.task_id} {t.question}" for t in tasks)]
    if note:
        lines.append(f"The user's note on the plan: {' '.join(note.split())}")
    return lines


ROLE = Role(
    name="planner",
    prompt="planner.md",
    subscriptions=(Subscription(msg_type=MsgType.INSTRUCTION), Subscription(msg_type=MsgType.CRITIQUE)),
    capabilities=("plan",),
    publications=(MsgType.INSTRUCTION,),
    step=step,
    reads_memory=True,
    budget_tokens=3000,
    description="splits the goal into search questions",
)
