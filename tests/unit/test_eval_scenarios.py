"""The shipped evaluation suite holds together: enough scenarios in both splits, and
every figure a scenario names stands in its corpus (a key fact nobody could find, or a
trap nobody could fall for, would make a metric that cannot move)."""

from __future__ import annotations

from pathlib import Path

import pytest

from briefroom.corpus.documents import load_corpus
from briefroom.evaluation.suite import discover
from briefroom.scenario import Scenario
from tests.conftest import SCENARIOS

SUITE = discover([SCENARIOS])
IDS = [s.name for _, s in SUITE]


def test_the_suite_is_big_enough_and_split():
    splits = [s.split for _, s in SUITE]
    assert len(SUITE) >= 16 and splits.count("dev") >= 5 and splits.count("test") >= 8
    assert {s.name for _, s in SUITE if s.split == "dev"} >= {"cloud-market", "heat-pumps-sold-vs-installed",
                                                              "wind-multipart", "zh-rail-ridership"}
    kinds = {k for _, s in SUITE for k in s.trap}
    assert kinds == {"credibility", "measure", "time", "subject"}
    assert max(len(s.parts) for _, s in SUITE) >= 6 and any(len(s.parts) == 5 for _, s in SUITE)
    assert sum(s.language == "zh" for _, s in SUITE) >= 4


def test_a_long_document_is_in_the_suite():
    longest = max(len(p.read_text(encoding="utf-8").split()) for p in SCENARIOS.glob("*/corpus/*.md"))
    assert longest >= 5000


@pytest.mark.parametrize(("folder", "scenario"), SUITE, ids=IDS)
def test_every_named_figure_is_in_the_corpus(folder: Path, scenario: Scenario):
    corpus = " ".join(d.text for d in load_corpus(scenario.corpus_dir(folder))).lower()
    squeezed = "".join(corpus.split())
    found = lambda s: s.lower() in corpus or "".join(s.lower().split()) in squeezed  # noqa: E731
    for key in scenario.answer_key:
        assert any(found(s) for s in key.any), key.name
        assert key.part <= max(len(scenario.parts), 1), key.name
    for trap in scenario.must_not:
        assert found(trap), trap
    assert not scenario.authoritative or any(found(s) for s in scenario.authoritative)
    for fact in scenario.expected_facts:
        where = folder / fact.source if fact.source else None
        text = where.read_text(encoding="utf-8") if where else corpus
        assert fact.text in text, fact.text
    assert scenario.rounds >= 1 and scenario.split in ("dev", "test")


def test_new_scenarios_name_their_traps():
    # the scenarios written for this suite say which traps they set; recording one changes nothing of that
    written_for_it = [s for _, s in SUITE if s.trap]
    assert len(written_for_it) >= 7
    for s in written_for_it:  # each says what it tests and how hard
        assert s.trap and s.must_not and s.parts and s.rounds == 2 and s.expected_facts, s.name
        assert all(f.source for f in s.expected_facts), s.name
        docs = list((SCENARIOS / s.name / "corpus").iterdir())
        assert 3 <= len(docs) <= 8, s.name


def test_a_credibility_trap_without_its_authoritative_figure_is_refused(tmp_path):
    from briefroom.errors import ConfigError

    (tmp_path / "scenario.yaml").write_text("name: x\nquestion: q?\ntrap: credibility\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="authoritative"):
        Scenario.load(tmp_path)
    (tmp_path / "scenario.yaml").write_text("name: x\nquestion: q?\nsplit: holdout\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="split"):
        Scenario.load(tmp_path)
