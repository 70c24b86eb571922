"""The report's shape: whole-phrase headings, an executive summary, a section per part,
what the documents do not say, sources weighed and labelled, the length asked for."""

import pytest

from briefroom.protocol.extraction import statements as extraction_statements
from briefroom.records import Claim, DraftSection, Fact, Passage, ReportDraft, SourceRecord, WriterDraft
from briefroom.report.document import parse_report
from briefroom.report.draft import render_markdown
from briefroom.report.language import LABELS, question_parts, short_heading, whole_phrase
from briefroom.report.shape import assemble, summary_length, without_repeats, word_count
from briefroom.report.source_kinds import profiles
from briefroom.report.spec import SHAPES, ReportSpec


@pytest.mark.parametrize(("part", "heading"), [
    ("why do sales figures for the same", "Why do sales figures"),
    ("How many heat pumps were installed in Europe in 2025", "How many heat pumps were installed in Europe in 2025"),
    ("How much offshore wind capacity did Norvalia add in 2025 and how does that compare with the record year",
     "How much offshore wind capacity did Norvalia add in 2025"),
    ("what is the share of the", "What is the share"),
    ("与2024年相比变化如何", "与2024年相比变化如何"),
])
def test_headings_are_whole_phrases(part, heading):
    assert short_heading(part) == heading
    assert whole_phrase(short_heading(part))


def test_a_long_heading_is_cut_only_where_a_phrase_ends():
    words = ("Which offshore wind project commissioned in Norvalia during the calendar year 2025 was the largest "
             "of all the projects").split()
    heading = short_heading(" ".join(words))
    assert len(heading.split()) <= 10 and whole_phrase(heading)
    assert heading == "Which offshore wind project commissioned"  # cut before "in", not inside its phrase


@pytest.mark.parametrize(("part", "heading"), [
    # no phrase boundary: the cut at ten words would fall inside the name, so the name stays whole
    ("Compare annual ridership figures reported publicly last year across Caldermoor Metro Amber Line stations "
     "and their depots",
     "Compare annual ridership figures reported publicly last year across Caldermoor Metro Amber Line"),
    # "of" inside a name is no phrase boundary
    ("What share of total annual revenue the Bank of England earned came from its bond holdings abroad",
     "What share of total annual revenue the Bank of England"),
])
def test_a_heading_is_never_cut_inside_a_name(part, heading):
    assert short_heading(part) == heading


@pytest.mark.parametrize(("part", "heading"), [
    # its verb comes last: cut before "in Norvalia" it would read "How did the number of public EV charging points"
    ("How did the number of public EV charging points in Norvalia change from 2021 to 2025",
     "How did the number of public EV charging points in Norvalia change from 2021 to 2025"),
    ("What share of revenue did the Bank of England earn last year from its bond holdings",
     "What share of revenue did the Bank of England earn last year from its bond holdings"),
    # a second clause goes; the first stays whole
    ("How much offshore wind capacity did Norvalia add in 2025 and how does that compare with the record year",
     "How much offshore wind capacity did Norvalia add in 2025"),
])
def test_a_question_asked_with_did_is_cut_only_where_a_clause_ends(part, heading):
    assert short_heading(part) == heading


def test_a_part_a_little_longer_than_a_heading_stays_whole():
    part = "how much new offshore wind capacity do analysts expect Norvalia to add in 2027"  # 14 words
    assert short_heading(part) == "How much new offshore wind capacity do analysts expect Norvalia to add in 2027"
    assert len(short_heading(part, 8).split()) <= 8  # a caller's own limit holds


def source(sid: str, title: str, *sentences: str) -> SourceRecord:
    text = " ".join(sentences)
    return SourceRecord(source_id=sid, title=title, path=f"corpus/{sid}.md",
                        passages=(Passage(chunk_id=f"{sid}:0", start=0, end=len(text), text=text),))


QUESTION = "How many heat pumps were installed in Europe in 2025, and what do the installers say about 2026?"
SOURCES = {
    "REG": source("REG", "European installer survey: heat pump installations in 2025",
                  "The council compiles its count from commissioning records filed by registered installers.",
                  "Installers put 1.84 million heat pumps into service across Europe in 2025.",
                  "Units sold but not yet commissioned are not counted."),
    "BLOG": source("BLOG", "Opinion: Europe's heat pump boom is bigger than anyone admits",
                   "By my own back-of-the-envelope estimate, Europe installed 2.9 million heat pumps in 2025."),
}
FACTS = [Fact(fact_id=f"F{n}", text=t, source_id=sid, found_by="passage", round=1)
         for n, (sid, t) in enumerate([("BLOG", SOURCES["BLOG"].passages[0].text),
                                       ("REG", "Installers put 1.84 million heat pumps into service across Europe "
                                               "in 2025.")])]


def build(draft: WriterDraft, spec: ReportSpec = ReportSpec(), question: str = QUESTION):
    return assemble(draft, question_parts(question), question, FACTS, SOURCES, profiles(SOURCES), spec, "en")


def blog_draft() -> WriterDraft:
    blog = Claim(text="Europe installed 2.9 million heat pumps in 2025, by one estimate.", source_ids=["BLOG"])
    return WriterDraft(title="Heat pumps in Europe", short_answer=blog, summary=[blog],
                       sections=[DraftSection(heading="Findings, part 1", claims=[blog], part=1)])


