"""Plan review and clarifying questions for served runs (`context={"review_plan": true}`,
`{"clarify": true}`).

A served run's research graph checkpoints on a thread of its own (its run directory, or
the database), not on the server's, so its pause (`review.py`: the Planner's `interrupt`)
ends `execute_run` with a `paused` result and the request. The served graph then pauses
in the server's thread: its `review` node calls LangGraph's `interrupt()` with the
request, which the client sees as the thread's interrupt (`__interrupt__` in a stream),
and goes on when the client sends `Command(resume=answer)`, the answer schema the CLI
reads from a terminal or `--answer FILE.json`. The answer is checked against the request
here (`review.ask_user`): one that does not fit is refused by asking again, the interrupt
carrying the reason in `error`. The `research` node then resumes the run from its own
checkpoint with that answer (`review.GivenAnswer`), and the run's Planner checks it once
more: a client that rewrote the thread's state (the server's API lets it) can neither
skip the check nor answer a question the run does not ask.

Served state the client never sends as input (`ResearchInput` leaves these out):
`waiting` (the request, JSON), `served_run` (the run directory's name, looked up under
the server's runs folder like a served `resume`) and `answer` (the checked answer, sent
to the research node with `Send`, so a failed resume leaves none in the thread).
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.types import Command, Send, interrupt
from pydantic import ValidationError

from briefroom.errors import ConfigError
from briefroom.review import ClarifyRequest, GivenAnswer, PlanReviewRequest, ask_user, parse_request

REVIEW_NODE = "review"
RESEARCH_NODE = "research"


class ReviewFields(TypedDict, total=False):
    waiting: dict[str, Any] | None  # the request a paused run waits on (PlanReviewRequest | ClarifyRequest)
    served_run: str | None  # the paused run's directory name, under the server's runs folder
    answer: dict[str, Any] | None  # the client's answer, checked against `waiting` (only in `review`'s Send)


def waiting_request(state: ReviewFields) -> PlanReviewRequest | ClarifyRequest:
    """The request in the served state, or a ConfigError (a thread's state is the client's to rewrite)."""
    try:
        return parse_request(state.get("waiting"))
    except ValidationError:
        raise ConfigError("this thread holds no question of a paused run") from None


def review(state: ReviewFields) -> Command:
    """Pause the served graph until the client answers the run's question; an answer
    that does not fit is asked again with the reason (LangGraph reruns this node from
    its start on every resume and hands each `interrupt()` its answer in order).

    The answer goes to the research node in the message that starts it (`Send`), not
    into the thread's state: if resuming the run fails, the thread keeps no answer that
    would turn the client's next run on it into this run's continuation."""
    request = waiting_request(state)
    answer = ask_user(request, interrupt)
    given = answer.model_dump(mode="json", exclude_defaults=True)
    return Command(goto=Send(RESEARCH_NODE, {**state, "answer": given}))


def given_answer(state: ReviewFields) -> GivenAnswer | None:
    """What the research node resumes its run with: the checked answer to the request it waits on."""
    answer = state.get("answer")
    if answer is None or not state.get("served_run"):
        return None
    return GivenAnswer(waiting_request(state), answer)


def paused_at(request: PlanReviewRequest | ClarifyRequest, run_name: str) -> ReviewFields:
    return ReviewFields(waiting=request.model_dump(mode="json"), served_run=run_name, answer=None)


def answered() -> ReviewFields:
    """A run that went on: nothing waits."""
    return ReviewFields(waiting=None, answer=None)


def next_after_research(state: ReviewFields) -> str:
    return REVIEW_NODE if state.get("waiting") else "__end__"
