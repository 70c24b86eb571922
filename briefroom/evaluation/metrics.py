"""Scores for one finished report, computed from files a run leaves behind.

Every metric reads the shipped Markdown (what a user reads), not the draft: a claim
the Critic repaired counts as repaired. The source texts are the corpus documents
themselves, loaded again, so a score does not trust anything the run said of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from briefroom.evaluation.report_layout import key_figures, short_answer, summaries
from briefroom.protocol.extraction import folded, is_cjk, sentences, table_cells
from briefroom.report.checks import GROUNDING_THRESHOLD, grounding, source_readings, split_report, unsupported_numbers

# Ways a report says the corpus does not answer (English and Chinese).
SAYS_UNANSWERED = (
    "do not say", "does not say", "do not state", "does not state", "do not answer", "does not answer",
    "not answered", "no verified", "did not yield", "not support a reliable", "no passage", "do not report",
    "文档未说明", "未说明", "没有说明", "未提及", "无法回答", "没有找到", "未找到", "没有可靠",
)
_CITE = re.compile(r"\[(\d+)\]")


@dataclass
class KeyFact:
    name: str
    any: list[str]
    part: int = 1


@dataclass
class OwnLine:
    """A cited sentence in the model's own words: its text, the sources it cites, and
    whether its numbers and content words stand in them (`supported`)."""

    text: str
    sources: list[str]
    supported: bool


@dataclass
class ReportScore:
    recall: float                      # share of answer-key facts the body states
    found: list[str]                   # names of those facts
    missed: list[str]
    coverage: float                    # share of the question's parts with a key fact (or, unanswerable: said so)
    cited_sentences: int
    supported_sentences: int
    unsupported_numbers: list[str]     # "number — in: sentence"
    unretrieved_citations: int         # [n] pointing at a source the run did not retrieve
    trap_hits: list[str]               # must_not strings the report contains
    language_ok: bool
    says_unanswered: bool
    notes: list[str] = field(default_factory=list)
    short_answer: str = ""             # the report's opening answer, as `report_layout.short_answer` reads it
    short_answer_trap_hits: list[str] = field(default_factory=list)  # must_not in a summary section or key figures
    # None: the scenario names no authoritative figure (only credibility traps must)
    short_answer_authoritative: bool | None = None
    # Cited sentences in the model's own words (neither quoted nor copied whole from a
    # source), and those of them the checks above find supported: how much of the report
    # is the team's prose.
    own_sentences: int = 0
    own_supported: int = 0
    # Those sentences as the report gives them, without their citation marks, each with
    # the checks' verdict: what a person reads for a hand check (bench/own_sentences.py).
    own_lines: list[OwnLine] = field(default_factory=list)

    @property
    def support(self) -> float:
        return self.supported_sentences / self.cited_sentences if self.cited_sentences else 1.0

    @property
    def own_words(self) -> float:
        """The share of cited sentences that are the model's own and supported."""
        return self.own_supported / self.cited_sentences if self.cited_sentences else 0.0


normal = folded  # the name the scorer and the benches read it by


def states(body: str, spellings: list[str]) -> bool:
    """A key fact is stated when one of its spellings stands in the body (case and spacing ignored)."""
    flat = normal(body)
    squeezed = flat.replace(" ", "")
    return any(normal(s) in flat or normal(s).replace(" ", "") in squeezed for s in spellings if s.strip())


def score_report(markdown: str, *, question: str, language: str, answer_key: list[KeyFact], parts: list[str],
                 must_not: list[str], unanswerable: bool, source_texts: dict[str, str],
                 retrieved: set[str], authoritative: list[str] | None = None) -> ReportScore:
    """Score a report. `source_texts`: every corpus document's text by source id;
    `retrieved`: the ids the run retrieved (a citation elsewhere is a fabrication);
    `authoritative`: spellings of the figure the short answer must give (credibility traps)."""
    body, mapping = split_report(markdown)
    found = [k.name for k in answer_key if states(body, k.any)]
    missed = [k.name for k in answer_key if k.name not in found]
    recall = len(found) / len(answer_key) if answer_key else 1.0
    said_unanswered = any(p in normal(body) for p in SAYS_UNANSWERED)
    lines = _check_lines(body, mapping, source_texts, retrieved, question)
    opening = short_answer(body)
    # A trap figure in the opening (short answer, executive summary) or the key figures is
    # presented as the answer; one in a section that names it as a forecast or an estimate
    # is not, so trap_hits over-counts.
    headline = summaries(body) + "\n" + key_figures(body)
    return ReportScore(recall=recall, found=found, missed=missed,
                       coverage=_coverage(answer_key, found, parts, unanswerable, said_unanswered),
                       cited_sentences=lines.cited, supported_sentences=lines.supported,
                       own_sentences=len(lines.own_lines),
                       own_supported=sum(line.supported for line in lines.own_lines), own_lines=lines.own_lines,
                       unsupported_numbers=lines.unsupported, unretrieved_citations=lines.unretrieved,
                       trap_hits=[t for t in must_not if states(body, [t])],
                       language_ok=_language_ok(body, language),
                       says_unanswered=said_unanswered, short_answer=opening,
                       short_answer_trap_hits=[t for t in must_not if states(headline, [t])],
                       short_answer_authoritative=states(opening, authoritative) if authoritative else None)