def test_the_short_answer_gives_the_registry_figure_and_the_estimate_is_labelled():
    report = build(blog_draft())
    assert "1.84 million" in report.short_answer.text and report.short_answer.source_ids == ["REG"]
    blog = next(c for c in report.sections[0].claims if "2.9 million" in c.text)
    assert blog.attribution and "estimate" in blog.attribution
    assert report.source_labels["BLOG"] == "opinion or blog, 2025"
    assert report.source_labels["REG"] == "official statistics or registry, 2025"


def test_the_shape_has_its_sections_summary_and_what_is_not_said():
    report = build(blog_draft())
    assert [s.heading for s in report.sections] == ["How many heat pumps were installed in Europe in 2025",
                                                    "What do the installers say about 2026"]  # generic one replaced
    assert report.sections[1].claims[0].text == LABELS["en"]["not_said"]
    assert report.not_said == ["What do the installers say about 2026: no retrieved document answers this."]
    markdown, cited = render_markdown(report, SOURCES, footer="note", language="en")
    headings = [line[3:] for line in markdown.splitlines() if line.startswith("## ")]
    assert headings == ["Short answer", "Executive summary", report.sections[0].heading, report.sections[1].heading,
                        "What the documents do not say", "Sources"]
    assert "— official statistics or registry, 2025 — `corpus/REG.md` (source `REG`)" in markdown
    document = parse_report(markdown, SOURCES, cited)  # the export parser reads the new layout
    assert document.sources[0].source_id == cited[0] and document.title == "Heat pumps in Europe"


def test_prose_is_one_sentence_a_line_and_a_paragraph_to_the_reader():
    three = [Claim(text="Installers put 1.84 million heat pumps into service across Europe in 2025.",
                   source_ids=["REG"]),
             Claim(text="The council compiles its count from commissioning records.", source_ids=["REG"]),
             Claim(text="Units sold but not yet commissioned are not counted.", source_ids=["REG"])]
    draft = WriterDraft(title="Heat pumps", short_answer=three[0], sections=[DraftSection(heading="Installed",
                                                                                          claims=three)])
    markdown, cited = render_markdown(build(draft, question="How many heat pumps were installed in Europe?"),
                                      SOURCES)
    blocks = markdown.split("## Installed\n\n", 1)[1].split("\n\n")
    assert blocks[1].splitlines() == [f"{three[1].text} [1]", f"{three[2].text} [1]"]
    parsed = parse_report(markdown, SOURCES, cited).sections[1].blocks
    assert [b.kind for b in parsed] == ["bullet", "paragraph", "bullet"] and len(parsed[1].sentences) == 2
    # the answer and the estimate beside it are labelled bullets, each saying who gives its figure
    assert "1.84 million" in parsed[0].sentences[0].text and "European installer survey" in blocks[0]
    assert "2.9 million" in parsed[2].sentences[0].text


@pytest.mark.parametrize(("kind", "most"), [("brief", 2), ("standard", 4), ("detailed", 8)])
def test_the_report_kind_sets_how_much_a_section_says(kind, most):
    many = [Claim(text=f"Installers put 1.84 million heat pumps into service across Europe in 2025, note {n}.",
                  source_ids=["REG"]) for n in range(8)]
    draft = WriterDraft(title="Heat pumps", short_answer=many[0], sections=[DraftSection(heading="Installed",
                                                                                        claims=many)])
    report = build(draft, ReportSpec(kind=kind, words=5000), question="How many heat pumps were installed in Europe?")
    prose = [c for c in report.sections[0].claims if c.source_ids == ["REG"]]
    assert len(prose) == most and len(report.sections[0].claims) == most + 1  # and the rival estimate


def test_words_is_a_target_length_each_section_keeping_its_answer():
    many = [Claim(text=f"Installers put 1.84 million heat pumps into service across Europe in 2025, note {n}.",
                  source_ids=["REG"]) for n in range(8)]
    draft = WriterDraft(title="Heat pumps", short_answer=many[0], sections=[DraftSection(heading="Installed",
                                                                                        claims=many)])
    long = build(draft, ReportSpec(kind="detailed", words=5000), question="How many heat pumps were installed?")
    short = build(draft, ReportSpec(kind="detailed", words=50), question="How many heat pumps were installed?")
    assert len(short.sections[0].claims) < len(long.sections[0].claims)
    assert sum(word_count(c.text) for c in short.sections[0].claims) + word_count(short.short_answer.text) <= 50 \
        or len(short.sections[0].claims) == 1


def test_a_summary_sentence_that_only_repeats_the_title_is_left_out():
    registry = Claim(text="Installers put 1.84 million heat pumps into service across Europe in 2025.",
                     source_ids=["REG"])
    echo = Claim(text="Heat pumps in Europe.", source_ids=["REG", "BLOG"])
    draft = WriterDraft(title="Heat pumps in Europe", short_answer=registry, summary=[echo, registry],
                        sections=[DraftSection(heading="Installed in 2025", claims=[registry], part=1)])
    report = build(draft)
    assert [c.text for c in report.summary if "Heat pumps in Europe" in c.text] == []


