"""`--quotes restate`: a quote gives way to the model's rewrite only when the rewrite says the same."""

from __future__ import annotations

import json

import pytest

from briefroom.agents.base import Turn
from briefroom.agents.registry import bus_for, discover
from briefroom.agents.run_context import RunContext
from briefroom.agents.writer import restate_quotes
from briefroom.llm import ModelHandle, ModelPool
from briefroom.protocol.budget import TokenCounter
from briefroom.records import Charter, Claim, DraftSection, Passage, ReportDraft, SourceRecord
from briefroom.report.restate import differs, quotes_of, restated
from briefroom.runlog import RunLog
from tests.fakes import ScriptedChatModel

INSTALLED = "Installers put 1.84 million heat pumps into service across Europe in 2025."
FORECAST = "The association forecasts that sales will reach 2.05 million units in 2026."


@pytest.mark.parametrize(("rewrite", "quote", "why"), [
    ("In 2025, 1.84 million heat pumps were put into service across Europe by installers.", INSTALLED, None),
    ("Installers put 1.84 million heat pumps into service across Europe in 2025.", INSTALLED, "no rewrite"),
    ("According to the survey, installers put 1.84 million heat pumps into service across Europe in 2025.",
     INSTALLED, "the quote copied whole"),  # the quote without its quotation marks
    ("1.84 million heat pumps into service across Europe in 2025.", INSTALLED, "a part of the quote copied"),
    ("In 2025, 1.84 million heat pumps were put into service", INSTALLED, "not a sentence"),
    ("In 2025, 1.94 million heat pumps were put into service across Europe.", INSTALLED,
     "a figure the quote does not give"),
    ("In 2025, 1.84 thousand heat pumps were put into service across Europe.", INSTALLED,
     "a figure the quote does not give"),  # the scale counts
    ("Europe's installers put many heat pumps into service in 2025.", INSTALLED, "a figure of the quote left out"),
    ("In 2024, 1.84 million heat pumps were put into service across Europe.", INSTALLED,
     "other years than the quote's"),
    ("Sales reached 2.05 million units in 2026, the association says.", FORECAST,
     "a forecast or estimate stated otherwise"),
    ("In 2025, 1.84 million heat pumps were sold across Europe.", INSTALLED, "another measure than the quote's"),
])
def test_a_rewrite_says_the_same_as_its_quote_or_says_why_not(rewrite, quote, why):
    assert differs(rewrite, quote) == why


SURVEY = "official statistics or registry: European installer survey"
BRIEF = "analyst: Heat pump market brief"


@pytest.mark.parametrize(("rewrite", "source", "why"), [
    ("The installer survey counts 1.84 million heat pumps put into service across Europe in 2025.", SURVEY, None),
    # an analyst's figure put in another's mouth
    ("According to the newswire, 1.84 million heat pumps went into service across Europe in 2025.", BRIEF,
     "a source the quote's is not ('newswire')"),
    ("The registry counts 1.84 million heat pumps put into service across Europe in 2025.", BRIEF,
     "a source the quote's is not ('registry')"),
])
def test_a_rewrite_names_no_source_but_its_own(rewrite, source, why):
    assert differs(rewrite, INSTALLED, source) == why


def _report() -> ReportDraft:
    quote = Claim(text=f"“{INSTALLED}”", source_ids=["REG"], attribution="European installer survey")
    own = Claim(text="The registry counts commissioned units.", source_ids=["REG"])
    forecast = Claim(text=f"“{FORECAST}”", source_ids=["ASSOC"])
    return ReportDraft.model_construct(
        title="Heat pumps", short_answer=quote, summary=[quote], key_figures=[], omitted=[], not_said=[],
        source_labels={}, sections=[DraftSection.model_construct(heading="Installed", claims=[quote, own, forecast],
                                                                 part=1)])


def test_each_quote_is_shown_once_in_reading_order():
    assert quotes_of(_report()) == [INSTALLED, FORECAST]