def _coverage(answer_key: list[KeyFact], found: list[str], parts: list[str], unanswerable: bool,
              said_unanswered: bool) -> float:
    """Share of the question's parts with a key fact stated; for an unanswerable
    question, whether the report said the corpus does not answer it."""
    if unanswerable:
        return 1.0 if said_unanswered else 0.0
    n_parts = max(len(parts), max((k.part for k in answer_key), default=1))
    covered = {k.part for k in answer_key if k.name in found}
    return len(covered) / n_parts if n_parts else 1.0


@dataclass
class _LineCounts:
    """What the body's lines add up to: cited lines, the supported ones among them,
    numbers no source holds, citations of sources the run did not retrieve."""

    cited: int = 0
    supported: int = 0
    own_lines: list[OwnLine] = field(default_factory=list)  # neither a quote (“…”) nor a copy of a source's sentence
    unretrieved: int = 0
    unsupported: list[str] = field(default_factory=list)


def _check_lines(body: str, mapping: dict[str, str], source_texts: dict[str, str], retrieved: set[str],
                 question: str) -> _LineCounts:
    counts = _LineCounts()
    everything = " ".join(source_texts[s] for s in retrieved if s in source_texts) + " " + question
    # once, not once per line; a table's cells as read (`table_cells`), which a line may copy too
    flat_sources = {sid: normal("\n".join([text, *sorted(table_cells(text))])) for sid, text in source_texts.items()}
    copyable = {sid: whole_sentences(text) for sid, text in source_texts.items()}
    for line in body.splitlines():
        text = _CITE.sub("", line).strip().lstrip("-#* ").strip()
        if text:
            _check_line(line, text, mapping, source_texts, (flat_sources, copyable), retrieved, everything, counts)
    return counts


def _check_line(line: str, text: str, mapping: dict[str, str], source_texts: dict[str, str],
                flat: tuple[dict[str, str], dict[str, list[str]]], retrieved: set[str], everything: str,
                counts: _LineCounts) -> None:
    """One body line: its citations, its numbers against its sources, its grounding."""
    ids = []
    for n in _CITE.findall(line):
        sid = mapping.get(n)
        if sid is None or sid not in retrieved or sid not in source_texts:
            counts.unretrieved += 1
        else:
            ids.append(sid)
    # A cited line answers to its sources; an uncited one (title, heading, note) to anything retrieved.
    pool = " ".join(source_texts[s] for s in ids) if ids else everything
    missing = unsupported_numbers(text, source_readings(pool))  # the same test the Critic applies
    counts.unsupported += [f"{n} — in: {text[:120]}" for n in missing]
    if _CITE.search(line):
        counts.cited += 1
        grounded = max((grounding(text, source_texts[s]) for s in ids), default=0.0)
        supported = bool(ids) and not missing and grounded >= GROUNDING_THRESHOLD
        counts.supported += supported
        flat_sources, copyable = flat  # each source folded, and its sentences a line may hold whole
        if own_words(text, [flat_sources[s] for s in ids], [c for s in ids for c in copyable[s]]):
            counts.own_lines.append(OwnLine(text, ids, supported))


# A source sentence at least this long (words; CJK characters / 2) found whole inside a
# line makes it a copy, whatever words come before it ("According to the newswire, a
# research firm raised its forecast …"); a short one ("Sales rose.") may be said alike.
COPIED_WORDS = 6


def whole_sentences(text: str) -> list[str]:
    """The sentences of a source (`extraction.sentences`, and its table's cells as read) a
    line copies when it holds one whole: those of `COPIED_WORDS` or more, `normal`ised,
    without their end mark."""
    cores = [normal(s).rstrip(".。!！?？") for s in [*sentences(text), *sorted(table_cells(text))]]
    return [c for c in cores if (len(c) / 2 if is_cjk(c) else len(c.split())) >= COPIED_WORDS]


def own_words(text: str, cited: list[str], whole: Sequence[str] = ()) -> bool:
    """The line is the model's prose: not a quote, not part of a source sentence copied
    (which a model may do without the quotation marks), and holding none of `whole` (its
    sources' `whole_sentences`) behind words of its own; its label (" — *Source (kind)*")
    is code's and not counted. `cited`: its sources' texts, `normal`ised."""
    core = text.split(" — *", 1)[0].strip()
    if core.startswith(("“", '"', "「")):
        return False
    flat = normal(core).rstrip(".。")
    return bool(flat) and not any(flat in source for source in cited) and not any(s in flat for s in whole)


def _language_ok(body: str, language: str) -> bool:
    """The body's prose is in the language asked for (no prose: not)."""
    prose = " ".join(sentences(body))
    return is_cjk(prose) == language.lower().startswith("zh") if prose else False