def test_a_quote_no_section_holds_is_not_the_summary():
    registry = Claim(text="Installers put 1.84 million heat pumps into service across Europe in 2025.",
                     source_ids=["REG"])
    method = "The council compiles its count from commissioning records filed by registered installers."
    quoted = Claim(text=f"“{method}”", source_ids=["REG"])  # a failed sentence's replacement
    draft = WriterDraft(title="Heat pumps in Europe", short_answer=registry, summary=[quoted],
                        sections=[DraftSection(heading="Installed in 2025", claims=[registry], part=1)])
    report = build(draft)
    assert [c for c in report.summary if "commissioning records" in c.text] == []


def test_a_heading_that_repeats_the_title_or_another_section_gives_way_to_the_parts_words():
    registry = Claim(text="Installers put 1.84 million heat pumps into service across Europe in 2025.",
                     source_ids=["REG"])
    draft = WriterDraft(title="Heat pumps installed in Europe", short_answer=registry, summary=[registry],
                        sections=[DraftSection(heading="Heat pumps installed in Europe", claims=[registry], part=1),
                                  DraftSection(heading="Heat pumps installed in Europe", claims=[registry], part=2)])
    headings = [s.heading for s in build(draft).sections]
    assert headings == ["How many heat pumps were installed in Europe in 2025", "What do the installers say about 2026"]
    # nor does a heading that is another part's words, with a question mark (SmolLM2 on solar)
    draft = WriterDraft(title="Heat pumps", short_answer=registry, sections=[
        DraftSection(heading="Installed heat pumps", claims=[registry], part=1),
        DraftSection(heading="How many heat pumps were installed in Europe in 2025?", claims=[registry], part=2)])
    assert [s.heading for s in build(draft).sections][1] == "What do the installers say about 2026"


def test_a_question_that_sets_a_scope_is_titled_by_it_and_its_parts_head_the_sections():
    question = "For Europe in 2025: how many heat pumps were installed, and what do the installers say about 2026?"
    registry = Claim(text="Installers put 1.84 million heat pumps into service across Europe in 2025.",
                     source_ids=["REG"])
    draft = WriterDraft(title="A report on the facts", short_answer=registry,  # no title: it names the report
                        sections=[DraftSection(heading="Findings", claims=[registry], part=1)])
    report = build(draft, question=question)
    assert report.title == "Europe in 2025"
    assert report.sections[0].heading == "How many heat pumps were installed"


def test_a_sentence_the_model_repeats_with_a_word_changed_is_read_once():
    said = ("The report concludes that sales figures for this year are lower than expected, but not because "
            "there were no heat pumps sold.")
    again = ("The report concludes that sales figures for this year are lower than expected, but not because "
             "there were any heat pumps sold.")
    twice = Claim(text=f"{said} {again}", source_ids=["REG"])
    assert without_repeats(twice).text == said
    other_figure = Claim(text="Installers put 1.84 million heat pumps into service in 2025. "
                              "Installers put 1.97 million heat pumps into service in 2024.", source_ids=["REG"])
    assert without_repeats(other_figure) == other_figure  # another figure is another statement
    quoted = Claim(text=f"“{said} {again}”", source_ids=["REG"])
    assert without_repeats(quoted) == quoted  # a source's own words stay as they are
    lead = Claim(text="Installers put 1.84 million heat pumps into service across Europe in 2025.", source_ids=["REG"])
    draft = WriterDraft(title="Heat pumps", short_answer=lead, summary=[twice],
                        sections=[DraftSection(heading="Installed", claims=[lead]),
                                  DraftSection(heading="Why sales differ", claims=[twice, Claim(text=again,
                                                                                              source_ids=["REG"])])])
    report = build(draft, ReportSpec(), question="How many heat pumps were installed in Europe in 2025, and why "
                                                 "do sales figures differ?")
    texts = [c.text for s in report.sections for c in s.claims] + [c.text for c in report.summary]
    assert sum(t.count("lower than expected") for t in texts) <= 2  # once in the summary, once in its section
    assert all(t.count("lower than expected") <= 1 for t in texts)


def test_the_method_note_claims_side_by_side_figures_only_when_the_report_shows_them():
    from types import SimpleNamespace

    from briefroom.agents.writer import method_note

    turn = SimpleNamespace(round=1)
    sources = {"REG": SOURCES["REG"]}
    for language in ("en", "zh"):
        with_rivals = method_note(turn, sources, ["REG"], language, attributed=True)
        without = method_note(turn, sources, ["REG"], language, attributed=False)
        assert with_rivals.startswith(without) and with_rivals != without
        assert LABELS[language]["side_by_side"] not in without


def test_the_method_note_counts_in_words_a_reader_would_write():
    from types import SimpleNamespace

    from briefroom.agents.writer import method_note

    one = method_note(SimpleNamespace(round=1), {"REG": SOURCES["REG"]}, ["REG"], "en", attributed=False)
    assert "1 round of search" in one and "1 document read" in one and "(s)" not in one
    two = method_note(SimpleNamespace(round=2), SOURCES, ["REG"], "en", attributed=False)
    assert "2 rounds of search" in two and f"{len(SOURCES)} documents read" in two
    assert "检索 2 轮" in method_note(SimpleNamespace(round=2), SOURCES, ["REG"], "zh", attributed=False)


