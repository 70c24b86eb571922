"""Asking the run's user mid-run: the plan review and clarifying questions.

A role asks with `turn.ask_user(request)` inside its node. The graph makes that LangGraph's
`interrupt()` (`graph/builder.py` gives each turn its pause; this module stays free of LangGraph):
the graph stops, its checkpoint holds the request, and whoever drives the graph (the
CLI, a job worker, a client of the served API) reads it (`pending_request`) and goes on
with `Command(resume=answer)`. So one pause works everywhere, and survives the process:
a run killed while it waits resumes at the same question.

LangGraph runs an interrupted node again from its start when it resumes, so a node
that asks must do nothing before asking that it would regret doing twice: the Planner
makes its model call in one turn, keeps the result in the state (`ReviewState`), and
asks in the next (see `agents/planner.py`).

An answer is JSON, the same from a terminal, a file (`--answer FILE.json`) or a client:

    plan review:  {"accept": true}
                  {"edit": {"t1.1": "new text"}, "drop": ["t1.2"], "add": ["a new question"],
                   "note": "free text for the team"}
    clarify:      {"answers": ["first answer", "", "third"]}  ("" or missing: not answered)
                  {"accept": true}  (answer none)

An answer that does not fit its request is refused with a one-line reason
(`ReviewError`); inside the graph the request is asked again, carrying that reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from briefroom.errors import BriefroomError

MAX_CLARIFYING_QUESTIONS = 3
MAX_QUESTION_CHARS = 300  # a sub-question's bound (the Planner's `Subquestion`)
# A note and a clarifying answer become charter constraints, read in every prompt (P0,
# never cut): bounded, as an answer may come from a network client (the served API).
MAX_NOTE_CHARS = 1000
MAX_ANSWER_CHARS = 300
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")  # tab, newline, CR: whitespace


class ReviewError(BriefroomError):
    """An answer that does not fit the request it answers (one line: why)."""


class ReviewOptions(BaseModel):
    """What a run asks its user: `plan` (the first plan, before any search) and
    `clarify` (up to three questions first, when the goal is ambiguous)."""

    model_config = ConfigDict(frozen=True)

    plan: bool = False
    clarify: bool = False

    @property
    def any(self) -> bool:
        return self.plan or self.clarify


class PlannedTask(BaseModel):
    """A sub-question as the user sees it: its task id and what it must find."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    question: str


class PlanReviewRequest(BaseModel):
    kind: Literal["plan_review"] = "plan_review"
    goal: str
    round: int = 1
    tasks: list[PlannedTask]
    max_tasks: int = 4
    error: str | None = Field(default=None, description="why the previous answer was refused")


class ClarifyRequest(BaseModel):
    kind: Literal["clarify"] = "clarify"
    goal: str
    questions: list[str]
    error: str | None = None


UserRequest: TypeAlias = Annotated[PlanReviewRequest | ClarifyRequest, Field(discriminator="kind")]
_REQUEST: TypeAdapter[PlanReviewRequest | ClarifyRequest] = TypeAdapter(UserRequest)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PlanAnswer(_Answer):
    accept: bool = False
    edit: dict[str, str] = Field(default_factory=dict)
    drop: list[str] = Field(default_factory=list)
    add: list[str] = Field(default_factory=list)
    note: str | None = None

    @property
    def changes(self) -> bool:
        return bool(self.edit or self.drop or self.add or self.note)


class ClarifyAnswer(_Answer):
    accept: bool = False
    answers: list[str] = Field(default_factory=list)


Answer: TypeAlias = PlanAnswer | ClarifyAnswer
# What a driver gives for a request: the answer's JSON form, or None to leave the run paused.
Reviewer: TypeAlias = Callable[[PlanReviewRequest | ClarifyRequest], dict[str, Any] | None]


def parse_request(value: Any) -> PlanReviewRequest | ClarifyRequest:
    return _REQUEST.validate_python(value)


