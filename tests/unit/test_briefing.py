"""What the Writer's model writes from: each part's verified sentences, the authoritative
figure of the measure asked first, with who says each (`report.briefing`)."""

import dataclasses
import json

from briefroom.agents.base import Turn
from briefroom.events import Fallback
from briefroom.records import Fact, Passage, SourceRecord
from briefroom.report.briefing import evidence_by_part, evidence_lines, evidence_sources
from briefroom.report.source_kinds import profiles
from tests.fakes import ScriptedChatModel
from tests.unit.test_memory_decision_points import (
    DRAFT,
    S_GROWTH,
    context,
    memory_off,
    prompt_text,
    report_of,
    role_named,
    writer_state,
    writer_turn,
)

QUESTION = "How many heat pumps were installed in Glenmark in 2025, and why do sales figures differ?"
PARTS = ["How many heat pumps were installed in Glenmark in 2025", "why do sales figures differ"]
REGISTRY = "Installers put 0.84 million heat pumps into service in Glenmark in 2025, according to the national register."
BLOG = "By my own estimate, Glenmark installed 1.2 million heat pumps in 2025."
SOLD = "Manufacturers sold 1.31 million heat pumps into Glenmark in 2025."
WHY = "Sales differ from installations because distributors added 0.3 million units to their stock in 2025."
OTHER = "The average price of a heat pump in Glenmark was 9,800 euros in 2025."


def record(sid: str, title: str, *sentences: str) -> SourceRecord:
    text = " ".join(sentences)
    return SourceRecord(source_id=sid, title=title, path=f"corpus/{sid}.md",
                        passages=(Passage(chunk_id=f"{sid}:0", start=0, end=len(text), text=text),))


SOURCES = {
    "S00000001": record("S00000001", "National heat pump register: installations in 2025", REGISTRY),
    "S00000002": record("S00000002", "Opinion: the heat pump boom is bigger than anyone admits", BLOG),
    "S00000003": record("S00000003", "Why heat pump sales and installations differ", SOLD, WHY, OTHER),
}


def fact(text: str, sid: str) -> Fact:
    return Fact(fact_id=f"F{abs(hash(text)) % 10**8}", text=text, numbers=(), source_id=sid, found_by="passage",
                round=1)


FACTS = [fact(BLOG, "S00000002"), fact(SOLD, "S00000003"), fact(WHY, "S00000003"), fact(OTHER, "S00000003"),
         fact(REGISTRY, "S00000001")]


def test_each_part_is_shown_the_authoritative_figure_of_its_measure_first():
    first, why = evidence_by_part(FACTS, PARTS, QUESTION, SOURCES, profiles(SOURCES), "en")
    # the register first, not the blog that scores higher or the sales; the figures that differ
    # next, for the model to set beside it; other sentences of the subject only after them
    assert first.part == PARTS[0] and [f.text for f in first.facts[:3]] == [REGISTRY, BLOG, SOLD]
    assert WHY in {f.text for f in why.facts}


def test_a_part_shows_at_most_the_sentences_asked_for():
    evidence = evidence_by_part(FACTS, PARTS, QUESTION, SOURCES, profiles(SOURCES), "en", per_part=1)
    assert [len(e.facts) for e in evidence] == [1, 1]


def test_a_sentence_about_another_place_is_not_shown_for_the_part_however_well_it_scores():
    # the desalination regression: Velmora's cost was shown as evidence for Port Karavel's, and
    # the model wrote it as Port Karavel's
    question = "What did a cubic metre of desalinated water cost at Port Karavel in 2025?"
    asked = "Port Karavel's desalination plant produced 41 million cubic metres in 2025."
    velmora = "The average production cost of desalinated water in Velmora was 0.83 USD per cubic metre in 2025."
    sources = {"S00000001": record("S00000001", "Port Karavel water works 2025", asked),
               "S00000002": record("S00000002", "Desalination costs in the region", velmora)}
    facts = [fact(velmora, "S00000002"), fact(asked, "S00000001")]
    [part] = evidence_by_part(facts, [question], question, sources, profiles(sources), "en")
    assert velmora not in [f.text for f in part.facts]


def test_a_sentence_of_a_source_not_retrieved_is_not_shown():
    stray = fact("Glenmark installed 0.5 million heat pumps in 2025.", "S00000009")
    (first, _) = evidence_by_part([stray, *FACTS], PARTS, QUESTION, SOURCES, profiles(SOURCES), "en")
    assert stray.text not in {f.text for f in first.facts}


def test_a_parts_lines_name_each_sentences_source_and_kind_and_say_when_it_has_none():
    kinds = profiles(SOURCES)
    evidence = evidence_by_part(FACTS, [*PARTS, "what colour is the sky on Mars"], QUESTION, SOURCES, kinds, "en")
    registry_kind = kinds["S00000001"].label("en")
    assert evidence_lines(evidence[0], kinds, "en").startswith(f"- [S00000001, {registry_kind}] {REGISTRY}\n")
    assert evidence_lines(evidence[2], kinds, "en") == "- (no verified sentence answers this part)"
    assert evidence_sources(evidence)[0] == "S00000001"


def test_the_writer_asks_for_each_part_with_evidence_from_that_evidence_and_may_cite_a_source_no_finding_named():
    state = writer_state()
    spending = "Public cloud spending will reach 723 billion USD in 2026, the analysts expect."
    state["sources"] = {**state["sources"], "S0000cccc": record("S0000cccc", "Cloud spending outlook", spending)}
    model = ScriptedChatModel([DRAFT, DRAFT])
    writer_turn(state, memory_off(), model)
    first, second = prompt_text(model, 0), prompt_text(model, 1)
    assert "1. How big will public cloud spending be in 2026" in first and "- [S0000cccc, " in first
    assert "1. which provider grew fastest" in second and f"- [{S_GROWTH}, " in second
    assert spending not in second.split("## Current task")[-1]  # each part's own evidence, not another's
    assert "S0000cccc" in json.dumps(model.calls[0]["kwargs"]["response_format"]["schema"])  # citable


def test_a_revision_that_does_not_fit_the_writers_budget_is_not_asked_and_the_run_goes_on():
    # a small model's section of eight long sentences, each with a figure no source gives:
    # the list sent back outgrows the budget; the first section stands, its failures repaired
    filler = " ".join(["according to every provider's own very long annual statement"] * 60)
    bad = {"heading": "Provider growth",
           "claims": [{"text": f"Azure grew {90 + n} percent, {filler}.", "source_ids": [S_GROWTH]} for n in range(8)]}
    model = ScriptedChatModel([bad, bad, bad])
    writer = dataclasses.replace(role_named("writer"), budget_tokens=2500)
    turn = Turn(role=writer, state=writer_state(), ctx=context("writer", model, memory_off()))
    writer.step(turn)
    assert not any("could not be verified" in prompt_text(model, n) for n in range(len(model.calls)))
    (fallback,) = [e for e in turn.ctx.log.events if isinstance(e, Fallback) and "not sent back" in e.reason]
    assert "must-keep context" in fallback.reason
    growth = report_of(turn).draft.sections[1].claims
    assert growth and all("Azure grew 9" not in c.text for c in growth)  # the failures were quoted or dropped
