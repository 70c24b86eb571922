"""The short answer and key figures, read from both report layouts and a peer's Markdown."""

from briefroom.evaluation.report_layout import key_figures, short_answer, summaries

CURRENT = """# Heat pumps in Europe, 2025

## Short answer

“Installers put 1.84 million heat pumps into service in 2025.” [1] — *European installer survey*

## How many were installed

- “By my own estimate, Europe installed 2.9 million heat pumps in 2025.” [2]

## Key figures (quoted verbatim from the sources)

- “Manufacturers sold 2.61 million heat pumps in 2025.” [3]

## Sources

[1] European installer survey — `corpus/a.md` (source `S1`)
"""

REWORKED = """# Heat pumps in Europe, 2025

## Executive summary

Europe installed 1.84 million heat pumps in 2025 [1]. Sales were higher,
2.61 million, because distributors built up stock [2].

## How many were installed

A blog's 2.9 million is an estimate [3].

## What the documents do not say

The documents do not say how many were installed in Norway.

## Method

Two rounds of search over 10 documents.
"""

ZH = """# 2025年澜州市轨道交通客运量

## 简短回答

“2025年，澜州市城市轨道交通日均客运量为386.7万人次。” [1] — *统计公报*

## 关键数据（逐字引自来源）

- “报告预测，2025年日均客运量将达到410万人次。” [2]

## 来源
"""


def test_the_current_layout_short_answer_is_its_section_without_the_attribution():
    assert short_answer(CURRENT) == "“Installers put 1.84 million heat pumps into service in 2025.” [1]"
    assert "2.61 million" in key_figures(CURRENT) and "2.9 million" not in key_figures(CURRENT)


def test_the_reworked_layout_short_answer_is_the_executive_summary():
    answer = short_answer(REWORKED)
    assert "1.84 million" in answer and "2.61 million" in answer  # the whole section, both lines
    assert "2.9 million" not in answer and "Norway" not in answer
    assert key_figures(REWORKED) == ""


def test_chinese_headings():
    assert "386.7万人次" in short_answer(ZH) and "统计公报" not in short_answer(ZH)
    assert "410万人次" in key_figures(ZH)


def test_without_a_summary_heading_the_first_paragraph_after_the_title():
    peer = "# Heat pumps\n\n## Introduction\n\nEurope installed 1.84 million heat pumps.\nMore follow.\n\n" \
           "Second paragraph with 2.9 million.\n\n## Details\n\nMore.\n"
    assert short_answer(peer) == "Europe installed 1.84 million heat pumps.\nMore follow."
    untitled = "Europe installed 1.84 million heat pumps.\n\n# Later heading\n\n2.9 million.\n"
    assert short_answer(untitled) == "Europe installed 1.84 million heat pumps."


def test_setext_and_bold_headings_and_fences():
    setext = "Heat pumps\n==========\n\nExecutive Summary\n-----------------\n\n1.84 million installed.\n"
    assert short_answer(setext) == "1.84 million installed."
    bold = "# Heat pumps\n\nIntro line with 2.9 million.\n\n**Summary:**\n\n1.84 million installed.\n"
    assert short_answer(bold) == "1.84 million installed."
    fenced = "# T\n\n```\n## Summary\n2.9 million\n```\n\n## Short answer\n\n1.84 million.\n"
    assert short_answer(fenced) == "1.84 million."


def test_a_report_without_an_answer_has_an_empty_short_answer():
    assert short_answer("# Title only\n\n## Sources\n\n[1] x\n") == ""
    assert short_answer("") == ""


def test_a_report_with_a_short_answer_and_an_executive_summary():
    both = "# T\n\n## Short answer\n\n3.87 million TEU. [1]\n\n## Executive summary\n\nA blog says 4.5 million. [2]\n"
    assert short_answer(both) == "3.87 million TEU. [1]"  # the first answer a reader meets
    assert "3.87 million" in summaries(both) and "4.5 million" in summaries(both)  # both stand at the top
    assert summaries("# T\n\nOpening 1.84 million.\n\n## Part\n\n2.9 million.\n") == "Opening 1.84 million."
