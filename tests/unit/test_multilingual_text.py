"""Chinese sentence ends, quotes and full-width punctuation in sentence splitting and
chunking; the question's language on mixed questions; the charter's language."""

from __future__ import annotations

import pytest

from briefroom.corpus.chunking import CHUNKER_VERSION, _size, chunk_text
from briefroom.protocol.extraction import sentences
from briefroom.records import Charter
from briefroom.report.language import charter_language, language_of


@pytest.mark.parametrize(("text", "expected"), [
    ("增长很快。公交下降！真的吗？是的；再见。", ["增长很快。", "公交下降！", "真的吗？", "是的；", "再见。"]),
    ("他说：“增长很快。”然后离开了。", ["他说：“增长很快。”", "然后离开了。"]),
    ("「客流创新高！」报告写道。", ["「客流创新高！」", "报告写道。"]),
    ("真的吗？！当然……好。", ["真的吗？！", "当然……", "好。"]),
    ("（数据为初步统计。）下一句。", ["（数据为初步统计。）", "下一句。"]),
    ('He said "growth was fast." Then he left.', ['He said "growth was fast."', "Then he left."]),
    ("The market grew 12%. Azure grew fastest.", ["The market grew 12%.", "Azure grew fastest."]),
    ("收入为3.5亿元。Revenue was flat. 次年增长。", ["收入为3.5亿元。", "Revenue was flat.", "次年增长。"]),
    ("时间：下午\n地点：图书馆。", ["时间：下午 地点：图书馆。"]),  # a line break is a space, as in English
])
def test_sentences_know_chinese_ends_and_quotes(text, expected):
    assert sentences(text) == expected


def test_chunks_cut_long_chinese_paragraphs_at_sentence_then_clause_ends():
    sentence = "临江省公共充电桩保有量为48.6万台，同比增长27.4%，其中大功率超充桩增长最快；"
    text = sentence * 30  # one paragraph, no blank line, well over 120 words
    chunks = chunk_text("d", text)
    assert len(chunks) > 1 and "".join(c.text for c in chunks) == text
    assert all(c.text.endswith("；") for c in chunks)  # cut at sentence ends, never inside one
    assert all(_size(c.text) <= 120 for c in chunks)
    assert all(text[c.start:c.end] == c.text for c in chunks)
    clauses = "，".join(["临江省公共充电桩保有量为四十八万台"] * 40)  # one sentence, only commas
    pieces = chunk_text("d", clauses)
    assert len(pieces) > 1 and all(_size(c.text) <= 120 for c in pieces)
    assert all(c.text.endswith("，") for c in pieces[:-1])
    unbroken = "临江" * 400  # no mark at all: cut by size
    assert all(_size(c.text) <= 120 for c in chunk_text("d", unbroken))
    assert "".join(c.text for c in chunk_text("d", unbroken)) == unbroken


def test_closing_quote_stays_with_its_sentence_in_chunks():
    text = ("他说：“今年客流增长很快。”" + "报告称地铁日均客运量为270万人次。" * 12) * 3
    for chunk in chunk_text("d", text):
        assert not chunk.text.startswith("”")


def test_chunker_version_was_bumped_for_the_new_boundaries():
    assert CHUNKER_VERSION >= 3


@pytest.mark.parametrize(("question", "language"), [
    ("2025年临江省公共充电桩保有量是多少？增长最快的是哪类充电桩？", "zh"),
    ("How big is the 2026 public cloud market and who is growing fastest?", "en"),
    ("How many public charging piles did 临江省 have in 2025?", "en"),
    ("What does 充电桩 mean?", "en"),
    ("Is the 公共充电桩 count in 临江省 bigger than in 云川省?", "en"),
    ("Compare 澜州 and 临江 metro ridership", "en"),
    ("2025年临江省的EV和PHEV销量是多少？", "zh"),
    ("GPT-4o 和 Claude 哪个更便宜？", "zh"),
    ("Tesla Model Y 在临江省卖了多少辆？", "zh"),
    ("请总结 OpenAI 和 Anthropic 在2025年发布的模型", "zh"),
    ("什么是 retrieval-augmented generation (RAG)？", "zh"),
    ("Summarise 临江省公共充电桩的发展情况", "zh"),
    ("临江", "zh"),
    ("EV 2025", "en"),
])
def test_language_of_mixed_questions(question, language):
    assert language_of(question) == language


def test_charter_language_is_the_goals_unless_chosen():
    zh = Charter(goal="2025年临江省公共充电桩保有量是多少？", acceptance_criteria=("c",))
    assert zh.language is None and charter_language(zh) == "zh"
    chosen = Charter(goal="2025年临江省公共充电桩保有量是多少？", acceptance_criteria=("c",), language="en")
    assert charter_language(chosen) == "en"
    with pytest.raises(ValueError):
        Charter(goal="g", acceptance_criteria=("c",), language="fr")
