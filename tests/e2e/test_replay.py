"""Every shipped scenario replays to its recorded report, with no model at all."""

from __future__ import annotations

import shutil

import pytest
import yaml
from typer.testing import CliRunner

from briefroom.cli import app
from tests.conftest import SCENARIOS

runner = CliRunner()
SHIPPED = sorted(p for p in SCENARIOS.iterdir() if (p / "scenario.yaml").is_file())
RECORDED = [p for p in SHIPPED if (p / "cassette.jsonl").is_file()]
# Scenarios scored live only (`briefroom eval --model ...`) until they are recorded with
# the embedded model; named here so a lost recording fails. Every shipped one is recorded.
LIVE_ONLY: set[str] = set()


def test_there_is_a_shipped_scenario():
    assert SHIPPED, "scenarios/ holds no scenario"


def test_every_scenario_is_recorded_or_named_as_live_only():
    assert {p.name for p in SHIPPED if p not in RECORDED} == LIVE_ONLY


@pytest.mark.parametrize("scenario", RECORDED, ids=[p.name for p in RECORDED])
def test_replay_check_reproduces_the_recorded_report(scenario, tmp_path, data_dir):
    result = runner.invoke(app, ["replay", str(scenario), "--check", "--out", str(tmp_path / "run"),
                                 "--data-dir", str(data_dir), "-q"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "report.md").read_text() == (scenario / "report.md").read_text()


@pytest.mark.parametrize("scenario", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_scenario_corpus_is_substantial(scenario):
    docs = [p for p in (scenario / "corpus").rglob("*") if p.is_file()]
    spec = yaml.safe_load((scenario / "scenario.yaml").read_text())
    # the demo's corpus is the largest hand-written one; every other has the documents that
    # answer it and at least one that only looks as if it did
    assert len(docs) >= (15 if scenario.name == "cloud-market" else 4)
    assert spec.get("recorded_with") or scenario.name in LIVE_ONLY
    assert spec.get("expected_facts") or spec.get("answer_key") or spec.get("unanswerable")
    corpus_text = " ".join(p.read_text(errors="replace") for p in docs)
    for fact in spec.get("expected_facts") or []:
        assert fact["text"] in corpus_text
    for key in spec.get("answer_key") or []:  # every key fact is in the corpus, in at least one spelling
        assert any(spelling.lower() in corpus_text.lower() for spelling in key["any"]), key["name"]
    for trap in spec.get("must_not") or []:
        assert trap in corpus_text, trap


def test_changed_prompt_diverges_with_a_diff(tmp_path, data_dir):
    scenario = tmp_path / "changed"
    shutil.copytree(RECORDED[0], scenario)
    spec = yaml.safe_load((scenario / "scenario.yaml").read_text())
    spec["question"] = spec["question"] + " Also, what about Europe?"
    (scenario / "scenario.yaml").write_text(yaml.safe_dump(spec))
    result = runner.invoke(app, ["replay", str(scenario), "--check", "--out", str(tmp_path / "run"),
                                 "--data-dir", str(data_dir), "-q"])
    assert result.exit_code == 1
    assert "replay diverged at planner call #1" in result.output
    assert "+Goal:" in result.output and "-Goal:" in result.output