def pending_request(snapshot: Any) -> PlanReviewRequest | ClarifyRequest | None:
    """The question a paused graph waits on (its checkpoint's interrupt), if any."""
    for waiting in getattr(snapshot, "interrupts", ()) or ():
        try:
            return parse_request(waiting.value)
        except ValidationError:
            continue  # someone else's interrupt: not ours to answer
    return None


# How a run stops until its user answers: given the request's JSON form, it returns the answer's.
Pause: TypeAlias = Callable[[dict[str, Any]], Any]


def ask_user(request: PlanReviewRequest | ClarifyRequest, pause: Pause) -> Answer:
    """Pause the run until its user answers `request`; an answer that does not fit is
    refused by asking again, with the reason. `pause` is the graph's interrupt."""
    shown = request
    while True:
        raw = pause(shown.model_dump(mode="json"))
        try:
            return check_answer(raw, request)
        except ReviewError as exc:
            shown = request.model_copy(update={"error": str(exc)})


def check_answer(raw: Any, request: PlanReviewRequest | ClarifyRequest) -> Answer:
    """`raw` (the JSON form) as the answer to `request`, or a ReviewError saying why not."""
    if isinstance(request, PlanReviewRequest):
        return _check_plan_answer(_model(PlanAnswer, raw), request)
    return _check_clarify_answer(_model(ClarifyAnswer, raw), request)


def _model(kind: type[PlanAnswer] | type[ClarifyAnswer], raw: Any) -> Any:
    if not isinstance(raw, dict):
        raise ReviewError(f"an answer is a JSON object, not {type(raw).__name__}")
    try:
        return kind.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "answer"
        raise ReviewError(f"{where}: {first['msg']}") from None


def _check_plan_answer(answer: PlanAnswer, request: PlanReviewRequest) -> PlanAnswer:
    if answer.accept and answer.changes:
        raise ReviewError("'accept' takes the plan as it is; leave it out to edit, add, drop or note")
    known = {t.task_id for t in request.tasks}
    for task_id in [*answer.edit, *answer.drop]:
        if task_id not in known:
            raise ReviewError(f"unknown task id {task_id!r} (the plan has {', '.join(sorted(known))})")
    for task_id, text in answer.edit.items():
        _check_text(text, f"edit of {task_id}")
        if task_id in answer.drop:
            raise ReviewError(f"{task_id} is both edited and dropped")
    for text in answer.add:
        _check_text(text, "added sub-question")
    if answer.note is not None:
        _check_text(answer.note, "note", MAX_NOTE_CHARS)
    left = len(known - set(answer.drop)) + len(answer.add)
    if left == 0:
        raise ReviewError("the plan would have no sub-question left; add one or drop fewer")
    if left > request.max_tasks:
        raise ReviewError(f"the plan would have {left} sub-questions; at most {request.max_tasks} "
                          "(what the search takes in one turn)")
    return answer


def _check_text(text: str, what: str, limit: int = MAX_QUESTION_CHARS) -> None:
    if not text.strip():
        raise ReviewError(f"the {what} is empty")
    if len(text) > limit:
        raise ReviewError(f"the {what} has {len(text):,} characters; at most {limit:,}")
    if _CONTROL.search(text):  # ESC, NUL, ...: they would reach the terminal and report.md raw
        raise ReviewError(f"the {what} holds control characters")


def _check_clarify_answer(answer: ClarifyAnswer, request: ClarifyRequest) -> ClarifyAnswer:
    if answer.accept and answer.answers:
        raise ReviewError("'accept' answers no question; leave it out to give answers")
    if len(answer.answers) > len(request.questions):
        raise ReviewError(f"{len(answer.answers)} answers for {len(request.questions)} question(s)")
    for n, text in enumerate(answer.answers, start=1):
        if text.strip():  # "" leaves a question unanswered
            _check_text(text, f"answer {n}", MAX_ANSWER_CHARS)
    return answer


