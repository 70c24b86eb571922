"""A part asking how something went over a span of years: every year's level, read from a
statistics table as well as from prose (`outline.series`, `extraction.table_readings`)."""

import pytest

from briefroom.protocol.extraction import statements
from briefroom.records import Claim, DraftSection, Fact, Passage, SourceRecord, WriterDraft
from briefroom.report.asking import level_of_year, span_years
from briefroom.report.briefing import evidence_by_part
from briefroom.report.draft import render_markdown
from briefroom.report.shape import assemble
from briefroom.report.source_kinds import profiles
from briefroom.report.spec import ReportSpec

QUESTION = "How did the number of trips on the Orvik tramway change from 2022 to 2025?"
PROSE = "Trips on the Orvik tramway rose to 9.4 million in 2025, 6 percent more than in 2024."
TABLE = ("Official statistics of the Orvik transport authority, from ticket validations. Published on 2 March 2026.\n\n"
         f"{PROSE}\n\n"
         "Trips per year, million:\n\n"
         "| Year | Orvik tramway | Orvik buses |\n|---|---|---|\n"
         "| 2022 | 6.1 | 14.2 |\n| 2023 | 7.9 | 14.8 |\n| 2024 | 8.9 | 15.0 |\n| 2025 | 9.4 | 15.3 |\n")
FORECAST = "The operator expects 8.0 million trips on the Orvik tramway in 2023, its planners said in 2022."


def source(sid: str, title: str, text: str) -> SourceRecord:
    return SourceRecord(source_id=sid, title=title, path=f"corpus/{sid}.md",
                        passages=(Passage(chunk_id=f"{sid}:0", start=0, end=len(text), text=text),))


SOURCES = {"STAT": source("STAT", "Orvik transport statistics 2022–2025", TABLE),
           "NEWS": source("NEWS", "Tram planners look ahead", f"Orvik Daily news, 2022. {FORECAST}")}
FACTS = [Fact(fact_id=f"F{i}", text=text, numbers=(), source_id=sid, found_by="passage", round=1)
         for i, (sid, text) in enumerate([("NEWS", FORECAST)] + [("STAT", s) for s in statements(TABLE)])]


@pytest.mark.parametrize(("part", "years"), [
    ("How did the number of trips change from 2022 to 2025", ["2022", "2023", "2024", "2025"]),
    ("passengers between 2019 and 2021", ["2019", "2020", "2021"]),
    ("2021—2025年公共充电桩数量如何变化", ["2021", "2022", "2023", "2024", "2025"]),
    ("2023年至2025年的客运量", ["2023", "2024", "2025"]),
    ("How many trips were made in 2025", []),
    ("the plan for 1990 to 2040", []),  # a history, not a series to list year by year
])
def test_the_years_of_the_span_a_part_asks_about(part, years):
    assert span_years(part) == years


def test_a_level_of_a_year_is_a_measured_figure_of_that_year_near_the_next_years():
    later = "Visits per year — 2024, Harbour Museum: 438,100."
    assert level_of_year("Visits per year — 2023, Harbour Museum: 402,700.", later, "2023")
    assert not level_of_year("Visits per year — 2022, Harbour Museum: 402,700.", later, "2023")  # another year
    assert not level_of_year("The museum expects about 410,000 visitors in 2023.", later, "2023")  # a forecast
    assert not level_of_year("In 2023 the shop sold 41,300 guidebooks.", later, "2023")  # not near in size


def report(claims: list[Claim]) -> str:
    lead = Claim(text=PROSE, source_ids=["STAT"])
    draft = WriterDraft(title="Tram trips", short_answer=lead,
                        sections=[DraftSection(heading="Trips", claims=claims or [lead], part=1)])
    shaped = assemble(draft, [QUESTION.rstrip("?")], QUESTION, FACTS, SOURCES, profiles(SOURCES), ReportSpec(), "en")
    return render_markdown(shaped, SOURCES)[0]


def test_a_span_part_gives_every_years_level_from_the_table_in_order():
    text = report([])
    section = text.split("## ")[2]
    at = [section.index(f"{year}, Orvik tramway: {value}") for year, value in
          (("2022", "6.1"), ("2023", "7.9"), ("2024", "8.9"))]
    assert at == sorted(at)  # first year to last
    assert "Orvik buses" not in section  # another subject's column of the same table
    assert "2025, Orvik tramway: 9.4" not in section  # the prose the section quotes gives it already


def test_a_year_the_models_sentence_gives_is_not_quoted_again():
    own = Claim(text="Trips rose from 6.1 million in 2022 to 9.4 million in 2025.", source_ids=["STAT"])
    section = report([Claim(text=PROSE, source_ids=["STAT"]), own]).split("## ")[2]
    assert "2022, Orvik tramway" not in section and "2023, Orvik tramway: 7.9" in section


def test_the_writer_is_shown_every_years_level_besides_its_best_sentences():
    [part] = evidence_by_part(FACTS, [QUESTION.rstrip("?")], QUESTION, SOURCES, profiles(SOURCES), "en", per_part=2)
    shown = [f.text for f in part.facts]
    assert [y for y in ("2022", "2023", "2024") if any(f"{y}, Orvik tramway" in s for s in shown)] == \
        ["2022", "2023", "2024"]
    assert len(shown) <= 2 + 4


