"""Rendering the Writer's draft (`records.ReportDraft`) to cited Markdown.

The Writer states claims, each with the source ids that back it; numbering the
citations and building the Sources list is bookkeeping, done here in code, so a
small model cannot get the numbering wrong.
"""

from __future__ import annotations

import re

from briefroom.records import MAX_PARTS, SOURCE_ID, Claim, ReportDraft, SourceRecord

# "- “quote” [2] — *Who says it*": the attribution after a citation is a label, not a claim.
_ATTRIBUTION = re.compile(r"(\]\s*)\s—\s\*[^*]+\*\s*$")


def strip_attribution(line: str) -> str:
    return _ATTRIBUTION.sub(r"\1", line)


# Said under the title when parts of the question were left out (code's words, in the
# question's language like the other headings code writes).
_OMITTED_NOTE = {
    "en": "This report answers the first {kept} parts of the question (a report has at most {kept} sections); "
          "not covered here: {parts}.",
    "zh": "本报告只回答问题的前 {kept} 个部分（一份报告最多 {kept} 节）；未涉及：{parts}。",
}


# A source id a model wrote into its sentence ("…约6.6万人。 [S856ea263]", "(source S856ea263)"):
# the citation is code's, numbered; the id is markup, not words for a reader.
_WRITTEN_ID = re.compile(rf"\s*[\[(](?:source\s*)?`?({SOURCE_ID})`?[\])]")


def without_written_ids(text: str, known: set[str]) -> str:
    """The sentence without the ids of known sources written into it."""
    return _WRITTEN_ID.sub(lambda m: "" if m.group(1) in known else m.group(0), text).strip()


def bare_text(text: str) -> str:
    """A sentence without the quotation marks a quote of it carries: one key for both."""
    return text.strip().strip("“”\"")


def render_markdown(draft: ReportDraft, sources: dict[str, SourceRecord], footer: str = "",
                    language: str = "en") -> tuple[str, list[str]]:
    """Markdown with [n] citations numbered by first use; returns (markdown, ids by n).
    Headings code writes are in `language` (the question's).

    Prose is written one sentence to a line: Markdown joins the lines of a paragraph, and
    every check that reads report.md back (the Critic's, the evaluation's) sees each
    sentence on its own line with its own citations. A sentence with an attribution
    (figures that differ, side by side with who says them) is a bullet."""
    from briefroom.report.language import LABELS

    lab = LABELS[language]
    order: list[str] = []

    def cite(claim: Claim) -> str:
        marks = []
        for sid in dict.fromkeys(claim.source_ids):
            if sid not in order:
                order.append(sid)
            marks.append(f"[{order.index(sid) + 1}]")
        text = without_written_ids(claim.text, set(sources))
        cited = f"{text} {''.join(marks)}" if marks else text
        return f"{cited} — *{claim.attribution}*" if claim.attribution and marks else cited

    def prose(claims: list[Claim]) -> list[str]:
        lines: list[str] = []
        for claim in claims:
            bullet = bool(claim.attribution and claim.source_ids)
            if lines and (bullet != lines[-1].startswith("- ")):
                lines.append("")  # a list and a paragraph are separate blocks
            lines.append(f"- {cite(claim)}" if bullet else cite(claim))
        return lines

    lines = [f"# {draft.title.strip()}", ""]
    if draft.omitted:
        note = _OMITTED_NOTE.get(language, _OMITTED_NOTE["en"])
        lines += [f"*{note.format(kept=MAX_PARTS, parts='; '.join(draft.omitted))}*", ""]
    lines += [f"## {lab['short_answer']}", "", cite(draft.short_answer), ""]
    # The short answer may repeat a section's lead figure: the section still opens with it.
    written: dict[str, str] = {}  # a section's sentence -> the heading it was written under
    summary = [c for c in draft.summary if c.text.strip() and bare_text(c.text) != bare_text(draft.short_answer.text)]
    if summary:
        lines += [f"## {lab['summary']}", "", *prose(summary), ""]
    for section in draft.sections:
        # Models repeat themselves; a claim already made is not made again.
        above = dict.fromkeys(written[bare_text(c.text)] for c in section.claims if bare_text(c.text) in written)
        pointer = lab["see_above"].format(headings=lab["and"].join(f"“{heading}”" for heading in above))
        fresh = []
        for claim in section.claims:
            if bare_text(claim.text) not in written:  # a quote of a sentence the model wrote is that sentence
                written[bare_text(claim.text)] = section.heading.strip()
                fresh.append(claim)
        if fresh:
            # its answer (the first sentence) was written under an earlier part: the reader is
            # pointed to it before what this section adds
            first_above = bool(above) and section.claims[0] not in fresh
            lines += [f"## {section.heading.strip()}", "", *([pointer, ""] if first_above else []), *prose(fresh), ""]
        elif section.claims:  # its answer was written under an earlier part: the part still has its section
            lines += [f"## {section.heading.strip()}", "", pointer, ""]
    written[bare_text(draft.short_answer.text)] = ""
    figures = [c for c in draft.key_figures if bare_text(c.text) not in written]
    if figures:
        lines += [f"## {lab['key_figures']}", ""]
        lines += [f"- {cite(claim)}" for claim in figures]
        lines.append("")
    if draft.not_said:
        lines += [f"## {lab['not_said_heading']}", ""]
        lines += [f"- {part}" for part in draft.not_said]
        lines.append("")
    lines += [f"## {lab['sources']}", ""]
    for n, sid in enumerate(order, start=1):
        record = sources.get(sid)
        kind = f" — {draft.source_labels[sid]}" if sid in draft.source_labels else ""
        if record is None:
            lines.append(f"[{n}] (unknown source) `{sid}`")
        else:
            lines.append(f"[{n}] {record.title}{kind} — `{record.path}` (source `{sid}`)")
    if footer:
        lines += ["", "---", "", footer]
    return "\n".join(lines).rstrip() + "\n", order