def reviewed_tasks(tasks: Sequence[PlannedTask], answer: PlanAnswer, round_: int) -> list[PlannedTask]:
    """The plan after the user's answer: edits in place, drops gone, additions last with
    new task ids after the highest one the plan used."""
    kept = [PlannedTask(task_id=t.task_id, question=" ".join(answer.edit.get(t.task_id, t.question).split()))
            for t in tasks if t.task_id not in answer.drop]
    number = max((_task_number(t.task_id) for t in tasks), default=0)
    for offset, text in enumerate(answer.add, start=1):
        kept.append(PlannedTask(task_id=f"t{round_}.{number + offset}", question=" ".join(text.split())))
    return kept


def _task_number(task_id: str) -> int:
    tail = task_id.rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def clarified_constraints(request: ClarifyRequest, answer: ClarifyAnswer) -> list[str]:
    """Each answered clarifying question as a charter constraint."""
    return [f"Asked \"{q}\", the user answered: {' '.join(a.split())}"
            for q, a in zip(request.questions, answer.answers) if a.strip()]


# --- drivers: who answers ------------------------------------------------------------
def accept_all(request: PlanReviewRequest | ClarifyRequest) -> dict[str, Any]:
    """`--accept`: the plan as proposed, no clarifying question answered."""
    return {"accept": True}