def test_a_heading_about_the_report_gives_way_to_the_parts_words():
    registry = Claim(text="Installers put 1.84 million heat pumps into service across Europe in 2025.",
                     source_ids=["REG"])
    draft = WriterDraft(title="Heat pumps", short_answer=registry, summary=[registry],
                        sections=[DraftSection(heading="A report that is about heat pumps installed in Europe in 2025.",
                                               claims=[registry], part=1)])
    assert build(draft).sections[0].heading == "How many heat pumps were installed in Europe in 2025"


def test_a_heading_that_is_a_sentence_of_a_source_gives_way_to_the_parts_words():
    registry = Claim(text="Installers put 1.84 million heat pumps into service across Europe in 2025.",
                     source_ids=["REG"])
    byline = "The council compiles its count from commissioning records filed by registered installers."
    draft = WriterDraft(title="Heat pumps", short_answer=registry, summary=[registry],
                        sections=[DraftSection(heading=byline, claims=[registry], part=1)])
    assert build(draft).sections[0].heading == "How many heat pumps were installed in Europe in 2025"
    # the same words as a phrase, not a sentence, may head the part
    draft = draft.model_copy(update={"sections": [DraftSection(heading="Heat pumps installed by registered installers",
                                                               claims=[registry], part=1)]})
    assert build(draft).sections[0].heading == "Heat pumps installed by registered installers"


def test_a_title_or_heading_with_a_word_neither_the_question_nor_a_source_uses_gives_way():
    registry = Claim(text="Installers put 1.84 million heat pumps into service across Europe in 2025.",
                     source_ids=["REG"])
    made_up = WriterDraft(title="Songtang heat pumps in Europe", short_answer=registry, summary=[registry],
                          sections=[DraftSection(heading="Heat pumps of Songtang", claims=[registry], part=1)])
    report = build(made_up)
    assert "Songtang" not in report.title and report.title.startswith("How many heat pumps")
    assert report.sections[0].heading == "How many heat pumps were installed in Europe in 2025"
    grounded = made_up.model_copy(update={"title": "Heat pumps in Europe"})
    assert build(grounded).title == "Heat pumps in Europe"


def test_chinese_title_bigrams_no_source_uses_are_made_up():
    from briefroom.report.shape import grounded_phrase, vocabulary_of

    question = "2025年末青川市常住人口是多少？比2024年末增加了多少？"
    source = SourceRecord(source_id="S", title="青川市公安局：2025年户籍人口情况", path="corpus/a.md")
    vocabulary = vocabulary_of(question, [], {"S": source})
    assert not grounded_phrase("Songtang 2025年人口情决等", vocabulary)
    assert grounded_phrase("青川市常住人口", vocabulary)



METRO = {
    "B25": source("B25", "甲市2025年地铁运营统计公报", "2025年，甲市地铁日均客运量为386.7万人次，同比增长9.7%。",
                  "与2024年相比，日均客运量增加34.3万人次。"),
    "B24": source("B24", "甲市2024年地铁运营统计公报", "2024年，甲市地铁日均客运量为352.4万人次，同比增长6.1%。",
                  "2024年全年甲市地铁客运总量为12.9亿人次。"),
    "PLAN": source("PLAN", "甲市地铁客流预测报告（2023年版）", "报告预测，2024年甲市地铁日均客运量将达到360万人次。"),
}
METRO_FACTS = [Fact(fact_id=f"M{n}", text=text, source_id=sid, found_by="passage", round=1)
               for n, (sid, text) in enumerate(
                   [(sid, t.strip() + "。") for sid, record in METRO.items() for t in record.passages[0].text.split("。") if t])]
ZH_QUESTION = "2025年甲市地铁日均客运量是多少，与2024年相比变化如何？"


def two_part_report(question: str, facts: list[Fact], sources: dict[str, SourceRecord], part_two: list[Claim],
                    language: str = "en"):
    """The report of a two-part question whose first part the model answered with the first
    fact, and whose second it answered with `part_two`."""
    lead = Claim(text=facts[0].text, source_ids=[facts[0].source_id])
    draft = WriterDraft(title="Report", short_answer=lead,
                        sections=[DraftSection(heading="Part one", claims=[lead], part=1),
                                  DraftSection(heading="Part two", claims=part_two, part=2)])
    return assemble(draft, question_parts(question), question, facts, sources, profiles(sources), ReportSpec(),
                    language)


def metro_report(part_two: list[Claim]):
    return two_part_report(ZH_QUESTION, METRO_FACTS, METRO, part_two, "zh")


def test_a_part_comparing_with_a_year_also_gives_that_years_level():
    report = metro_report([Claim(text=METRO_FACTS[1].text, source_ids=["B25"])])
    compared = " ".join(c.text for c in report.sections[1].claims)
    assert "34.3万人次" in compared and "352.4万人次" in compared
    assert "12.9亿" not in compared and "360万" not in compared  # the year's total, the plan's forecast


