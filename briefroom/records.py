"""The domain records a run is made of: charter, facts, sources, passages, the Writer's
report draft, reports and round summaries.

They are plain pydantic models with no dependency on LangGraph, immutable except the
report draft (code completes it in steps), so the protocol's payloads, the report,
memory and evaluation code can use them without the graph; `state/schema.py` arranges
them into the state LangGraph checkpoints.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

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
    max_revisions: int = Field(default=1, ge=0)
    # The report's language: set from the goal (`report.language.language_of`) unless the
    # user chose one; None only in a charter built by hand, read as the goal's language
    # (`report.language.charter_language`).
    language: Literal["en", "zh"] | None = None


class Worktable(BaseModel):
    """One role's private notebook: only its owner ever sees it."""

    model_config = ConfigDict(frozen=True)

    notes: tuple[str, ...] = ()

    def merged(self, update: "Worktable") -> "Worktable":
        return Worktable(notes=self.notes + update.notes)


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


# How a source id is written: "S" and eight hex digits of its path's hash. Tools check what a
# model sends against it; report code finds ids a model wrote into its sentences by it.
SOURCE_ID = r"S[0-9a-f]{8}"


class SourceRecord(BaseModel):
    """A document retrieved in this run, with the passages the team actually saw."""

    model_config = ConfigDict(frozen=True)

    source_id: str
    title: str
    path: str
    passages: tuple[Passage, ...] = ()


# The most sections the Writer's model drafts (its schema, in every recorded prompt, and
# what its output cap holds). A report holds up to MAX_PARTS sections, one per part of the
# question: a part past MAX_SECTIONS is answered by code's verified quotes alone. A
# question of more parts than that is answered for its first MAX_PARTS and the report
# names the parts it leaves out (`ReportDraft.omitted`).
MAX_SECTIONS = 4
MAX_PARTS = 6
# The most sentences the model may write in one section (a detailed report's paragraph).
MAX_SENTENCES = 8

class Claim(BaseModel):
    text: str = Field(min_length=3, description="one sentence; numbers exactly as in the sources",
                      json_schema_extra={"x-fill": "evidence.text", "maxLength": 400})
    # The schema asks models for at least one source (small models otherwise send empty
    # lists); validation accepts none, so an honest "no evidence" statement can be
    # represented, and the Critic's checks decide what an uncited claim may do.
    source_ids: list[str] = Field(max_length=3, description="ids of the sources backing it",
                                  json_schema_extra={"x-fill": "evidence.refs", "minItems": 1})


    # Who says it, shown after the citation when sources disagree (filled in code, never by a model).
    attribution: SkipJsonSchema[str | None] = None

    @field_validator("source_ids")
    @classmethod
    def _once_each(cls, ids: list[str]) -> list[str]:
        return list(dict.fromkeys(ids))  # small models repeat ids; a citation counts once


class DraftSection(BaseModel):
    heading: str = Field(min_length=2, description="a short heading, a whole phrase",
                         json_schema_extra={"x-fill": "heading", "maxLength": 120})
    # The sentences of the section's prose, in reading order (one paragraph).
    claims: list[Claim] = Field(min_length=1, max_length=MAX_SENTENCES)
    # Which part of the question the section answers (1, 2, ...); 0: by its position.
    # A report's section may answer part MAX_PARTS; the model is shown the bound of its own draft.
    part: int = Field(default=0, ge=0, le=MAX_PARTS, description="the number of the part of the question "
                      "this section answers", json_schema_extra={"x-fill": "part", "maximum": MAX_SECTIONS})


class WriterDraft(BaseModel):
    """What the Writer's model is asked for."""

    title: str = Field(min_length=3, json_schema_extra={"x-fill": "title", "maxLength": 120})
    short_answer: Claim
    # The executive summary: a few sentences a reader who stops here still takes away.
    summary: list[Claim] = Field(default_factory=list, max_length=4, json_schema_extra={"x-fill": "summary"})
    sections: list[DraftSection] = Field(min_length=1, max_length=MAX_SECTIONS)


