"""AgentState: the layered state of the meeting room, as LangGraph sees it.

Every field is a layer of the design guide. Values are the immutable records of
`briefroom/records.py`; fields that several nodes update carry a named reducer from
`reducers.py`.
"""

from __future__ import annotations

from typing import Annotated, TypedDict

from briefroom.protocol.messages import AgentMessage
from briefroom.records import Charter, Fact, Report, RoundRecord, SourceRecord, Worktable
from briefroom.state import reducers


class ReviewState(TypedDict, total=False):
    """What the run asks its user and what they said (`briefroom/review.py`). Plain
    JSON values: the Planner keeps here, between its model call and its question, what
    it will ask, because LangGraph runs an interrupted node again from its start."""

    plan: bool  # the first plan waits for the user's review
    clarify: bool  # the Planner may ask clarifying questions first
    questions: list[str]  # the clarifying questions, once the model wrote them
    clarified: bool  # their answers are in the charter (or there were none)
    proposed: list[dict]  # the plan waiting for review: per task, its question and envelope
    reviewed: bool  # the review is done; later rounds plan without asking
    answers: list[dict]  # every answer taken, in order (a recording keeps them for its replay)


class Ledger(TypedDict, total=False):
    """What the run did outside the state: what a node's update says the run had got to.
    The texts themselves live where they are kept (run.jsonl, the transcript file); the
    ledger holds how far each goes, so a resumed run cuts off what an interrupted node
    had added."""

    log_seq: int  # run-log lines written
    tokens_used: int  # prompt + completion tokens of every model call
    transcript: int  # raw tool outputs kept for the naive baseline
    model_calls: dict[str, int]  # replies per role (a replay's cassette is wound to them)


class AgentState(TypedDict, total=False):
    charter: Charter
    """Goal, acceptance criteria, constraints, max rounds. Set once, never trimmed; only
    the user's answers before the first search add constraints (`review.py`)."""

    worktables: Annotated[dict[str, Worktable], reducers.merge_worktables]
    """Per-role private notes and drafts; a role's prompt only ever includes its own."""

    whiteboard: Annotated[list[AgentMessage], reducers.append_messages]
    """Live structured messages; routed by the bus; expired at round end by TTL."""

    archive: Annotated[list[AgentMessage], reducers.append_messages]
    """Expired or superseded messages: kept for audit, never shown in a prompt."""

    seen: Annotated[dict[str, list[str]], reducers.merge_seen]
    """Per role, the message ids it has already acted on (its read cursor)."""

    summaries: Annotated[list[RoundRecord], reducers.append_records]
    """One RoundRecord per finished round that was followed by another."""

    facts: Annotated[list[Fact], reducers.merge_facts]
    """The lossless channel: verbatim numbers and quotes with source ids."""

    sources: Annotated[dict[str, SourceRecord], reducers.merge_sources]
    """Every source retrieved in this run, keyed by its stable id."""

    round: int
    """Current round, starting at 1."""

    report: Report | None
    """The latest report draft (accepted=True once the Critic let it ship)."""

    revisions: int
    """How many times the Critic has sent the report back this run."""

    done: bool
    """True once round control decides the run is over."""

    finishing: bool
    """Set when the run has used 85% of --max-tokens: only the Writer (and the Critic's
    deterministic report check) still act, then the run ends."""

    ledger: Annotated[Ledger, reducers.furthest_ledger]
    """The run's counters as of this checkpoint (`Ledger`): written by every node from
    the run's meter, read back by a resumed run, which starts from these numbers."""

    instance: dict
    """Only in the input of one instance of a fan-out role (`graph/builder.py`): its
    number and the id of the one message it handles. Never written to the state."""

    review: ReviewState
    """Only in runs that ask their user (`--review-plan`, `--clarify`): see ReviewState."""

    memory_used: Annotated[dict[str, list[str]], reducers.merge_memory_used]
    """Per role, the long-term memory items (store ids) it used at a decision point: the
    Critic backing a conclusion, the Writer filling a part of the question. That role's
    later prompts leave them out (`memory/reading.py`, `unused_facts`)."""