def answer_file(path: Path) -> dict[str, Any]:
    """An answer file's JSON: one answer, or answers keyed by request kind
    ({"clarify": {...}, "plan_review": {...}}); a ReviewError in one line otherwise."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReviewError(f"cannot read the answer file {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReviewError(f"the answer file {path} is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ReviewError(f"the answer file {path} holds {type(value).__name__}, not a JSON object")
    return value


def answer_for(file_value: dict[str, Any], request: PlanReviewRequest | ClarifyRequest) -> dict[str, Any] | None:
    """What an answer file says to `request`: its entry for the request's kind, or the
    whole file when it is not keyed by kind; None when it holds only other kinds."""
    kinds = {"plan_review", "clarify"}
    if set(file_value) & kinds:
        entry = file_value.get(request.kind)
        return entry if isinstance(entry, dict) or entry is None else {"_": entry}
    return file_value


def same_request(a: PlanReviewRequest | ClarifyRequest, b: PlanReviewRequest | ClarifyRequest) -> bool:
    """The same question (a refusal's `error` aside)."""
    return a.model_dump(exclude={"error"}) == b.model_dump(exclude={"error"})


class GivenAnswer:
    """An answer given outside the run, to the request it was checked against (a served
    client's, `briefroom jobs answer`'s): it answers that request once and nothing else,
    so an answer kept for a question the run no longer asks leaves the run paused."""

    def __init__(self, request: PlanReviewRequest | ClarifyRequest, answer: dict[str, Any]):
        self.request, self.answer, self.used = request, answer, False

    def __call__(self, asked: PlanReviewRequest | ClarifyRequest) -> dict[str, Any] | None:
        if self.used or not same_request(asked, self.request):
            return None
        self.used = True
        return self.answer


class RecordedAnswers:
    """A replay answers its user's questions as the recording did, in order."""

    def __init__(self, answers: Sequence[dict[str, Any]]):
        self.answers = list(answers)
        self.used = 0

    def __call__(self, request: PlanReviewRequest | ClarifyRequest) -> dict[str, Any]:
        from briefroom.models.cassette import ReplayDivergence

        if self.used >= len(self.answers):
            raise ReplayDivergence(f"replay diverged: the run asked its user ({request.kind}) more often than "
                                   f"the recording answered ({len(self.answers)})")
        answer = self.answers[self.used]
        self.used += 1
        return answer


# --- recordings ----------------------------------------------------------------------
RECORDED_REVIEW_FILE = "review.json"


class RecordedReview(BaseModel):
    """What a recorded run asked its user, kept next to its cassette: its replay asks
    the same (the same prompts) and takes the same answers."""

    options: ReviewOptions
    answers: list[dict[str, Any]] = Field(default_factory=list)


def save_recorded_review(directory: Path, options: ReviewOptions, answers: Sequence[dict[str, Any]]) -> None:
    path = directory / RECORDED_REVIEW_FILE
    if not options.any:
        path.unlink(missing_ok=True)  # a re-recording without review leaves none behind
        return
    record = RecordedReview(options=options, answers=list(answers))
    path.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")


def load_recorded_review(directory: Path) -> RecordedReview | None:
    from briefroom.errors import ConfigError

    path = directory / RECORDED_REVIEW_FILE
    if not path.is_file():
        return None
    try:
        return RecordedReview.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise ConfigError(f"{path}: not a recorded review ({exc.errors()[0]['msg']})") from None


# --- a person at a terminal ------------------------------------------------------------
ReadLine: TypeAlias = Callable[[str], "str | None"]  # shows a prompt, returns a line (None: end of input)
HELP = ("commands: accept (or done) | edit ID TEXT | drop ID | add TEXT | note TEXT | show | help; "
        "end of input (Ctrl-D) leaves the run paused")


def prompt_answer(request: PlanReviewRequest | ClarifyRequest, read: ReadLine,
                  say: Callable[[str], None]) -> dict[str, Any] | None:
    """Ask a person at a terminal; None when they end the input (the run stays paused)."""
    if request.error:
        say(f"error: {request.error}")
    if isinstance(request, ClarifyRequest):
        return _prompt_clarify(request, read, say)
    return _prompt_plan(request, read, say)


def _prompt_clarify(request: ClarifyRequest, read: ReadLine, say: Callable[[str], None]) -> dict[str, Any] | None:
    say(f"Before planning, the Planner asks about: {request.goal}")
    say("(answer each in one line; an empty line leaves it unanswered)")
    answers = []
    for n, question in enumerate(request.questions, start=1):
        line = read(f"{n}. {question}\n> ")
        if line is None:
            return None
        answers.append(line.strip())
    return {"answers": answers}


def _prompt_plan(request: PlanReviewRequest, read: ReadLine, say: Callable[[str], None]) -> dict[str, Any] | None:
    draft: dict[str, Any] = {}
    _show_plan(request, draft, say)
    say(HELP)
    while True:
        line = read("review> ")
        if line is None:
            return None
        command, _, rest = line.strip().partition(" ")
        command, rest = command.lower(), rest.strip()
        if command in ("accept", "done"):
            return draft or {"accept": True}
        if command == "help":
            say(HELP)
            continue
        if command in ("show", ""):
            _show_plan(request, draft, say)
            continue
        try:
            candidate = _with_command(draft, command, rest)
            check_answer(candidate, request)
        except ReviewError as exc:
            say(f"error: {exc}")
            continue
        draft = candidate
        _show_plan(request, draft, say)


def _with_command(draft: dict[str, Any], command: str, rest: str) -> dict[str, Any]:
    """The draft answer with one terminal command applied (checked by the caller)."""
    if command == "edit":
        task_id, _, text = rest.partition(" ")
        if not task_id:
            raise ReviewError("edit needs a task id and the new text: edit t1.1 What ...?")
        return {**draft, "edit": {**draft.get("edit", {}), task_id: text.strip()}}
    if command == "drop":
        if not rest or " " in rest:
            raise ReviewError("drop takes one task id: drop t1.2")
        return {**draft, "drop": [*draft.get("drop", []), rest]}
    if command == "add":
        return {**draft, "add": [*draft.get("add", []), rest]}
    if command == "note":
        return {**draft, "note": rest}
    raise ReviewError(f"unknown command {command!r}; {HELP}")


def _show_plan(request: PlanReviewRequest, draft: dict[str, Any], say: Callable[[str], None]) -> None:
    say(f"The plan for: {request.goal}")
    tasks = reviewed_tasks(request.tasks, PlanAnswer.model_validate(draft), request.round)
    original = {t.task_id: t.question for t in request.tasks}
    for task in tasks:
        mark = "+" if task.task_id not in original else "*" if original[task.task_id] != task.question else " "
        say(f" {mark} {task.task_id}  {task.question}")
    for task_id in draft.get("drop", []):
        say(f" - {task_id}  (dropped) {original.get(task_id, '')}")
    if draft.get("note"):
        say(f"   note: {draft['note']}")

