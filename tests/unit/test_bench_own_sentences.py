"""bench/own_sentences: the model's own sentences of recorded reports counted per split,
once per report, with the hand check's verdicts and what is still unchecked."""

from __future__ import annotations

import shutil

import pytest

from bench.own_sentences import count, read_checks
from tests.conftest import SCENARIOS

HEAT = "heat-pumps-sold-vs-installed"
SAID = "Europe's installers commissioned 1.84 million heat pumps during 2025."
INVENTED = "Europe's installers commissioned 9.99 million heat pumps during 2025."


@pytest.fixture
def suite(tmp_path):
    folder = tmp_path / "scenarios" / HEAT
    shutil.copytree(SCENARIOS / HEAT, folder, ignore=shutil.ignore_patterns("recordings"))
    report = (folder / "report.md").read_text(encoding="utf-8")
    before, sources = report.split("\n## Sources\n")
    # [1] is the installer survey in the shipped report; the sentence said twice counts once
    extra = f"\n{SAID} [1]\n{SAID} [1]\n{INVENTED} [1]\n"
    (folder / "report.md").write_text(before.rstrip() + "\n" + extra + "\n## Sources\n" + sources, encoding="utf-8")
    return tmp_path / "scenarios"


def test_own_sentences_are_counted_once_with_the_hand_checks_verdicts(suite):
    assert "[1] European installer survey" in (suite / HEAT / "report.md").read_text(encoding="utf-8")
    checks = {("default", HEAT, SAID): "supported"}
    split = count(None, scenarios=suite, checks=checks)["dev"]
    assert (split.reports, split.own, split.own_supported_by_code) == (1, 2, 1)
    assert (split.checked, split.unsupported_by_hand) == (1, 0)
    [left] = split.unchecked
    assert left["sentence"] == INVENTED and left["supported_by_code"] is False
    assert any("1.84 million" in s for s in left["closest"])  # the source sentence to read beside it
    found = count(None, scenarios=suite, checks={("default", HEAT, INVENTED): "unsupported"})["dev"]
    assert (found.checked, found.unsupported_by_hand, len(found.unchecked)) == (1, 1, 1)
    # another model's recordings are read only when asked for, and this copy has none
    assert count("qwen2.5-coder-1.5b", scenarios=suite, checks={}) == {}


def test_a_verdict_that_is_neither_word_is_refused(tmp_path):
    bad = tmp_path / "checks.tsv"
    bad.write_text("recording\tscenario\tsentence\tverdict\tnote\ndefault\tx\tA.\tmostly\t\n", encoding="utf-8")
    with pytest.raises(ValueError, match="verdict must be one of"):
        read_checks(bad)


def test_every_shipped_verdict_reads_a_sentence_its_report_still_has():
    # a re-recording that rewrote a report leaves its old verdicts behind: they would count
    # a hand check of sentences no report holds any more
    from bench.own_sentences import CHECKS, DEFAULT
    from briefroom.scenario import recording_of

    checks = read_checks(CHECKS)
    assert checks
    for (recording, scenario, sentence), _ in checks.items():
        folder = recording_of(SCENARIOS / scenario, None if recording == DEFAULT else recording)
        assert sentence in (folder / "report.md").read_text(encoding="utf-8"), (recording, scenario, sentence)
