"""Who answers a run's questions for its user (plan review, clarifying questions): an
answer file, --accept, or the person at the terminal."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from briefroom.cli.common import _fail, err

if TYPE_CHECKING:
    from briefroom.review import ClarifyRequest, PlanReviewRequest
    from briefroom.run import RunResult

    UserRequest = PlanReviewRequest | ClarifyRequest


ReviewPlan = Annotated[bool, typer.Option("--review-plan", help="show the plan (its sub-questions) before any "
                                          "search and take accept, edit, add, drop or a note; without a "
                                          "terminal, answer with `briefroom resume RUN --answer FILE.json`")]
Clarify = Annotated[bool, typer.Option("--clarify", help="let the Planner first ask up to 3 short questions when "
                                       "the question is ambiguous; the answers become constraints")]
AnswerFile = Annotated[Optional[Path], typer.Option("--answer", metavar="FILE.json", help="the answer to a run's "
                                                    "plan review or clarifying questions, as JSON (instead of "
                                                    "asking at the terminal)")]


class _Reviewer:
    """Answers a run's questions for its user (`briefroom/review.py`): from --accept,
    an answer file, or the person at the terminal. When it cannot, `problem` says why
    and the run stays paused at the question, resumable."""

    def __init__(self, answers: dict | None, source: Path | None, accept: bool, interactive: bool):
        self.answers, self.source, self.accept, self.interactive = answers, source, accept, interactive
        self.problem: str | None = None
        self.bad_input = False  # the answer given was refused: exit 2, like a bad flag
        self._file_used = False

    def __call__(self, request: UserRequest) -> dict | None:
        from briefroom.review import accept_all, prompt_answer

        if self.accept:
            return accept_all(request)
        if self.answers is not None:
            return self._from_file(request, self.answers)
        if not self.interactive:
            self.problem = f"the run waits for its {_asked(request)} and stdin is not a terminal"
            return None
        answer = prompt_answer(request, _read_line, lambda line: err.print(line, markup=False, highlight=False))
        if answer is None:
            self.problem = f"no answer to the {_asked(request)} (end of input)"
        return answer

    def _from_file(self, request: UserRequest, answers: dict) -> dict | None:
        from briefroom.review import ReviewError, answer_for, check_answer

        entry = None if self._file_used else answer_for(answers, request)
        if entry is None:
            self.problem = f"{self.source} holds no answer to the {_asked(request)}"
            return None
        try:
            check_answer(entry, request)
        except ReviewError as exc:
            self.problem, self.bad_input = f"{self.source}: {exc}", True
            return None
        if not ({"plan_review", "clarify"} & set(answers)):
            self._file_used = True  # one answer, not keyed by kind, answers the first question only
        return entry


def _asked(request: UserRequest) -> str:
    return "plan review" if request.kind == "plan_review" else "answers to clarifying questions"


def _read_line(prompt: str) -> str | None:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else None


def _reviewer(answer: Path | None, accept: bool) -> _Reviewer:
    """Who answers this run's questions; an unreadable answer file stops before the run."""
    from briefroom.review import ReviewError, answer_file

    try:
        answers = answer_file(answer) if answer is not None else None
    except ReviewError as exc:
        raise _fail(str(exc), 2) from None
    return _Reviewer(answers, answer, accept, interactive=sys.stdin.isatty())


def _still_waiting(result: RunResult, reviewer: _Reviewer) -> None:
    """A run left paused at a question: one line saying why and how to answer, exit 1
    (2 when the answer given was refused)."""
    from briefroom import runs

    if result.status != "paused" or result.waiting_for is None:
        return
    why = reviewer.problem or f"the run waits for its {_asked(result.waiting_for)}"
    raise _fail(f"{why}; the run is paused there. Answer with: {runs.resume_command(result.run_dir)} "
                "--answer FILE.json (or --accept, or at a terminal)", 2 if reviewer.bad_input else 1)
