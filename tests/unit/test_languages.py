"""Text handling that holds in Chinese as in English: numbers, sentences, words, parts."""

from briefroom.protocol.extraction import content_words, extract_facts, is_cjk, numbers_in, sentences
from briefroom.records import Claim, DraftSection, ReportDraft, SourceRecord
from briefroom.report.checks import claim_problems, draft_problems, repair_draft
from briefroom.report.draft import render_markdown
from briefroom.report.language import part_query, question_parts, question_scope


def test_numbers_next_to_chinese_characters_are_read():
    # the pattern used to refuse a digit after any word character, and every CJK character is one
    assert numbers_in("平均充放电次数为每瓦时0.52元，较2024年的142次") == ["0.52", "2024", "142"]


def test_wan_and_yi_are_multiplied_out_and_fullwidth_digits_read():
    assert numbers_in("保有量达到48.6万台，投资1.2亿元") == ["486000", "120000000"]
    assert numbers_in("增长３１．５％") == ["31.5"]
    assert numbers_in("48.6万") == numbers_in("486,000")


def test_numbers_inside_names_and_versions_are_still_not_figures():
    assert numbers_in("GPT4 and v1.2 but 2,500.50 units") == ["2500.5"]


def test_chinese_sentences_end_at_fullwidth_marks():
    assert sentences("第一句。第二句！Third one. Fourth？") == ["第一句。", "第二句！", "Third one.", "Fourth？"]


def test_chinese_words_are_character_pairs_without_particles():
    words = content_words("公共充电桩的保有量")
    assert {"公共", "充电", "电桩", "保有", "有量"} <= words
    assert not any("的" in w for w in words)


def test_facts_from_chinese_text_carry_their_numbers():
    facts = extract_facts("截至2025年底，公共充电桩保有量达到48.6万台。没有数字的句子。", "S1", "searcher", 1)
    assert [f.numbers for f in facts] == [("2025", "486000")]


def test_question_parts():
    assert question_parts("How many heat pumps were installed in 2025, and why do sales figures differ?") == [
        "How many heat pumps were installed in 2025", "why do sales figures differ"]
    assert question_parts("2025年临江省公共充电桩保有量是多少？增长最快的是哪类充电桩？") == [
        "2025年临江省公共充电桩保有量是多少", "增长最快的是哪类充电桩"]
    assert question_parts("2025年澜州市日均客运量是多少，与2024年相比变化如何？") == [
        "2025年澜州市日均客运量是多少", "与2024年相比变化如何"]
    assert question_parts("What was the average cost of water in 2025?") == ["What was the average cost of water in 2025"]


SCOPED = ("For Brennick International Airport in 2025: how many passengers did it handle, how much cargo, "
          "and how did passenger numbers compare with 2024?")


def test_a_scope_the_question_sets_is_shared_by_its_parts_not_the_first_parts_own():
    assert question_scope(SCOPED) == "For Brennick International Airport in 2025"
    assert question_parts(SCOPED) == ["how many passengers did it handle", "how much cargo",
                                      "how did passenger numbers compare with 2024"]
    # each part is searched as asked of the scope, so "how much cargo" is Brennick's cargo
    assert part_query("how much cargo", SCOPED) == "For Brennick International Airport in 2025: how much cargo"
    # a colon later in a question, or a single part after the scope, sets no shared scope
    assert question_scope("How big is the market: and who grows fastest?") == ""
    assert question_parts("For Brennick airport: how many passengers?") == ["For Brennick airport: how many passengers?"]
    assert part_query("by how much", "How big is it, and by how much did it grow?") == \
        "How big is it, and by how much did it grow?"


CN = {"S1": "2025年，储罐平均使用次数为142次，较上年增加。", "S2": "每立方米处理成本为0.61元。"}


def test_planted_figures_in_a_chinese_draft_are_caught():
    # a sentence gluing a figure from S2 onto S1's: S1 holds 142, not 0.52
    glued = Claim(text="平均使用次数为每立方米0.52元，较2024年的142次有所增加。", source_ids=["S1"])
    found = {p.detail.split()[0] for p in claim_problems(glued, CN) if p.kind == "unsupported_number"}
    assert found == {"0.52", "2024"}
    title_with_figure = ReportDraft(title="使用次数达到999次", short_answer=Claim(text="储罐平均使用次数为142次。",
                                                                        source_ids=["S1"]),
                                    sections=[DraftSection(heading="2031年的处理成本", claims=[
                                        Claim(text="每立方米处理成本为0.61元。", source_ids=["S2"])])])
    problems = draft_problems(title_with_figure, CN, "储罐使用次数是多少？")
    assert {("999" in p.detail, "2031" in p.detail) for p in problems if p.kind == "unsupported_number"} == {
        (True, False), (False, True)}


def test_chinese_claims_are_grounded_by_character_pairs():
    copied = Claim(text="每立方米处理成本为0.61元。", source_ids=["S2"])
    stitched = Claim(text="储罐每立方米的使用成本为0.61元。", source_ids=["S2"])
    assert claim_problems(copied, CN) == []
    assert "ungrounded_claim" in [p.kind for p in claim_problems(stitched, CN)]


def test_repair_replaces_a_title_with_an_unsupported_figure():
    report = ReportDraft(title="使用次数达到999次", short_answer=Claim(text="储罐平均使用次数为142次。", source_ids=["S1"]),
                         sections=[DraftSection(heading="使用次数", claims=[
                             Claim(text="储罐平均使用次数为142次。", source_ids=["S1"])])])
    fixed, log = repair_draft(report, CN, [], question="储罐使用次数是多少？")
    assert fixed.title == "储罐使用次数是多少？" and log


def test_a_chinese_report_has_chinese_headings():
    sources = {sid: SourceRecord(source_id=sid, title=f"T{sid}", path=f"c/{sid}.md") for sid in CN}
    report = ReportDraft(title="储罐使用", short_answer=Claim(text="储罐平均使用次数为142次。", source_ids=["S1"]),
                         sections=[DraftSection(heading="使用次数", claims=[Claim(text="x 0.61元", source_ids=["S2"])])])
    md, _ = render_markdown(report, sources, language="zh")
    assert "## 简短回答" in md and "## 来源" in md and "Short answer" not in md
    assert is_cjk(md.split("## 来源")[0])


def test_a_chinese_part_asking_for_two_things_respectively_is_two_parts():
    assert question_parts("2025年岚江省风电累计装机容量和全年风电发电量分别是多少？与2024年相比各增加了多少？") == [
        "2025年岚江省风电累计装机容量是多少", "全年风电发电量是多少", "与2024年相比各增加了多少"]
    assert question_parts("2025年临江省公共充电桩和换电站的数量是多少？") == ["2025年临江省公共充电桩和换电站的数量是多少"]