def test_a_change_an_earlier_section_gave_comes_with_its_base_years_level():
    level = Claim(text=METRO_FACTS[0].text, source_ids=["B25"])
    # the model gave the change in the first part's section, in its own words, and nothing
    # of use in the second
    change = Claim(text="与2024年相比，2025年甲市地铁日均客运量增加34.3万人次。", source_ids=["B25"])
    draft = WriterDraft(title="甲市地铁客流", short_answer=level,
                        sections=[DraftSection(heading="日均客运量", claims=[level, change], part=1),
                                  DraftSection(heading="变化", claims=[level], part=2)])
    report = assemble(draft, question_parts(ZH_QUESTION), ZH_QUESTION, METRO_FACTS, METRO, profiles(METRO),
                      ReportSpec(), "zh")
    second = render_markdown(report, METRO)[0].split("## ")[-2]
    assert "34.3万人次" in second  # the change, which the first section gave too
    assert "352.4万人次" in second  # and what it is measured from
    assert "12.9亿" not in second and "360万" not in second


def test_no_base_year_level_when_the_section_already_gives_one():
    given = [Claim(text=METRO_FACTS[1].text, source_ids=["B25"]), Claim(text=METRO_FACTS[2].text, source_ids=["B24"])]
    texts = [c.text for c in metro_report(given).sections[1].claims]
    assert sum("352.4万" in t for t in texts) == 1


def test_a_base_level_is_a_measured_figure_of_the_year_in_the_leads_unit_and_size():
    from briefroom.report.asking import base_level

    lead = METRO_FACTS[0].text
    assert base_level("2024年，甲市地铁日均客运量为352.4万人次。", lead, "2024")
    assert not base_level("2024年全年甲市地铁客运总量为12.9亿人次。", lead, "2024")  # another size
    assert not base_level("报告预测，2024年甲市地铁日均客运量将达到360万人次。", lead, "2024")  # a forecast
    assert not base_level("2023年，甲市地铁日均客运量为332.1万人次。", lead, "2024")  # another year


def test_a_source_id_the_model_wrote_into_its_sentence_is_not_printed():
    from briefroom.report.draft import without_written_ids

    said = "Installers put 1.84 million heat pumps into service in 2025. [S856ea263]"
    sources = {"S856ea263": source("S856ea263", "Installer survey", said)}
    claim = Claim(text=said, source_ids=["S856ea263"])
    draft = ReportDraft(title="Heat pumps", short_answer=claim, sections=[DraftSection(heading="Installed",
                                                                                       claims=[claim], part=1)])
    markdown, _ = render_markdown(draft, sources)
    assert "S856ea263]" not in markdown and "in 2025. [1]" in markdown  # code's numbered citation stays
    assert without_written_ids("全年净迁入人口约6.6万人。 [S856ea263]", set(sources)) == "全年净迁入人口约6.6万人。"
    assert without_written_ids("It rose 3% (source S856ea263).", set(sources)) == "It rose 3%."
    assert without_written_ids("It rose 3% [S00000000].", set(sources)) == "It rose 3% [S00000000]."  # no source


def test_a_section_opens_with_the_sentence_that_gives_its_answer_not_the_figure_beside_it():
    blog = Claim(text="One blogger puts the 2025 installations at 2.9 million, an estimate.", source_ids=["BLOG"])
    answer = Claim(text="Registered installers commissioned 1.84 million heat pumps across Europe in 2025.",
                   source_ids=["REG"])
    report = build(WriterDraft(title="Heat pumps in Europe", short_answer=answer,
                               sections=[DraftSection(heading="Installations", claims=[blog, answer], part=1)]))
    assert [c.text for c in report.sections[0].claims][:2] == [answer.text, blog.text]


def test_a_table_the_model_copied_is_not_the_short_answer_though_it_holds_the_figure():
    table = Claim(text="| Measure | 2024 | 2025 | |---|---|---| | Installed (million) | 1.97 | 1.84 |", source_ids=["REG"])
    report = build(WriterDraft(title="Heat pumps in Europe", short_answer=table,
                               sections=[DraftSection(heading="Installations", claims=[table], part=1)]))
    assert report.short_answer.text == "“Installers put 1.84 million heat pumps into service across Europe in 2025.”"


WHY_QUESTION = "How many heat pumps were installed in Europe in 2025, and why do sales figures differ?"
EXPLAINER = source("WHY", "Why heat pump sales and installations differ",
                   "Sales and installations measure different steps of the same market.",
                   "Distributors kept more heat pumps in their warehouses because subsidy schemes were cut.",
                   "Some units shipped to Europe were sold on to buyers outside Europe.")


def why_report(prose: list[str]):
    sources = {**SOURCES, "WHY": EXPLAINER}
    facts = [*FACTS, *(Fact(fact_id=f"W{n}", text=t, source_id="WHY", found_by="passage", round=1)
                       for n, t in enumerate(extraction_statements(EXPLAINER.passages[0].text)))]
    lead = Claim(text="Installers put 1.84 million heat pumps into service across Europe in 2025.", source_ids=["REG"])
    draft = WriterDraft(title="Heat pumps", short_answer=lead, summary=[],
                        sections=[DraftSection(heading="Installed", claims=[lead], part=1),
                                  DraftSection(heading="Why sales differ", part=2,
                                               claims=[Claim(text=t, source_ids=["WHY"]) for t in prose])])
    report = assemble(draft, question_parts(WHY_QUESTION), WHY_QUESTION, facts, sources, profiles(sources),
                      ReportSpec(), "en")
    return [c.text for c in report.sections[1].claims]


