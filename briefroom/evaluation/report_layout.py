"""Where a report's short answer and key figures stand, whatever its layout.

A reader judges a report by its opening: the figure given there is the report's
answer, whatever the sections below add. Three layouts are read:

- briefroom's current one: title, "## Short answer", a section per part,
  "## Key figures (quoted verbatim …)", "## Sources", a footer after "---";
- the reworked one: title, an executive summary, a section per part, "What the
  documents do not say", a method note;
- another tool's Markdown (a peer's report): a summary-like heading if it has one,
  else the first paragraph after the title.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from briefroom.report.draft import strip_attribution

# Headings that announce the answer, compared by prefix after lower-casing, so
# "Executive summary:" and "Summary of findings" count. "Conclusion" does not: it closes
# a report, and a report whose opening dodges the question should not be credited for it.
SUMMARY_HEADINGS = ("short answer", "executive summary", "summary", "in brief", "answer", "bottom line", "tl;dr",
                    "简短回答", "执行摘要", "摘要", "概要", "概述", "简要回答", "答案")
KEY_FIGURE_HEADINGS = ("key figures", "key numbers", "关键数据", "主要数据")
# Where the report's argument ends: what follows lists sources or describes the method.
END_HEADINGS = ("sources", "references", "bibliography", "method", "how this report", "来源", "参考", "方法",
                "研究方法")

_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BOLD_LINE = re.compile(r"^\*\*([^*]+?)\*\*:?\s*$")  # "**Executive summary**" on its own line
_SETEXT = re.compile(r"^(=+|-+)\s*$")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_NUMBERING = re.compile(r"^(\d+(\.\d+)*[.)]?|[一二三四五六七八九十]+[、.])\s*")


@dataclass
class Section:
    heading: str            # "" for the text before the first heading
    level: int              # 1-6 for "#" headings, 7 for a bold line standing as one, 0 for no heading
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip()


def _label(heading: str) -> str:
    flat = " ".join(heading.lower().replace("*", "").split())
    return _NUMBERING.sub("", flat).rstrip(":：.。 ")


def heading_is(heading: str, names: tuple[str, ...]) -> bool:
    label = _label(heading)
    return bool(label) and any(label.startswith(n) for n in names)


def sections(markdown: str) -> list[Section]:
    """The report cut at its headings (ATX, setext, or a bold line alone), code fences kept whole."""
    out = [Section("", 0)]
    fenced = False
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        if fenced or stripped.startswith(("```", "~~~")):
            out[-1].lines.append(line)
            continue
        atx, bold = _ATX.match(stripped), _BOLD_LINE.match(stripped)
        previous = out[-1].lines[-1].strip() if out[-1].lines else ""
        if atx:
            out.append(Section(atx.group(2), len(atx.group(1))))
        elif bold and not previous:
            out.append(Section(bold.group(1), 7))
        elif _SETEXT.match(stripped) and previous and not previous.startswith(("-", "*", "+", ">", "|")) \
                and not _RULE.match(previous):
            out[-1].lines.pop()
            out.append(Section(previous, 1 if stripped.startswith("=") else 2))
        else:
            out[-1].lines.append(line)
    return out


def _paragraphs(lines: list[str]) -> list[str]:
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line.strip() and not _RULE.match(line):
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    return ["\n".join(b).strip() for b in blocks if b]


def _clean(text: str) -> str:
    # The attribution after a quote (" — *Document title*") names a document, not the answer.
    return "\n".join(strip_attribution(line) for line in text.splitlines()).strip()


def short_answer(markdown: str) -> str:
    """The report's answer as a reader meets it: the section under a summary heading
    (short answer, executive summary, 摘要 …), or, without one, the first paragraph
    after the title. Empty when the report has neither."""
    parts = sections(markdown)
    for section in parts:
        if heading_is(section.heading, SUMMARY_HEADINGS) and section.text:
            return _clean(section.text)
    title_seen = False
    for section in parts:
        if section.level == 1 and not title_seen:
            title_seen = True  # the title's own line is not the answer; what stands under it may be
        elif section.heading and heading_is(section.heading, END_HEADINGS):
            break
        paragraphs = _paragraphs(section.lines)
        if paragraphs:
            return _clean(paragraphs[0])
    return ""


def summaries(markdown: str) -> str:
    """Every summary-like section together (a report may open with a short answer and an
    executive summary both: a reader takes either as the answer), else the short answer."""
    found = [s.text for s in sections(markdown) if heading_is(s.heading, SUMMARY_HEADINGS) and s.text]
    return _clean("\n".join(found)) if found else short_answer(markdown)


def key_figures(markdown: str) -> str:
    """The text of the report's key-figures section(s); empty when it has none."""
    return _clean("\n".join(s.text for s in sections(markdown) if heading_is(s.heading, KEY_FIGURE_HEADINGS)))
