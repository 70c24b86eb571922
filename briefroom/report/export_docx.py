"""A `ReportDocument` as a Word document (python-docx).

Citations are superscript numbers, footnote style, that point into a numbered
References section at the end: each reference names its source and quotes the
passages the report's sentences rest on. python-docx writes no real footnotes, and a
reader checking a claim wants the passage next to the others anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from docx import Document
from docx.document import Document as WordDocument
from docx.oxml.ns import qn
from docx.shared import Pt
from docx.text.paragraph import Paragraph

from briefroom.report.document import Block, Inline, ReportDocument

REFERENCES = {"en": "References", "zh": "参考文献"}
RETRIEVED = {"en": "retrieved", "zh": "检索于"}
# Word picks a separate font for East Asian characters (w:eastAsia); without one named
# it may show boxes for Chinese where the system lacks its default CJK font.
EAST_ASIAN_FONT = "Noto Sans CJK SC"


def _add_inlines(paragraph: Paragraph, inlines: Sequence[Inline]) -> None:
    for inline in inlines:
        run = paragraph.add_run(inline.text)
        if inline.kind == "citation":
            run.font.superscript = True
        elif inline.kind == "emphasis":
            run.italic = True
        elif inline.kind == "code":
            run.font.name = "Courier New"


def _add_blocks(doc: WordDocument, blocks: Sequence[Block]) -> None:
    for block in blocks:
        style = "List Bullet" if block.kind == "bullet" else None
        paragraph = doc.add_paragraph(style=style)
        _add_inlines(paragraph, block.inlines)


def _set_east_asian_font(doc: WordDocument) -> None:
    normal = doc.styles["Normal"]
    fonts = normal.element.get_or_add_rPr().get_or_add_rFonts()
    fonts.set(qn("w:eastAsia"), EAST_ASIAN_FONT)


def render_docx(document: ReportDocument, out: Path) -> Path:
    doc = Document()
    _set_east_asian_font(doc)
    doc.core_properties.title = document.title
    doc.core_properties.language = "zh-CN" if document.language == "zh" else "en"
    doc.add_heading(document.title, level=0)
    for section in document.sections:
        if section.heading:
            doc.add_heading(section.heading, level=min(section.level - 1, 9))
        _add_blocks(doc, section.blocks)

    doc.add_heading(REFERENCES[document.language], level=1)
    for entry in document.sources:
        reference = doc.add_paragraph()
        number = reference.add_run(f"[{entry.number}] ")
        number.bold = True
        reference.add_run(entry.title)
        details = [entry.location] if entry.location else []
        if entry.retrieved:
            details.append(f"{RETRIEVED[document.language]} {entry.retrieved}")
        if entry.source_id:
            details.append(f"({entry.source_id})")
        if details:
            reference.add_run(" — " + " ".join(details))
        for passage in entry.cited_passages:
            quote = doc.add_paragraph(" ".join(passage.text.split()), style="Quote")
            for run in quote.runs:
                run.font.size = Pt(9)

    if document.notes:
        doc.add_paragraph("—" * 3)
        _add_blocks(doc, document.notes)
    staged = out.with_name(f".{out.name}.tmp")
    doc.save(str(staged))
    staged.replace(out)  # whole or not at all, like the other report files
    return out