def test_a_reason_the_models_verified_prose_says_is_not_quoted_beside_it():
    warehouses = "Distributors kept more heat pumps in their warehouses once subsidy schemes were cut."
    claims = why_report([warehouses])
    assert warehouses in claims
    assert not any("warehouses because subsidy" in c for c in claims)  # the source's sentence it says, not quoted
    assert any(c.startswith("“Some units shipped") for c in claims)  # a reason the prose leaves out stays quoted


def test_a_reason_the_prose_does_not_say_stays_quoted():
    claims = why_report(["Sales and installations measure different steps of the market."])
    assert any(c.startswith("“Distributors kept more heat pumps") for c in claims)
    assert any(c.startswith("“Some units shipped") for c in claims)


def test_a_sentence_that_says_only_part_of_the_one_above_it_is_left_out_of_its_section():
    from briefroom.report.repeats import Says, new_sentences

    whole = Claim(text="“The Port of Halvik handled 3.87 million TEU (twenty-foot equivalent units) in 2025, against "
                       "3.52 million TEU in 2024, an increase of 9.9%.”", source_ids=["P"])
    shorter = Claim(text="The Port of Halvik handled 3.87 million TEU (twenty-foot equivalent units) in 2025.",
                    source_ids=["P"])
    more = Claim(text="The Port of Halvik handled 3.87 million TEU in 2025, a record for the port.", source_ids=["P"])
    assert new_sentences([whole, shorter, more], []) == [whole, more]  # "record" is news; the shorter copy is not
    # the longer one says all the shorter does and more: it is read once, in the shorter's place
    assert new_sentences([shorter, more, whole], []) == [whole, more]
    rise = Claim(text="Traffic rose by 9.9% in 2025.", source_ids=["P"])
    whole_rise = whole.model_copy(update={"text": whole.text[:-2] + ", as traffic rose by 9.9% in 2025.”"})
    assert new_sentences([shorter, more, rise, whole_rise], []) == [whole_rise, more]
    labelled = shorter.model_copy(update={"attribution": "Port of Halvik (company, 2025)"})
    assert new_sentences([labelled, whole], [])[0].attribution == "Port of Halvik (company, 2025)"
    other = whole.model_copy(update={"source_ids": ["Q"]})  # another source's sentence: not labelled as the first's
    assert new_sentences([labelled, other], [])[0].attribution is None
    # across sections only a repeat is left out: a later part still gives its answer
    said = [Says.of(whole.text)]
    assert new_sentences([shorter], said) == [shorter]


def test_a_claim_that_only_labels_a_source_is_no_finding():
    # SmolLM2 copied the evidence list's labels as claims: a bare id holds no word or figure
    # for any check to hold it to, and stood in the report as "S80f99d08 [2]"
    registry = Claim(text="Installers put 1.84 million heat pumps into service across Europe in 2025.",
                     source_ids=["REG"])
    labels = [Claim(text="Sa1b2c3d4", source_ids=["REG"]),
              Claim(text="Sa1b2c3d4, official statistics or registry, 2025", source_ids=["REG"])]
    draft = WriterDraft(title="Heat pumps", short_answer=labels[0], summary=[labels[1]],
                        sections=[DraftSection(heading="Installed", claims=[*labels, registry])])
    report = build(draft)
    texts = [report.short_answer.text, *(c.text for c in report.summary),
             *(c.text for s in report.sections for c in s.claims)]
    assert not any("Sa1b2c3d4" in t for t in texts)
    assert any("1.84 million" in t for t in texts)


WATER_QUESTION = ("For Lindale Water Company in 2025: how much drinking water did it put into supply, "
                  "and what was the average household bill?")
WATER = {
    "L": source("L", "Lindale Water Company: annual report 2025",
                "In 2025 Lindale Water Company put 142.6 million cubic metres of drinking water into supply."),
    "P": source("P", "Lindale Water Company business plan (submitted 2021)",
                "In this plan we forecast that the average household bill in 2025 would be 402 euros."),
    "B": source("B", "Brookfell Water: 2025 at a glance",  # it names Lindale, the valley it lies east of
                "Leakage was 14.2% of water put into supply, and the average household bill was 344 euros.",
                "Brookfell Water supplies the district east of the Lindale valley."),
}
WATER_FACTS = [Fact(fact_id=f"W{sid}", text=extraction_statements(r.passages[0].text)[0], source_id=sid,
                    found_by="passage", round=1) for sid, r in WATER.items()]


def water_report(bill: list[Claim]):
    return two_part_report(WATER_QUESTION, WATER_FACTS, WATER, bill)


def test_the_models_copy_of_another_companys_sentence_is_left_out():
    report = water_report([Claim(text=WATER_FACTS[2].text, source_ids=["B"])])
    assert all("344" not in c.text and "14.2%" not in c.text for s in report.sections for c in s.claims)


def test_a_sentence_that_says_the_question_back_is_no_finding():
    echo = Claim(text="Lindale Water Company in 2025: how much drinking water did it put into supply.",
                 source_ids=["L"])
    report = water_report([echo])
    assert all("how much drinking water" not in c.text for s in report.sections for c in s.claims)


