"""Chinese figures: 万 / 亿 and their compounds, Chinese numerals, percentages, dates,
units of power and energy; and the number check that accepts any spelling of a figure
the cited source holds, and nothing else."""

from __future__ import annotations

import pytest

from briefroom.protocol.extraction import extract_facts, number_mentions, numbers_in
from briefroom.records import Claim
from briefroom.report.checks import claim_problems


@pytest.mark.parametrize(("text", "numbers"), [
    ("48.6万", ["486000"]),
    ("保有量为48.6万台", ["486000"]),
    ("1.2亿", ["120000000"]),
    ("1.2 亿人次", ["120000000"]),
    ("120,000,000", ["120000000"]),
    ("486,000", ["486000"]),
    ("６.３８万亿元", ["6380000000000"]),
    ("3,200万千瓦", ["32000000"]),
    ("5千万", ["50000000"]),
    ("3千瓦", ["3"]),  # 千 of 千瓦 is the unit's, not a multiplier
    ("百分之十二", ["12"]),
    ("12%", ["12"]),
    ("１２％", ["12"]),
    ("同比增长41.2%", ["41.2"]),
    ("2025年3月", ["2025", "3"]),
    ("2025年03月", ["2025", "3"]),
    ("二〇二五年三月", ["2025"]),  # 三 alone is a word far more often than a figure
    ("三千二百万", ["32000000"]),
    ("一亿二千万", ["120000000"]),
    ("一点二亿", ["120000000"]),
    ("一百零五", ["105"]),
    ("一万五", ["15000"]),
    ("两万", ["20000"]),
    ("百分之三点五", ["3.5"]),
    ("723.0 and 72.30", ["723", "72.3"]),
    ("一些城市十分重要，万一千万不要", []),
    ("十四五规划", []),
    ("数十亿元", []),
    ("第一名", []),
    ("PM2.5", []),
])
def test_numbers_in_reads_chinese_figures(text, numbers):
    assert numbers_in(text) == numbers


@pytest.mark.parametrize(("text", "reading"), [
    ("3,200万千瓦", "W:32000000000"),
    ("32吉瓦", "W:32000000000"),
    ("32 GW", "W:32000000000"),
    ("4,860亿千瓦时", "Wh:486000000000000"),
    ("486 TWh", "Wh:486000000000000"),
    ("120 million", "120000000"),
])
def test_a_figure_is_also_read_as_a_quantity_or_scaled(text, reading):
    (mention,) = number_mentions(text)
    assert reading in mention.readings


def problems(claim: str, source: str) -> list[str]:
    return [p.detail for p in claim_problems(Claim(text=claim, source_ids=["s"]), {"s": source})
            if p.kind == "unsupported_number"]


# (claim, source, supported)
CASES = [
    ("临江省公共充电桩保有量为48.6万台。", "2025年临江省公共充电桩保有量达到48.6万台。", True),
    ("临江省公共充电桩保有量为48.6万台。", "The province had 486,000 public charging piles in 2025.", True),
    ("临江省公共充电桩保有量为486,000台。", "2025年临江省公共充电桩保有量达到48.6万台。", True),
    ("临江省公共充电桩保有量为48.6万台。", "2025年临江省公共充电桩保有量达到52万台。", False),
    ("临江省公共充电桩保有量为48.6万台。", "The province had 48.6 public charging piles per village.", False),
    ("全年客运量为1.2亿人次。", "全年客运量为120,000,000人次。", True),
    ("全年客运量为1.2亿人次。", "全年客运量为1.2 亿人次。", True),
    ("全年客运量为1.2亿人次。", "Ridership reached 120 million trips in the year.", True),
    ("全年客运量为1.2亿人次。", "全年客运量为1.2万人次。", False),
    ("增速为百分之十二。", "同比增长12%。", True),
    ("同比增长12%。", "增速为百分之十二。", True),
    ("同比增长13%。", "增速为百分之十二。", False),
    ("风电装机达到32吉瓦。", "风电装机达到3,200万千瓦。", True),
    ("风电装机达到32 GW。", "风电装机达到3,200万千瓦。", True),
    ("风电装机达到32吉瓦。", "风电装机达到3,200万千瓦时。", False),  # energy is not power
    ("该政策自2025年3月起实施。", "自2025年03月起，该政策开始实施。", True),
    ("该政策自2025年4月起实施。", "自2025年3月起，该政策开始实施。", False),
]


@pytest.mark.parametrize(("claim", "source", "supported"), CASES)
def test_a_cited_figure_matches_its_source_in_any_spelling(claim, source, supported):
    assert (problems(claim, source) == []) is supported


def test_facts_are_the_sentences_with_figures_chinese_numerals_included():
    text = "临江省公共充电桩增长较快。其中超充桩增长百分之一百一十二！整体保有量为48.6万台；规划仍在讨论。"
    facts = extract_facts(text, "s", "searcher", 1)
    assert [f.text for f in facts] == ["其中超充桩增长百分之一百一十二！", "整体保有量为48.6万台；"]
    assert [f.numbers for f in facts] == [("112",), ("486000",)]
