"""AgentState: the layered state of the meeting room, as LangGraph sees it.

Every field is a layer of the design guide. Values are immutable pydantic models;
fields that several nodes update carry a named reducer from `reducers.py`.
"""

from __future__ import annotations

from typing import Annotated, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from briefroom.graph import reducers
from briefroom.protocol.messages import AgentMessage

# The criteria every run starts with; the Critic checks these three in code.
DEFAULT_CRITERIA = (
    "Every [n] citation resolves to a source retrieved in this run.",
    "Every number in a cited sentence appears in one of its cited sources.",
    "The report opens with a short answer to the question, with a citation.",
)


class Charter(BaseModel):
    """The team's constitution: every prompt starts with it; it is never trimmed (P0)."""

    model_config = ConfigDict(frozen=True)

    goal: str
    acceptance_criteria: tuple[str, ...]
    constraints: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    max_rounds: int = Field(default=3, ge=1)
    max_revisions: int = Field(default=2, ge=0)


class Worktable(BaseModel):
    """One role's private notebook: only its owner ever sees it."""

    model_config = ConfigDict(frozen=True)

    notes: tuple[str, ...] = ()
    todo: tuple[str, ...] = ()
    draft: str | None = None

    def merged(self, update: "Worktable") -> "Worktable":
        return Worktable(
            notes=self.notes + update.notes,
            todo=update.todo or self.todo,
            draft=update.draft if update.draft is not None else self.draft,
        )


class Fact(BaseModel):
    """A verbatim sentence carrying numbers or a quote, with the source it came from."""

    model_config = ConfigDict(frozen=True)

    fact_id: str
    text: str = Field(description="verbatim from the source, never paraphrased")
    numbers: tuple[str, ...] = ()
    source_id: str
    found_by: str
    round: int
    confirmed_by: tuple[str, ...] = ()


class Passage(BaseModel):
    model_config = ConfigDict(frozen=True)

    chunk_id: str
    start: int
    end: int
    text: str


class SourceRecord(BaseModel):
    """A document retrieved in this run, with the passages the team actually saw."""

    model_config = ConfigDict(frozen=True)

    source_id: str
    title: str
    path: str
    passages: tuple[Passage, ...] = ()


class Report(BaseModel):
    model_config = ConfigDict(frozen=True)

    markdown: str
    cited_sources: tuple[str, ...] = Field(default=(), description="source id for [1], [2], ...")
    round: int = 1
    revision: int = 0
    accepted: bool = False
    repairs: tuple[str, ...] = ()


class SummaryPoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str = Field(min_length=5, description="one conclusion of the round, numbers exactly as in the sources",
                      json_schema_extra={"x-fill": "evidence.text"})
    source_ids: tuple[str, ...] = Field(default=(), max_length=3, json_schema_extra={"x-fill": "evidence.refs"})


class RoundSummary(BaseModel):
    """What a round established, in a form later prompts can carry cheaply."""

    model_config = ConfigDict(frozen=True)

    conclusions: tuple[SummaryPoint, ...] = Field(min_length=1, max_length=6)
    agents_involved: tuple[str, ...] = Field(min_length=1)
    todos: tuple[str, ...] = Field(default=(), max_length=4)
    risks: tuple[str, ...] = Field(default=(), max_length=4)


class RoundRecord(BaseModel):
    """A round's summary and the raw messages it replaced (those stay in the archive)."""

    model_config = ConfigDict(frozen=True)

    round: int
    summary: RoundSummary
    replaced: tuple[str, ...] = ()

    def render(self) -> str:
        s = self.summary
        lines = [f"Round {self.round} (agents: {', '.join(s.agents_involved)})"]
        lines += [f"- {p.text}" + (f" [{', '.join(p.source_ids)}]" if p.source_ids else "") for p in s.conclusions]
        lines += [f"Todo: {t}" for t in s.todos] + [f"Risk: {r}" for r in s.risks]
        return "\n".join(lines)


class AgentState(TypedDict, total=False):
    charter: Charter
    """Goal, acceptance criteria, constraints, max rounds. Set once; never trimmed."""

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

    speaker: str
    """The role that spoke last (routing resumes after it)."""

    done: bool
    """True once round control decides the run is over."""

    finishing: bool
    """Set when the run has used 85% of --max-tokens: only the Writer (and the Critic's
    deterministic report check) still act, then the run ends."""

    ledger: dict
    """What the run did outside the state, as of this checkpoint: run-log lines written,
    tokens used, model replies per role. A resumed run starts from these numbers."""