def test_a_sentence_that_says_the_question_back_in_other_tenses_is_no_finding():
    from briefroom.report.asking import restates_question
    question = "How did the number of heat pumps installed in Europe change between 2024 and 2025?"
    assert restates_question("The number of heat pumps installed in Europe changed between 2024 and 2025.",
                             question)
    assert restates_question("The heat pumps installed in Europe are changing in number.", question)
    # a word the question did not use, or a figure, is something the sentence says
    assert not restates_question("The number of heat pumps installed in Europe fell between 2024 and 2025.",
                                 question)
    assert not restates_question("The number of heat pumps installed in Europe changed by 0.2 million.",
                                 question)


def test_a_forecast_of_the_asked_year_is_weighed_in_its_section_not_summed_up():
    report = water_report([Claim(text=WATER_FACTS[1].text, source_ids=["P"])])
    bill = " ".join(c.text for c in report.sections[1].claims)
    assert "402 euros" in bill  # all the documents give for the bill: the section shows it
    assert all("402" not in c.text for c in report.summary)


def test_a_sentence_carrying_the_checks_feedback_is_no_finding():
    from briefroom.report.verify import echoes_feedback

    echoed = Claim(text="Leakage fell to 18.4% — not supported by its sources: Unsupported", source_ids=["L"])
    report = water_report([echoed])
    assert all("not supported" not in c.text for s in report.sections for c in s.claims)
    assert echoes_feedback("120 — unsupported_number: 120 does not appear in cited source(s) S1")
    assert not echoes_feedback("Leakage was not supported by new mains; it fell to 18.4%.")


HEAT = {"STAT": source("STAT", "Varnholm City Energy Office: heat supply statistics 2025",
                       "District heating networks delivered 3.46 TWh of heat to buildings in Varnholm in 2025, "
                       "meeting 41.7% of the city's heat demand.",
                       "The city's heat demand, measured at the buildings, was 8.30 TWh in 2025.",
                       "Heat pumps met 12.5% of the city's heat demand in 2025.")}
HEAT_FACTS = [Fact(fact_id=f"H{n}", text=t, source_id="STAT", found_by="passage", round=1)
              for n, t in enumerate(extraction_statements(HEAT["STAT"].passages[0].text))]
HEAT_QUESTION = ("How much heat did district heating networks deliver in Varnholm in 2025, and what share of the "
                 "city's heat demand did that meet?")


def heat_report(part_two: list[str]) -> str:
    report = two_part_report(HEAT_QUESTION, HEAT_FACTS, HEAT, [Claim(text=t, source_ids=["STAT"]) for t in part_two])
    return render_markdown(report, HEAT)[0]


def test_a_part_answered_above_keeps_what_the_answer_is_measured_against():
    markdown = heat_report(["The city's heat demand, measured at the buildings, was 8.30 TWh in 2025."])
    second = markdown.split("## ")[-2]  # the second part's section, before Sources
    assert "See above" in second and "8.30 TWh" in second
    assert markdown.count("41.7%") == 2  # the short answer and the first section, not said a third time


def test_a_part_answered_above_takes_no_rival_share_from_the_prose():
    second = heat_report(["Heat pumps met 12.5% of the city's heat demand in 2025."]).split("## ")[-2]
    assert "See above" in second and "12.5%" not in second


CARS = {"REG": source("REG", "Tessaly Vehicle Registration Authority: passenger car fleet statistics, 2025",
                      "At the end of 2025, 418,300 battery-electric passenger cars were registered in Tessaly."),
        "DEAL": source("DEAL", "Tessaly Motor Dealers' Association: plug-in cars pass 600,000",
                       "At the end of 2025, plug-in cars on Tessaly's roads reached 621,800.")}


def test_another_sources_figure_in_the_prose_says_whose_it_is_and_so_does_the_lead():
    question = "How many battery-electric cars were registered in Tessaly at the end of 2025?"
    facts = [Fact(fact_id="C1", text=CARS["REG"].passages[0].text, source_id="REG", found_by="passage", round=1)]
    dealers = Claim(text="The dealers counted 621,800 plug-in cars on Tessaly's roads at the end of 2025.",
                    source_ids=["DEAL"])
    draft = WriterDraft(title="Electric cars in Tessaly", short_answer=dealers,
                        sections=[DraftSection(heading="Cars registered", claims=[dealers], part=1)])
    claims = assemble(draft, question_parts(question), question, facts, CARS, profiles(CARS), ReportSpec(),
                      "en").sections[0].claims
    by_text = {c.text: c.attribution or "" for c in claims}
    assert "Motor Dealers' Association" in by_text[dealers.text]
    assert "Registration Authority" in by_text[f"“{facts[0].text}”"]


def test_a_models_heading_asked_as_a_question_reads_as_the_parts_own_words_do():
    registry = Claim(text="Installers put 1.84 million heat pumps into service across Europe in 2025.",
                     source_ids=["REG"])
    draft = WriterDraft(title="Heat pumps", short_answer=registry, summary=[registry], sections=[
        DraftSection(heading="How many heat pumps did installers put into service?", claims=[registry], part=1)])
    assert build(draft).sections[0].heading == "How many heat pumps did installers put into service"


