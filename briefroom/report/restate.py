"""The quotes a report stands on, restated in the model's words and checked to say the same.

Code quotes a source sentence wherever the model's prose lacked the answer or failed its
checks twice, so a small model's report reads as a collage of quotes. With `--quotes
restate` the Writer's model is given those quotes once more, with a narrower task than
writing a section: report this one sentence as an analyst would, naming its source
(whose kind and title are shown, and no other), in your own words. A rewrite replaces its
quote only when code finds it says the same (`differs`): the same figures with their
units and scales, no figure left out, the same years, a forecast still a forecast, the
same measure (sold stays sold), a sentence, neither the quote nor a part of it copied,
and no kind of source named that the quote and its source do not name; then the same
checks and support judgement as any sentence of the model's (`verify.failures`).
Anything else keeps the quote. Qwen2.5-Coder-1.5B copies the quotes back (BENCHMARKS.md):
with it the pass changes nothing; it is there for a model that can restate.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import BaseModel, Field

from briefroom.protocol.extraction import folded
from briefroom.records import Claim, ReportDraft
from briefroom.report.asking import YEAR, is_statement, measures_in, projected
from briefroom.report.checks import readings_in, unsupported_numbers
from briefroom.report.draft import bare_text

# The most quotes one call restates: its prompt and reply stay bounded however long the report.
MAX_RESTATED = 12
_QUOTE_MARKS = ("“", "”")


class Restatement(BaseModel):
    sentence_id: str = Field(json_schema_extra={"x-fill": "distinct"})
    text: str = Field(min_length=3, max_length=400, description="the quote said again in your own words",
                      json_schema_extra={"maxLength": 300})


class Restatements(BaseModel):
    """The model's rewrite of each quote it was shown."""

    rewrites: list[Restatement] = Field(min_length=1)


def is_quote(claim: Claim) -> bool:
    """A source sentence code quoted (“…”), cited."""
    text = claim.text.strip()
    return bool(claim.source_ids) and text.startswith(_QUOTE_MARKS[0]) and text.endswith(_QUOTE_MARKS[1])


def quoted_sources(report: ReportDraft) -> dict[str, list[str]]:
    """Each quote of the report, unquoted, with the sources its first citation names."""
    cited: dict[str, list[str]] = {}
    for c in [report.short_answer, *report.summary, *(c for s in report.sections for c in s.claims)]:
        if is_quote(c):
            cited.setdefault(bare_text(c.text), list(c.source_ids))
    return cited


def quotes_of(report: ReportDraft) -> list[str]:
    """The report's quoted sentences, unquoted, each once, in reading order (short answer,
    summary, sections), at most `MAX_RESTATED`."""
    return list(quoted_sources(report))[:MAX_RESTATED]


def _normal(text: str) -> str:
    return folded(text).strip(" .。")


# Words that name who says something. A rewrite naming a kind of source that neither its
# quote nor its source's kind and title name puts the figure in another's mouth: the 1.5B
# began an analyst's sentence with "According to the newswire" (the prompt's example then).
_WHO_WORDS = re.compile(r"\b(?:news(?:wire|paper)?|press|registry|register|survey|statistics|statistical|census|"
                        r"analysts?|brief|blog(?:ger)?|opinion|association|council|ministry|bureau|agency|office|"
                        r"institute|forum|company|operator|manufacturers?|government|report)\b|"
                        r"统计局|公报|登记|协会|研究院|研究机构|博客|新闻|报道|公司|政府", re.I)


def names_another_source(rewrite: str, quote: str, source: str) -> str | None:
    """A word naming a kind of source that the rewrite gives and neither the quote nor
    `source` (its kind and title, as the model was shown them) does; None when none."""
    known = f"{quote} {source}".lower()
    return next((m.group(0) for m in _WHO_WORDS.finditer(rewrite) if m.group(0).lower() not in known), None)


def differs(rewrite: str, quote: str, source: str = "") -> str | None:
    """Why the rewrite does not say what the quote says, in a line; None when it does.
    `source`: the quote's source as the model was shown it (its kind and title). A
    rewrite holding the whole quote ("According to the newswire, a research firm raised
    …") is the quote without its quotation marks: the quote stays, marked as one."""
    if not rewrite.strip() or _normal(rewrite) == _normal(quote):
        return "no rewrite"
    if _normal(quote) in _normal(rewrite):
        return "the quote copied whole"
    if _normal(rewrite) in _normal(quote):
        return "a part of the quote copied"  # "About 0.46 million …" for "First, about 0.46 million …"
    if not is_statement(rewrite):
        return "not a sentence"
    if set(YEAR.findall(rewrite)) != set(YEAR.findall(quote)):
        return "other years than the quote's"
    if unsupported_numbers(rewrite, readings_in(quote)):
        return "a figure the quote does not give"
    if unsupported_numbers(quote, readings_in(rewrite)):
        return "a figure of the quote left out"
    if projected(rewrite) != projected(quote):
        return "a forecast or estimate stated otherwise"
    if measures_in(rewrite) != measures_in(quote):
        return "another measure than the quote's"
    other = names_another_source(rewrite, quote, source)
    if other is not None:
        return f"a source the quote's is not ({other!r})"
    return None


Failures = Callable[[list[Claim]], dict[int, str]]  # sentences -> {index: why it fails}


def restated(report: ReportDraft, rewrites: dict[str, str], check: Failures,
             shown: dict[str, str] | None = None) -> tuple[ReportDraft, dict[str, str]]:
    """`report` with each quote whose rewrite says the same (`differs`) and passes `check`
    (a sentence's code checks and support judgement, against the quote's sources) in the
    rewrite's place, its citation and attribution kept. `shown`: each quote's source as
    the model was shown it. Returns the report and why each rewrite that was not taken
    failed, by quote."""
    cited = quoted_sources(report)
    refused: dict[str, str] = {}
    candidates: list[tuple[str, Claim]] = []
    for quote, rewrite in rewrites.items():
        if quote not in cited:
            continue
        why = differs(rewrite, quote, (shown or {}).get(quote, ""))
        if why is not None:
            refused[quote] = why
        else:
            candidates.append((quote, Claim.model_construct(text=rewrite.strip(), source_ids=cited[quote],
                                                            attribution=None)))
    failed = check([c for _, c in candidates]) if candidates else {}
    taken: dict[str, str] = {}
    for n, (quote, claim) in enumerate(candidates):
        if n in failed:
            refused[quote] = failed[n]
        else:
            taken[quote] = claim.text

    def swap(claim: Claim) -> Claim:
        if not is_quote(claim) or bare_text(claim.text) not in taken:
            return claim
        return claim.model_copy(update={"text": taken[bare_text(claim.text)]})

    sections = [s.model_copy(update={"claims": [swap(c) for c in s.claims]}) for s in report.sections]
    return report.model_copy(update={"short_answer": swap(report.short_answer),
                                     "summary": [swap(c) for c in report.summary], "sections": sections}), refused
