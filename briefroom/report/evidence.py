"""Every cited sentence of a finished report with the evidence it rests on, for
sources.json (`claims`) and the run page: claim → source → passage → span.

Read back from report.md itself (`document.parse_report`), so what is listed is what
shipped, after every repair. The span is the sentence of the passage sharing most of
the claim's words (the verbatim one for a quote), in the document's offsets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from briefroom.protocol.extraction import content_words, sentences
from briefroom.records import Passage, SourceRecord
from briefroom.report.document import parse_report
from briefroom.report.source_kinds import SourceProfile, profiles


class Evidence(BaseModel):
    model_config = ConfigDict(frozen=True)

    source_id: str
    chunk_id: str
    start: int  # offsets of the supporting sentence in the document
    end: int
    text: str  # that sentence, verbatim


class ClaimEvidence(BaseModel):
    model_config = ConfigDict(frozen=True)

    section: str
    claim: str
    citations: list[int]
    evidence: list[Evidence]


def supporting_span(claim: str, passage: Passage) -> tuple[int, int, str]:
    """The passage's sentence that shares most of the claim's words, with its offsets."""
    wanted = content_words(claim)
    best, best_shared, at = passage.text, -1, 0
    span = (passage.start, passage.end)
    for sentence in sentences(passage.text):
        found = passage.text.find(sentence[:40], at) if sentence else -1
        shared = len(wanted & content_words(sentence))
        if shared > best_shared:
            best, best_shared = sentence, shared
            span = (passage.start + max(found, 0), passage.start + max(found, 0) + len(sentence))
        if found >= 0:
            at = found
    return span[0], span[1], best


def report_claims(markdown: str, records: Mapping[str, SourceRecord], cited: Sequence[str]) -> list[ClaimEvidence]:
    document = parse_report(markdown, records, cited)
    out = []
    for section in document.sections:
        for block in section.blocks:
            for sentence in block.sentences:
                if not sentence.citations:
                    continue
                evidence = []
                for citation in sentence.citations:
                    if citation.source_id is None or citation.passage is None:
                        continue
                    start, end, text = supporting_span(sentence.text, citation.passage)
                    evidence.append(Evidence(source_id=citation.source_id, chunk_id=citation.passage.chunk_id,
                                             start=start, end=end, text=text))
                out.append(ClaimEvidence(section=section.heading, claim=sentence.text,
                                         citations=[c.number for c in sentence.citations], evidence=evidence))
    return out


def sources_extras(markdown: str, records: Mapping[str, SourceRecord], cited: Sequence[str]) -> dict[str, list | dict]:
    """What sources.json adds to its `cited` and `sources` keys: `claims` (each cited
    sentence's evidence) and `kinds` (each retrieved source's kind, date and rule)."""
    kinds: dict[str, SourceProfile] = profiles(dict(records))
    return {"claims": [c.model_dump(mode="json") for c in report_claims(markdown, records, cited)],
            "kinds": {sid: p.model_dump(mode="json") for sid, p in kinds.items()}}
