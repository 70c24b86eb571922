"""ReportDraft (what the Writer produces) and its rendering to cited Markdown.

The Writer states claims, each with the source ids that back it; numbering the
citations and building the Sources list is bookkeeping, done here in code, so a
small model cannot get the numbering wrong.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from briefroom.records import SourceRecord

# The most sections a report has, one per part of the question: what the Writer's model
# may write (its schema, in every recorded prompt) and what a draft the run logs may
# hold are this one limit. A question of more parts is answered for its first
# MAX_SECTIONS and the report names the parts it leaves out (`ReportDraft.omitted`).
MAX_SECTIONS = 4

# "- “quote” [2] — *Who says it*": the attribution after a citation is a label, not a claim.
_ATTRIBUTION = re.compile(r"(\]\s*)\s—\s\*[^*]+\*\s*$")


def strip_attribution(line: str) -> str:
    return _ATTRIBUTION.sub(r"\1", line)


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
    heading: str = Field(min_length=2, json_schema_extra={"x-fill": "heading", "maxLength": 120})
    claims: list[Claim] = Field(min_length=1, max_length=6)


class WriterDraft(BaseModel):
    """What the Writer's model is asked for."""

    title: str = Field(min_length=3, json_schema_extra={"x-fill": "title", "maxLength": 120})
    short_answer: Claim
    sections: list[DraftSection] = Field(min_length=1, max_length=MAX_SECTIONS)


class ReportDraft(WriterDraft):
    """The model's draft plus what the team adds in code: verbatim key figures, and the
    headings of the sections past MAX_SECTIONS that the report leaves out.

    Code builds a report's sections (one per part of the question) with
    `model_construct`, which skips validation; both ways of making a draft keep at most
    MAX_SECTIONS, so a question of many parts gets a report the run log can hold and
    that says what it did not cover, instead of a crash when the draft is logged."""

    key_figures: list[Claim] = Field(default_factory=list)
    omitted: SkipJsonSchema[list[str]] = Field(default_factory=list)  # headings of the sections left out

    @model_validator(mode="before")
    @classmethod
    def _keep_section_limit(cls, data: Any) -> Any:
        return _within_section_limit(data) if isinstance(data, dict) else data

    def model_post_init(self, context: Any, /) -> None:
        # `model_construct` runs this hook but no validator: the outline's drafts pass here.
        if len(self.sections) > MAX_SECTIONS:
            kept = _within_section_limit({"sections": self.sections, "omitted": self.omitted})
            self.sections, self.omitted = kept["sections"], kept["omitted"]

    def claims(self) -> list[Claim]:
        return [self.short_answer, *(c for s in self.sections for c in s.claims), *self.key_figures]


def _within_section_limit(values: dict[str, Any]) -> dict[str, Any]:
    """`values` with the first MAX_SECTIONS sections; the headings of the rest join `omitted`."""
    sections = values.get("sections")
    if not isinstance(sections, list) or len(sections) <= MAX_SECTIONS:
        return values
    left_out = [_heading_of(s) for s in sections[MAX_SECTIONS:]]
    return {**values, "sections": sections[:MAX_SECTIONS], "omitted": [*values.get("omitted", []), *left_out]}


def _heading_of(section: DraftSection | dict[str, Any]) -> str:
    return str(section.get("heading", "") if isinstance(section, dict) else section.heading)


# Said under the title when parts of the question were left out (code's words, in the
# question's language like the other headings code writes).
_OMITTED_NOTE = {
    "en": "This report answers the first {kept} parts of the question (a report has at most {kept} sections); "
          "not covered here: {parts}.",
    "zh": "本报告只回答问题的前 {kept} 个部分（一份报告最多 {kept} 节）；未涉及：{parts}。",
}


def _bare(text: str) -> str:
    return text.strip().strip("“”\"")


def render_markdown(draft: ReportDraft, sources: dict[str, SourceRecord], footer: str = "",
                    language: str = "en") -> tuple[str, list[str]]:
    """Markdown with [n] citations numbered by first use; returns (markdown, ids by n).
    Headings code writes are in `language` (the question's)."""
    from briefroom.report.language import LABELS

    lab = LABELS[language]
    order: list[str] = []

    def cite(claim: Claim) -> str:
        marks = []
        for sid in dict.fromkeys(claim.source_ids):
            if sid not in order:
                order.append(sid)
            marks.append(f"[{order.index(sid) + 1}]")
        text = claim.text.strip()
        cited = f"{text} {''.join(marks)}" if marks else text
        return f"{cited} — *{claim.attribution}*" if claim.attribution and marks else cited

    lines = [f"# {draft.title.strip()}", ""]
    if draft.omitted:
        note = _OMITTED_NOTE.get(language, _OMITTED_NOTE["en"])
        lines += [f"*{note.format(kept=MAX_SECTIONS, parts='; '.join(draft.omitted))}*", ""]
    lines += [f"## {lab['short_answer']}", "", cite(draft.short_answer), ""]
    # The short answer may repeat a section's lead figure: the section still opens with it.
    written: set[str] = set()
    for section in draft.sections:
        # Models repeat themselves; a claim already made is not made again.
        fresh = []
        for claim in section.claims:
            if claim.text.strip() not in written:
                written.add(claim.text.strip())
                fresh.append(claim)
        if not fresh:
            continue
        lines += [f"## {section.heading.strip()}", ""]
        lines += [f"- {cite(claim)}" for claim in fresh]
        lines.append("")
    written.add(draft.short_answer.text.strip())
    figures = [c for c in draft.key_figures if _bare(c.text) not in {_bare(w) for w in written}]
    if figures:
        lines += [f"## {lab['key_figures']}", ""]
        lines += [f"- {cite(claim)}" for claim in figures]
        lines.append("")
    lines += [f"## {lab['sources']}", ""]
    for n, sid in enumerate(order, start=1):
        record = sources.get(sid)
        if record is None:
            lines.append(f"[{n}] (unknown source) `{sid}`")
        else:
            lines.append(f"[{n}] {record.title} — `{record.path}` (source `{sid}`)")
    if footer:
        lines += ["", "---", "", footer]
    return "\n".join(lines).rstrip() + "\n", order