def test_a_rewrite_that_says_the_same_and_passes_the_checks_takes_the_quotes_place_everywhere():
    rewrite = "In 2025, installers across Europe put 1.84 million heat pumps into service."
    checked: list[str] = []

    def check(claims):
        checked.extend(c.text for c in claims)
        return {}

    report, refused = restated(_report(), {INSTALLED: rewrite, FORECAST: "Sales reached 2.05 million units in 2026."},
                               check)
    assert report.short_answer.text == rewrite and report.summary[0].text == rewrite
    first, own, forecast = report.sections[0].claims
    assert (first.text, first.source_ids, first.attribution) == (rewrite, ["REG"], "European installer survey")
    assert own.text == "The registry counts commissioned units."
    assert forecast.text == f"“{FORECAST}”"  # its rewrite stated the forecast as a fact
    assert refused == {FORECAST: "a forecast or estimate stated otherwise"}
    assert checked == [rewrite]  # only what says the same goes on to the checks and the judge


def test_a_rewrite_the_checks_fail_keeps_its_quote():
    rewrite = "In 2025, installers across Europe put 1.84 million heat pumps into service."
    report, refused = restated(_report(), {INSTALLED: rewrite}, lambda claims: {0: "the passages do not say it"})
    assert report.short_answer.text == f"“{INSTALLED}”" and refused == {INSTALLED: "the passages do not say it"}


def _writer_turn(tmp_path, replies: list[str]) -> tuple[Turn, ScriptedChatModel, RunLog]:
    writer = next(r for r in discover() if r.name == "writer")
    model = ScriptedChatModel(replies, name="writer")
    pool = ModelPool({"writer": ModelHandle("writer", "scripted", "scripted", model, "json_object_schema", 32_000,
                                            label="scripted")})
    log = RunLog(tmp_path / "run.jsonl")
    ctx = RunContext(bus=bus_for([writer]), models=pool, counter=TokenCounter(), log=log, tools={})
    texts = {"REG": f"The council compiles its count from commissioning records. {INSTALLED}", "ASSOC": FORECAST}
    titles = {"REG": "European installer survey: heat pump installations in 2025", "ASSOC": "Heat pump outlook 2026"}
    sources = {sid: SourceRecord(source_id=sid, title=titles[sid], path=f"corpus/{sid}.md",
                                 passages=(Passage(chunk_id=f"{sid}:0", start=0, end=len(t), text=t),))
               for sid, t in texts.items()}
    state = {"charter": Charter(goal="How many heat pumps were installed in Europe in 2025?",
                                acceptance_criteria=("cited",), roles=("writer",), max_rounds=1),
             "round": 1, "whiteboard": [], "seen": {}, "sources": sources}
    turn = Turn(role=writer, state=state, ctx=ctx)
    turn._texts = texts
    return turn, model, log


def test_the_writer_asks_once_judges_the_rewrites_and_logs_each_quote_it_keeps(tmp_path):
    rewrite = "In 2025, installers across Europe commissioned 1.84 million heat pumps."  # a new word: judged
    rewrites = {"rewrites": [{"sentence_id": "q1", "text": rewrite},
                             {"sentence_id": "q2", "text": "Sales reached 2.05 million units in 2026."}]}
    judged = {"verdicts": [{"sentence_id": "s1", "verdict": "supported", "reason": "the survey says so"}]}
    turn, model, log = _writer_turn(tmp_path, [json.dumps(rewrites), json.dumps(judged)])
    report = restate_quotes(turn, _report())
    log.close()
    model.assert_done()
    # each quote after who gives it, which the rewrite begins with
    assert f"q1 [official statistics or registry: {titles_of(turn)['REG']}]: {INSTALLED}" in \
        model.calls[0]["messages"][-1].content
    assert report.short_answer.text == rewrite and report.sections[0].claims[2].text == f"“{FORECAST}”"
    kept = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    assert [e["repair"] for e in kept if e.get("kind") == "report_repair" or "repair" in e] == [
        f"kept the quote “{FORECAST}”: its rewrite: a forecast or estimate stated otherwise"]
    assert "restated 1 of 2 quote(s) in the model's words" in turn.notes


def titles_of(turn: Turn) -> dict[str, str]:
    return {sid: record.title for sid, record in turn.all_sources().items()}


def test_a_reply_that_is_no_json_keeps_every_quote(tmp_path):
    turn, model, log = _writer_turn(tmp_path, ["not json"] * 3)
    report = restate_quotes(turn, _report())
    log.close()
    assert report == _report()
