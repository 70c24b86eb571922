"""The report's shape, decided in code: a section per part of the question.

Each section opens with the best verified figure(s) for its part: verbatim sentences
from retrieved sources, ranked by how much of the part (and of the question) they
say. Where two sources give different figures for the same thing, both stand side by
side with who says them. A part nothing retrieved speaks to says "the documents do not
say" instead of a guess. The model's own sentences follow, in the section whose part
they speak to. Key figures keep only facts relevant to the question.
"""

from __future__ import annotations

import re

from briefroom.graph.state import Fact
from briefroom.protocol.summarizer import content_words, numbers_in, relevance
from briefroom.report.draft import Claim, DraftSection, ReportDraft, WriterDraft
from briefroom.report.language import heading_for, labels, question_parts

# A fact must hold this share of its part's (and question's) words to answer the part.
ANSWERS_PART = 0.4
# Facts scoring within this share of the best one are rivals: shown side by side.
RIVAL_SHARE = 0.85
MAX_LEADS = 2
MAX_KEY_FIGURES = 6
# Years in a part pick the facts of that year over those of another.
_YEAR = re.compile(r"(?<!\d)(?:19|20)\d{2}(?!\d)")


def part_score(text: str, part: str, question: str) -> float:
    """How well `text` answers `part` of `question` (0..1+): the part's own words count
    most, the question's give a part like "by how much" its subject, a matching year helps."""
    own = content_words(part)
    score = (0.7 * relevance(text, part) + 0.3 * relevance(text, question)) if own else relevance(text, question)
    found = set(_YEAR.findall(text))
    if set(_YEAR.findall(part)) & found:
        score += 0.15
    elif set(_YEAR.findall(question)) & found:
        score += 0.05  # the question's year, for a part that names none: a weaker hint
    return score


def _leads(facts: list[Fact], part: str, question: str) -> list[Fact]:
    """The best verified figure(s) for a part: the top fact, and any rival from another
    source that scores nearly as well but gives other numbers."""
    scored = sorted(((part_score(f.text, part, question) + (0.05 if f.confirmed_by else 0.0), n, f)
                     for n, f in enumerate(facts)), key=lambda t: (-t[0], t[1]))
    if not scored or scored[0][0] < ANSWERS_PART:
        return []
    best_score, _, best = scored[0]
    leads = [best]
    for score, _, fact in scored[1:]:
        if len(leads) >= MAX_LEADS or score < max(ANSWERS_PART, RIVAL_SHARE * best_score):
            break
        if fact.source_id != best.source_id and set(fact.numbers) != set(best.numbers):
            leads.append(fact)
    return leads


def _quote(fact: Fact, attribution: str | None = None) -> Claim:
    return Claim(text=f"“{fact.text}”", source_ids=[fact.source_id], attribution=attribution)


def _is_title(text: str) -> bool:
    """A title names a subject; a sentence with figures is a claim, not a title."""
    words = text.split()
    return 2 <= len(words) <= 16 and not text.rstrip().endswith((".", "。")) and not [
        n for n in numbers_in(text) if not _YEAR.fullmatch(n)] and len(text) <= 120


def outline(draft: WriterDraft, facts: list[Fact], question: str,
            titles: dict[str, str] | None = None) -> ReportDraft:
    """Rebuild the model's draft around the question's parts (see the module docstring)."""
    lab = labels(question)
    titles = titles or {}
    parts = question_parts(question)
    model_claims = [c for s in draft.sections for c in s.claims]
    used: set[str] = set()
    sections: list[DraftSection] = []
    for part in parts:
        leads = _leads(facts, part, question)
        claims: list[Claim] = []
        if not leads:
            claims.append(Claim.model_construct(text=lab["not_said"], source_ids=[]))
        elif len(leads) > 1:
            claims.append(Claim.model_construct(text=lab["sources_differ"], source_ids=[]))
            claims += [_quote(f, titles.get(f.source_id)) for f in leads]
        else:
            claims.append(_quote(leads[0]))
        used.update(f.text for f in leads)
        if leads:  # the model's sentences that speak to this part, best first
            mine = sorted((c for c in model_claims if c.text not in used
                           and part_score(c.text, part, question) >= ANSWERS_PART),
                          key=lambda c: -part_score(c.text, part, question))
            for claim in mine[:3]:
                used.add(claim.text)
                claims.append(claim)
        sections.append(DraftSection.model_construct(heading=heading_for(part) if len(parts) > 1
                                                     else lab["findings"], claims=claims))
    short = draft.short_answer
    first = next((c for c in sections[0].claims if c.source_ids), None)
    if first is not None and part_score(short.text, parts[0], question) < ANSWERS_PART:
        short = first  # the model's answer is about something else: the best figure answers instead
    relevant = [f for f in facts if f.text not in used and part_score(f.text, question, question) >= ANSWERS_PART]
    figures = [_quote(f) for f in relevant[:MAX_KEY_FIGURES]]
    title = draft.title if _is_title(draft.title) else heading_for(question)
    return ReportDraft.model_construct(title=title, short_answer=short, sections=sections, key_figures=figures)
