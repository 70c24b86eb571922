"""A `ReportDocument` as one self-contained HTML page (also what the PDF is printed from).

Nothing on the page is fetched: the style is inline, there are no images, scripts or
web fonts, so it opens offline and prints the same anywhere. Each citation [n] links to
the passage it rests on, shown under its source in the Sources section with the cited
sentence marked.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from briefroom.records import Passage
from briefroom.report.document import Block, Citation, Inline, ReportDocument, SourceEntry

E = html.escape

# System fonts only. Chromium falls back through fontconfig as well, but naming the CJK
# families first keeps Chinese in one typeface instead of a per-glyph patchwork.
FONT_STACK = ('"Noto Sans", "DejaVu Sans", "Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei", '
              '"Droid Sans Fallback", sans-serif')

STYLE = f"""
body {{ font-family: {FONT_STACK}; line-height: 1.5; max-width: 46em; margin: 2em auto; padding: 0 1em;
color: #222; }}
h1 {{ font-size: 1.6em; }} h2 {{ font-size: 1.25em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }}
a.cite {{ text-decoration: none; color: #1f5fa8; font-size: .85em; vertical-align: super; }}
code {{ font-family: "DejaVu Sans Mono", monospace; font-size: .9em; }}
.source {{ margin: .8em 0; }} .source-title {{ font-weight: bold; }}
blockquote.passage {{ border-left: 3px solid #59a14f; margin: .4em 0 .4em 1.5em; padding: .2em .8em;
white-space: pre-wrap; background: #f6fbf4; font-size: .9em; }}
blockquote.passage:target {{ background: #fff3b0; }} mark {{ background: #fff3b0; }}
footer.notes {{ color: #555; font-size: .9em; border-top: 1px solid #ddd; margin-top: 2em; }}
@page {{ margin: 18mm 16mm; }}
@media print {{ body {{ margin: 0; max-width: none; }} blockquote.passage {{ break-inside: avoid; }} }}
"""

RETRIEVED = {"en": "retrieved", "zh": "检索于"}


def passage_anchor(number: int, index: int) -> str:
    return f"passage-{number}-{index}"


def source_anchor(number: int) -> str:
    return f"source-{number}"


def _citation_href(citation: Citation, document: ReportDocument) -> str | None:
    """Where [n] leads: its passage, else its source; None when the Sources list has no [n]."""
    entry = document.source(citation.number)
    if entry is None:
        return None
    if citation.passage is not None and citation.passage in entry.cited_passages:
        return passage_anchor(entry.number, entry.cited_passages.index(citation.passage))
    return source_anchor(entry.number)


def _inlines(inlines: Sequence[Inline], citations: Sequence[Citation], document: ReportDocument) -> str:
    by_number = {c.number: c for c in citations}
    out = []
    for inline in inlines:
        if inline.kind == "code":
            out.append(f"<code>{E(inline.text)}</code>")
        elif inline.kind == "emphasis":
            out.append(f"<em>{E(inline.text)}</em>")
        elif inline.kind == "citation" and inline.number in by_number:
            href = _citation_href(by_number[inline.number], document)
            title = document.source(inline.number)
            out.append(f'<a class="cite" href="#{href}" title="{E(title.title if title else "")}">{E(inline.text)}</a>'
                       if href else f'<span class="cite unresolved">{E(inline.text)}</span>')
        else:
            out.append(E(inline.text))
    return "".join(out)


def _block_html(block: Block, document: ReportDocument) -> str:
    body = "".join(_inlines(s.inlines, s.citations, document) for s in block.sentences)
    return f"<li>{body}</li>" if block.kind == "bullet" else f"<p>{body}</p>"


def _blocks_html(blocks: Sequence[Block], document: ReportDocument) -> str:
    """Blocks with consecutive bullets gathered into one list."""
    parts: list[str] = []
    in_list = False
    for block in blocks:
        if block.kind == "bullet" and not in_list:
            parts.append("<ul>")
        elif block.kind != "bullet" and in_list:
            parts.append("</ul>")
        in_list = block.kind == "bullet"
        parts.append(_block_html(block, document))
    if in_list:
        parts.append("</ul>")
    return "\n".join(parts)


def _marked(passage: Passage, claims: Sequence[str]) -> str:
    """The passage's text with the sentences cited from it marked (whitespace may differ)."""
    text = passage.text
    spans = []
    for claim in claims:
        words = claim.split()
        found = re.search(r"\s+".join(map(re.escape, words)), text) if words else None
        if found:
            spans.append((found.start(), found.end()))
    out, at = [], 0
    for start, end in sorted(spans):
        if start < at:
            continue  # overlapping marks: the first one wins
        out += [E(text[at:start]), f"<mark>{E(text[start:end])}</mark>"]
        at = end
    out.append(E(text[at:]))
    return "".join(out)


def _claims_resting_on(passage: Passage, number: int, document: ReportDocument) -> list[str]:
    return [s.text.strip(" “”\"") for sec in document.sections for b in sec.blocks for s in b.sentences
            if any(c.number == number and c.passage == passage for c in s.citations)]


def _location_html(entry: SourceEntry) -> str:
    if re.match(r"https?://", entry.location):  # a web source: a link to the page, not an asset
        return f'<a href="{E(entry.location)}">{E(entry.location)}</a>'
    return f"<code>{E(entry.location)}</code>" if entry.location else ""


def _sources_html(document: ReportDocument) -> str:
    parts = []
    for entry in document.sources:
        meta = [_location_html(entry)]
        if entry.retrieved:
            meta.append(f"{RETRIEVED[document.language]} {E(entry.retrieved)}")
        if entry.source_id:
            meta.append(f"<small>({E(entry.source_id)})</small>")
        passages = "".join(
            f'<blockquote class="passage" id="{passage_anchor(entry.number, i)}">'
            f'{_marked(p, _claims_resting_on(p, entry.number, document))}</blockquote>'
            for i, p in enumerate(entry.cited_passages))
        parts.append(f'<div class="source" id="{source_anchor(entry.number)}"><span class="source-title">'
                     f'[{entry.number}] {E(entry.title)}</span> — {" ".join(m for m in meta if m)}{passages}</div>')
    return "\n".join(parts)


def render_html(document: ReportDocument) -> str:
    sections = "\n".join(
        (f"<h{s.level}>{E(s.heading)}</h{s.level}>\n" if s.heading else "") + _blocks_html(s.blocks, document)
        for s in document.sections)
    notes = (f'<footer class="notes">{_blocks_html(document.notes, document)}</footer>' if document.notes else "")
    lang = "zh-Hans" if document.language == "zh" else "en"
    return f"""<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="briefroom">
<title>{E(document.title)}</title>
<style>{STYLE}</style>
</head>
<body>
<article>
<h1>{E(document.title)}</h1>
{sections}
<h2 id="sources">{E(document.sources_heading)}</h2>
{_sources_html(document)}
</article>
{notes}
</body>
</html>
"""
