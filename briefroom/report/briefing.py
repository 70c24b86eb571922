"""What the Writer's model is shown to write from: for each part of the question, the
verified source sentences that answer it best, with who says each.

The team's findings are one sentence each, often a restatement of the sub-question; a
model shown only those can do no more than copy them. An analyst writes from the
evidence: the authoritative figure of the measure asked, the figures that differ from it
and what they measure, the sentences that explain. Code chooses them the way the report's
shape does (`outline.part_leads`: the lead, then rivals), then adds the next best
sentences that pass the same rules a lead must (`outline.answering`: about the part's
subject, not only sharing its names), so the model has the material to say what they
mean together. A part asking over a span of years gets each year's level besides
(`outline.series`), which its four best sentences seldom all are.
"""

from __future__ import annotations

from dataclasses import dataclass

from briefroom.records import Fact, SourceRecord
from briefroom.report.outline import Embed, Scorer, answering, dedupe, documents_by_title, part_leads, series
from briefroom.report.source_kinds import SourceProfile

# Sentences shown per part: the lead and its rivals first, then the best of the rest. Enough
# for a paragraph of analysis; few enough that a five-part question stays inside the
# Writer's budget (a sentence is about 40 tokens).
PER_PART = 4


@dataclass(frozen=True)
class PartEvidence:
    """A part of the question and the verified sentences that answer it, best first."""

    part: str
    facts: tuple[Fact, ...]


def evidence_by_part(facts: list[Fact], parts: list[str], question: str, sources: dict[str, SourceRecord],
                     kinds: dict[str, SourceProfile], language: str, embed: Embed | None = None,
                     per_part: int = PER_PART, texts: dict[str, str] | None = None) -> list[PartEvidence]:
    """Each part's evidence (`facts`: verbatim sentences of retrieved sources, confirmed
    first; `texts`: the sources' whole texts, by id). A sentence leads at most one part; it
    may stand as context in others."""
    facts = [f for f in dedupe(facts) if f.source_id in sources]
    if not facts:
        return [PartEvidence(part, ()) for part in parts]
    score = Scorer(question, parts, [f.text for f in facts], embed, language, documents_by_title(sources, texts))
    titles = {sid: record.title for sid, record in sources.items()}
    authority = {sid: profile.authority for sid, profile in kinds.items()}
    led: set[str] = set()
    out = []
    for part in parts:
        chosen = part_leads(facts, part, score, titles, led, authority)[:per_part]
        if chosen:
            led.add(chosen[0].text)
        rest = answering(facts, part, score, titles, {f.text for f in chosen})
        shown = [*chosen, *rest][:per_part]
        years = series(facts, part, chosen[0], score, authority) if chosen else {}
        out.append(PartEvidence(part, tuple([*shown, *(f for f in years.values() if f not in shown)])))
    return out


def evidence_lines(item: PartEvidence, kinds: dict[str, SourceProfile], language: str) -> str:
    """A part's evidence as the Writer's task shows it: each sentence after its source id
    and that source's kind."""
    lines = []
    for fact in item.facts:
        kind = kinds[fact.source_id].label(language) if fact.source_id in kinds else "source"
        lines.append(f"- [{fact.source_id}, {kind}] {fact.text}")
    return "\n".join(lines) or "- (no verified sentence answers this part)"


def evidence_sources(evidence: list[PartEvidence]) -> list[str]:
    """The source ids the evidence quotes, in the order shown."""
    return list(dict.fromkeys(f.source_id for item in evidence for f in item.facts))
