"""Score any Markdown report against a scenario: briefroom's own, or a peer's.

A peer tool (GPT Researcher on the same model and corpus, say) writes its own
reference list. So that its report is scored by the same rules as briefroom's, its
numbered references are matched to corpus documents by file name or title and
rewritten in briefroom's Sources form before `score_report` reads them; a reference
that names no corpus document stays unresolved and counts as a citation to a source
not retrieved.
"""

from __future__ import annotations

import re
from pathlib import Path

from briefroom.corpus.documents import Document, load_corpus
from briefroom.errors import ConfigError
from briefroom.evaluation.metrics import KeyFact, ReportScore, score_report
from briefroom.evaluation.report_layout import heading_is, sections
from briefroom.report.checks import split_report
from briefroom.report.sources import SOURCES_FILE, load_sources
from briefroom.scenario import Scenario

SOURCES_HEADING = "## Sources"
REFERENCE_HEADINGS = ("sources", "references", "bibliography", "works cited", "来源", "参考文献", "参考资料")
_REFERENCE = re.compile(r"^\s*(?:[-*]\s*)?(?:\[(\d+)\]|(\d+)[.)])\s*(.+)$")


def corpus_documents(folder: Path, scenario: Scenario) -> list[Document]:
    return load_corpus(scenario.corpus_dir(folder))


def _document_named(line: str, documents: list[Document]) -> Document | None:
    lowered = line.lower()
    for doc in documents:
        if Path(doc.path).name.lower() in lowered:
            return doc
    # A title is weaker evidence than a file name: the longest one named wins.
    titled = [d for d in documents if d.title and len(d.title) >= 8 and d.title.lower() in lowered]
    return max(titled, key=lambda d: len(d.title), default=None)


def with_briefroom_sources(markdown: str, documents: list[Document]) -> str:
    """The report with its reference list in briefroom's form; a briefroom report as it is."""
    if split_report(markdown)[1]:
        return markdown
    parts = sections(markdown)
    cut = next((i for i, s in enumerate(parts) if heading_is(s.heading, REFERENCE_HEADINGS)), None)
    if cut is None:
        return markdown
    lines = []
    for section in parts[cut:]:
        for line in section.lines:
            m = _REFERENCE.match(line)
            if not m:
                continue
            n, rest = m.group(1) or m.group(2), m.group(3)
            doc = _document_named(rest, documents)
            lines.append(f"[{n}] {doc.title} — `{doc.path}` (source `{doc.source_id}`)" if doc else f"[{n}] {rest}")
    body = []
    for section in parts[:cut]:
        if section.heading:
            body.append("#" * min(section.level, 6) + " " + section.heading)
        body += section.lines
    return "\n".join(body).rstrip() + f"\n\n{SOURCES_HEADING}\n\n" + "\n".join(lines) + "\n"


def score_markdown(markdown: str, folder: Path, scenario: Scenario, retrieved: set[str] | None = None,
                   documents: list[Document] | None = None) -> ReportScore:
    """`retrieved`: the source ids the run retrieved; None (a peer's run, whose retrieval
    briefroom cannot see) counts every corpus document as retrieved. `documents`: the
    corpus, when the caller has read it already."""
    documents = corpus_documents(folder, scenario) if documents is None else documents
    texts = {d.source_id: d.text for d in documents}
    return score_report(with_briefroom_sources(markdown, documents), question=scenario.question,
                        language=scenario.language,
                        answer_key=[KeyFact(k.name, list(k.any), k.part) for k in scenario.answer_key],
                        parts=scenario.parts, must_not=scenario.must_not, unanswerable=scenario.unanswerable,
                        source_texts=texts, retrieved=set(texts) if retrieved is None else retrieved,
                        authoritative=scenario.authoritative)


def score_report_file(report: Path, scenario_dir: Path) -> ReportScore:
    """Score a Markdown file against a scenario. Next to a briefroom run's sources.json,
    its retrieval is used; anywhere else, every corpus document counts as retrieved."""
    if not report.is_file():
        raise ConfigError(f"no such report file: {report}")
    scenario = Scenario.load(scenario_dir)
    sources = report.parent / SOURCES_FILE
    retrieved = set(load_sources(report.parent).sources) if sources.is_file() else None
    return score_markdown(report.read_text(encoding="utf-8"), scenario_dir, scenario, retrieved)