def test_a_figure_is_the_level_of_the_year_it_is_given_for_not_of_an_earlier_year_named():
    later = "Visits per year — 2022, Harbour Museum: 311,900."
    prose = "Visits to the Harbour Museum rose in every year after it reopened in March 2021, to 451,300 in 2025."
    assert not level_of_year(prose, later, "2021")  # 451,300 is 2025's
    assert level_of_year(prose, "Visits per year — 2024, Harbour Museum: 438,100.", "2025")
    assert level_of_year("The museum sold 301,200 paid admissions in 2025.", prose, "2025")


def test_a_figure_given_to_another_year_than_its_table_cell_gives_it_is_misdated():
    from briefroom.report.checks import misdated_figure

    wrong = Claim(text="Trips rose by 6 percent from 9.4 million in 2024 to 9.4 million in 2025.", source_ids=["STAT"])
    problem = misdated_figure(wrong, {"STAT": TABLE})
    assert problem is not None and "2024" in problem.detail
    right = Claim(text="Trips rose from 8.9 million in 2024 to 9.4 million in 2025.", source_ids=["STAT"])
    assert misdated_figure(right, {"STAT": TABLE}) is None


def test_a_years_change_said_over_the_whole_span_is_misdated():
    from briefroom.report.checks import misdated_figure

    spanned = Claim(text="Trips on the Orvik tramway increased by 6 percent from 2022 to 2025.", source_ids=["STAT"])
    problem = misdated_figure(spanned, {"STAT": TABLE})
    assert problem is not None and "a change from 2024" in problem.detail
    year = Claim(text="Trips on the Orvik tramway rose 6 percent in 2025, to 9.4 million.", source_ids=["STAT"])
    assert misdated_figure(year, {"STAT": TABLE}) is None
    levels = Claim(text="Trips rose from 6.1 million in 2022 to 9.4 million in 2025.", source_ids=["STAT"])
    assert misdated_figure(levels, {"STAT": TABLE}) is None  # levels, not a change: read clause by clause


def test_by_how_much_is_led_by_the_difference_between_the_things_compared_not_a_change_on_a_year():
    from briefroom.report.asking import differs_between
    from briefroom.report.outline import Scorer, leads

    question = "Which cost less per megawatt-hour in Varden in 2025, new wind or new solar, and by how much?"
    solar = "New solar parks in Varden delivered power at a cost of 41.7 euros per megawatt-hour in 2025, down from " \
            "45.9 euros in 2024."
    wind = "New wind farms in Varden delivered power at a cost of 48.2 euros per megawatt-hour in 2025."
    gap = "Solar was therefore the cheaper of the two in Varden in 2025, by 6.5 euros per megawatt-hour."
    assert differs_between(gap) and not differs_between(solar)
    assert differs_between("Rail emitted 143 grams less than a flight per passenger-kilometre.")
    assert not differs_between("Visits rose to 451,300, 3.0 percent more than in 2024.")
    assert not differs_between("The port handled more than 2 million TEU.")
    facts = [Fact(fact_id=f"F{i}", text=t, numbers=(), source_id="REG", found_by="passage", round=1)
             for i, t in enumerate([solar, wind, gap])]
    score = Scorer(question, ["Which cost less per megawatt-hour in Varden in 2025, new wind or new solar",
                              "by how much"], [f.text for f in facts])
    assert leads(facts, "by how much", score, {"REG": "Varden energy regulator"}, set())[0].text == gap


def test_a_sentence_set_in_another_place_by_its_opening_phrase_is_about_another_subject():
    from briefroom.report.outline import Scorer

    question = "Which cost less per megawatt-hour in Varden in 2025, new wind or new solar?"
    other = "In Northmark, Varden's northern neighbour, new wind farms delivered power at 39.4 euros in 2025."
    own = "In Varden, new wind farms delivered power at 48.2 euros per megawatt-hour in 2025."
    score = Scorer(question, [question], [other, own])
    assert score.other_subject(other, question) and not score.other_subject(own, question)
    when = "In March 2025, new wind farms in Varden delivered power at 48.2 euros per megawatt-hour."
    assert not Scorer(question, [question], [other, own, when, "Prices fell in March."]).other_subject(when, question)


def test_a_forecast_stated_as_todays_figure_beside_a_measured_one_is_caught():
    from briefroom.report.checks import forecast_as_fact

    sources = {"REG": "New solar parks delivered power at a levelised cost of 41.7 euros per megawatt-hour in 2025.",
               "OUT": "We forecast that the levelised cost of onshore wind will fall to 44.5 euros by 2030."}
    mixed = Claim(text="Solar costs 41.7 euros per megawatt-hour, while onshore wind costs 44.5 euros.",
                  source_ids=["REG", "OUT"])
    problem = forecast_as_fact(mixed, sources)
    assert problem is not None and problem.kind == "forecast_as_fact"
    assert forecast_as_fact(Claim(text="Solar costs 41.7 euros per megawatt-hour.", source_ids=["REG"]), sources) is None
