"""ReportDraft (what the Writer produces) and its rendering to cited Markdown.

The Writer states claims, each with the source ids that back it; numbering the
citations and building the Sources list is bookkeeping, done here in code, so a
small model cannot get the numbering wrong.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from briefroom.records import SourceRecord

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
    sections: list[DraftSection] = Field(min_length=1, max_length=4)


class ReportDraft(WriterDraft):
    """The model's draft plus what the team adds in code: verbatim key figures."""

    key_figures: list[Claim] = Field(default_factory=list)

    def claims(self) -> list[Claim]:
        return [self.short_answer, *(c for s in self.sections for c in s.claims), *self.key_figures]


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

    lines = [f"# {draft.title.strip()}", "", f"## {lab['short_answer']}", "", cite(draft.short_answer), ""]
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