def test_the_summary_has_room_for_every_part_the_short_answer_leaves_unless_the_report_is_brief():
    assert summary_length(SHAPES["standard"], 6) == 5 and summary_length(SHAPES["detailed"], 6) == 5
    assert summary_length(SHAPES["standard"], 2) == 3  # never shorter than the kind's own length
    assert summary_length(SHAPES["brief"], 6) == 2
    # and the report that holds it is a valid message (the bound of the model's own draft stays 4)
    five = [Claim(text=f"Sentence {n}.", source_ids=["REG"]) for n in range(summary_length(SHAPES["detailed"], 6))]
    section = DraftSection(heading="Heat pumps", claims=five[:1], part=1)
    assert len(ReportDraft.model_validate({"title": "Heat pumps", "short_answer": five[0], "summary": five,
                                           "sections": [section]}).summary) == 5
    with pytest.raises(ValueError):
        WriterDraft.model_validate({"title": "Heat pumps", "short_answer": five[0], "summary": five, "sections": [section]})


MODES = {"CITY": source("CITY", "Halvern transport authority: energy use by mode, 2025",
                        "Trams in Halvern used 0.08 kWh of electricity per passenger-kilometre in 2025.",
                        "Diesel buses in Halvern used the equivalent of 0.31 kWh per passenger-kilometre in 2025.",
                        "Trams therefore used 0.23 kWh per passenger-kilometre less than buses in 2025, so a bus "
                        "used almost four times as much energy per passenger-kilometre as a tram.")}
MODE_FACTS = [Fact(fact_id=f"M{n}", text=t, source_id="CITY", found_by="passage", round=1)
              for n, t in enumerate(extraction_statements(MODES["CITY"].passages[0].text))]
MODE_QUESTION = "Which used less energy per passenger-kilometre in Halvern in 2025, trams or buses, and by how much?"


def test_by_how_much_is_answered_by_the_difference_not_by_a_level():
    difference = MODE_FACTS[2]
    # the model answered "which" with the difference and "by how much" with nothing of use
    vague = Claim(text="Trams used less energy than buses in Halvern.", source_ids=["CITY"])
    report = two_part_report(MODE_QUESTION, [difference, *MODE_FACTS[:2]], MODES, [vague])
    second = render_markdown(report, MODES)[0].split("## ")[-2]
    assert second.startswith("By how much")
    # the difference the first section gave is pointed back to; a level is no answer to "by how much"
    assert "See above" in second and "0.08" not in second and "0.31" not in second
    assert "The documents do not say" not in second


def test_by_how_much_alone_is_led_by_a_sentence_giving_the_difference():
    from briefroom.report.asking import answers_comparison
    part = question_parts(MODE_QUESTION)[1]
    assert part == "by how much"
    assert answers_comparison(MODE_FACTS[2].text, part)
    assert answers_comparison("A flight emitted about 14 times as much CO2 as the train in 2025.", part)
    assert not answers_comparison(MODE_FACTS[0].text, part)  # a level
    assert not answers_comparison("Trams used less energy than buses.", part)  # no figure
    # a part naming its base year still wants a change on that year
    assert not answers_comparison(MODE_FACTS[2].text, "how did energy use compare with 2024")
    # a part with words of its own asks something else ("which type grew fastest")
    assert not answers_comparison(MODE_FACTS[2].text, "which kind of charger grew fastest")


FLEET = {"AR": source("AR", "Tarrow Bus Company: annual report 2025",
                      "In 2025 Tarrow Bus Company carried 31.2 million passengers, up from 30.1 million in 2024.",
                      "At the end of 2025 the company ran a fleet of 402 buses, 96 of them battery-electric.")}
FLEET_FACTS = [Fact(fact_id=f"F{n}", text=t, source_id="AR", found_by="passage", round=1)
               for n, t in enumerate(extraction_statements(FLEET["AR"].passages[0].text))]
FLEET_QUESTION = "For Tarrow Bus Company in 2025: how many passengers did it carry, and how many buses did it run?"


def test_a_sentence_an_earlier_part_said_is_no_answer_to_a_count_of_something_else():
    carried = Claim(text="Tarrow Bus Company carried 31.2 million passengers in 2025.", source_ids=["AR"])
    fleet = Claim(text="The company ran 402 buses at the end of 2025.", source_ids=["AR"])
    draft = WriterDraft(title="Tarrow Bus Company in 2025", short_answer=carried, sections=[
        DraftSection(heading="Passengers", claims=[carried], part=1),
        # the model put the passenger count under the buses too ("Bus Company" shares "bus")
        DraftSection(heading="Buses", claims=[fleet, carried], part=2)])
    report = assemble(draft, question_parts(FLEET_QUESTION), FLEET_QUESTION, FLEET_FACTS, FLEET, profiles(FLEET),
                      ReportSpec(), "en")
    buses = " ".join(c.text for c in report.sections[1].claims)
    assert "402 buses" in buses and "31.2 million" not in buses
    first = " ".join(c.text for c in report.sections[0].claims)
    assert "31.2 million" in first


def test_what_a_figure_counts_is_read_from_the_words_after_it():
    from briefroom.report.asking import counts_what_is_asked
    part = "how many buses did it run"
    assert counts_what_is_asked("At the end of 2025 the company ran a fleet of 402 buses.", part)
    assert not counts_what_is_asked("Tarrow Bus Company carried 31.2 million passengers in 2025.", part)
    assert counts_what_is_asked("There were 121,400 aircraft movements.", "how many aircraft movements were there")
    assert counts_what_is_asked("Leakage was 18.4%.", "what was its leakage rate")  # nothing counted: no test