class ReportDraft(WriterDraft):
    """The model's draft plus what the team adds in code: verbatim key figures, and the
    headings of the sections past MAX_PARTS that the report leaves out.

    Code builds a report's sections (one per part of the question) with
    `model_construct`, which skips validation; both ways of making a draft keep at most
    MAX_PARTS, so a question of many parts gets a report the run log can hold and
    that says what it did not cover, instead of a crash when the draft is logged."""

    sections: list[DraftSection] = Field(min_length=1, max_length=MAX_PARTS)
    # The report's summary may hold a sentence for each part after the short answer's
    # (`shape.summary_length`), more than the model is asked for.
    summary: list[Claim] = Field(default_factory=list, max_length=MAX_PARTS - 1)

    key_figures: list[Claim] = Field(default_factory=list)
    omitted: SkipJsonSchema[list[str]] = Field(default_factory=list)  # headings of the sections left out
    # The parts of the question nothing verified answers ("What the documents do not say").
    not_said: SkipJsonSchema[list[str]] = Field(default_factory=list)
    # Each source's kind and date as the Sources list shows them, by source id.
    source_labels: SkipJsonSchema[dict[str, str]] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _keep_section_limit(cls, data: Any) -> Any:
        return _within_section_limit(data) if isinstance(data, dict) else data

    def model_post_init(self, context: Any, /) -> None:
        # `model_construct` runs this hook but no validator: the outline's drafts pass here.
        if len(self.sections) > MAX_PARTS:
            kept = _within_section_limit({"sections": self.sections, "omitted": self.omitted})
            self.sections, self.omitted = kept["sections"], kept["omitted"]

    def claims(self) -> list[Claim]:
        return [self.short_answer, *self.summary, *(c for s in self.sections for c in s.claims), *self.key_figures]


def _within_section_limit(values: dict[str, Any]) -> dict[str, Any]:
    """`values` with the first MAX_PARTS sections; the headings of the rest join `omitted`."""
    sections = values.get("sections")
    if not isinstance(sections, list) or len(sections) <= MAX_PARTS:
        return values
    left_out = [_heading_of(s) for s in sections[MAX_PARTS:]]
    return {**values, "sections": sections[:MAX_PARTS], "omitted": [*values.get("omitted", []), *left_out]}


def _heading_of(section: DraftSection | dict[str, Any]) -> str:
    return str(section.get("heading", "") if isinstance(section, dict) else section.heading)



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
    """What a round established, in a form later prompts can carry cheaply: the
    structured summary of the design documents (goal, constraints, decisions, open
    questions, fact references, next action) besides the verified conclusions.

    Code fills what it knows exactly: goal and constraints (the charter), fact_refs
    (the round's facts, the lossless channel: the numbers stay there, verbatim),
    open_questions (the Critic's gaps and instructions no evidence answered) and
    agents_involved. The model writes only what needs judgement: conclusions (then
    verified against their sources), decisions, todos, risks and the next action."""

    model_config = ConfigDict(frozen=True)

    conclusions: tuple[SummaryPoint, ...] = Field(min_length=1, max_length=6)
    agents_involved: tuple[str, ...] = Field(min_length=1)
    todos: tuple[str, ...] = Field(default=(), max_length=4)
    risks: tuple[str, ...] = Field(default=(), max_length=4)
    goal: str = ""
    constraints: tuple[str, ...] = ()
    decisions: tuple[str, ...] = Field(default=(), max_length=4)
    open_questions: tuple[str, ...] = ()
    fact_refs: tuple[str, ...] = Field(default=(), description="ids of the round's facts (verbatim, in the facts "
                                                                 "channel)")
    next_action: str = ""
    tasks: tuple[str, ...] = Field(default=(), description="the round's tasks by lineage: 't0 > t1.2: question'")


class RoundRecord(BaseModel):
    """A round's summary and the raw messages it replaced (those stay in the archive)."""

    model_config = ConfigDict(frozen=True)

    round: int
    summary: RoundSummary
    replaced: tuple[str, ...] = ()

    def render(self) -> str:
        s = self.summary
        lines = [f"Round {self.round} (agents: {', '.join(s.agents_involved)})"]
        # goal and constraints stay in the record (the log, memory) but not in this text:
        # every prompt already opens with the charter that holds them
        lines += [f"Task {t}" for t in s.tasks]
        lines += [f"- {p.text}" + (f" [{', '.join(p.source_ids)}]" if p.source_ids else "") for p in s.conclusions]
        lines += [f"Decision: {d}" for d in s.decisions]
        lines += [f"Open question: {q}" for q in s.open_questions]
        if s.fact_refs:
            lines.append(f"Facts (verbatim in the facts section): {', '.join(s.fact_refs)}")
        lines += [f"Todo: {t}" for t in s.todos] + [f"Risk: {r}" for r in s.risks]
        if s.next_action:
            lines.append(f"Next: {s.next_action}")
        return "\n".join(lines)
