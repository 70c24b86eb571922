"""Another model's recording of a scenario, kept in `recordings/TAG/`: recorded from the
CLI, replayed to its own report, scored by the scenario's answer key with `eval
--recording TAG`, and every shipped one keeps its numbers and citations checked."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from typer.testing import CliRunner

from briefroom.cli import app
from tests.conftest import SCENARIOS
from tests.e2e.test_eval import literal_recall

runner = CliRunner()
PORT = SCENARIOS / "port-forecast-vs-actual"
TAG = "test-provider"
SHIPPED = sorted(p for p in SCENARIOS.glob("*/recordings/*") if (p / "cassette.jsonl").is_file())
SHIPPED_TAGS = sorted({p.name for p in SHIPPED})
LARGER = "qwen2.5-coder-1.5b"  # BENCHMARKS.md's figures for it are these recordings' replays


def record(scenario, dest, data_dir, out, question=None, corpus=None):
    spec = yaml.safe_load((scenario / "scenario.yaml").read_text(encoding="utf-8"))
    return runner.invoke(app, ["research", question or spec["question"], "--corpus", str(corpus or scenario / "corpus"),
                               "--rounds", str(spec["rounds"]), "--model", "test", "--out", str(out),
                               "--record", str(dest), "--no-memory", "--data-dir", str(data_dir), "-q"])


@pytest.fixture
def suite(tmp_path):
    folder = tmp_path / "suite" / PORT.name
    shutil.copytree(PORT, folder, ignore=shutil.ignore_patterns("recordings"))
    return folder


def test_a_model_recorded_beside_the_scenario_replays_and_is_scored_by_its_answer_key(suite, tmp_path, data_dir):
    own = {name: (suite / name).read_bytes() for name in ("scenario.yaml", "cassette.jsonl", "report.md")}
    dest = suite / "recordings" / TAG
    made = record(suite, dest, data_dir, tmp_path / "rec")
    assert made.exit_code == 0, made.output
    # the scenario's own recording and answer key are untouched; the new one says how it ran
    assert {name: (suite / name).read_bytes() for name in own} == own
    settings = yaml.safe_load((dest / "recording.yaml").read_text(encoding="utf-8"))
    assert settings["recorded_with"] != yaml.safe_load(own["scenario.yaml"])["recorded_with"]
    assert settings["rounds"] == 2 and not (dest / "corpus").exists()

    replayed = runner.invoke(app, ["replay", str(dest), "--check", "--out", str(tmp_path / "replay"),
                                   "--data-dir", str(data_dir), "-q"])
    assert replayed.exit_code == 0, replayed.output

    out = tmp_path / "eval"
    scored = runner.invoke(app, ["eval", str(suite.parent), "--recording", TAG, "--json", "--out", str(out),
                                 "--data-dir", str(data_dir)])
    assert scored.exit_code == 0, scored.output
    run = json.loads(scored.stdout)["runs"][0]
    report = (dest / "report.md").read_text(encoding="utf-8")
    assert (out / f"{PORT.name}-layered-1" / "report.md").read_text(encoding="utf-8") == report
    assert run["model"] == settings["recorded_with"] and run["split"] == "test"
    assert run["score"]["recall"] == literal_recall(report, yaml.safe_load(own["scenario.yaml"])["answer_key"])
    # without --recording the scenario's own recording is what replays
    default = runner.invoke(app, ["eval", str(suite.parent), "--json", "--out", str(tmp_path / "own"),
                                  "--data-dir", str(data_dir)])
    assert default.exit_code == 0, default.output
    assert (tmp_path / "own" / f"{PORT.name}-layered-1" / "report.md").read_bytes() == own["report.md"]


def test_a_recording_that_would_answer_another_question_is_refused_before_the_run(suite, tmp_path, data_dir):
    dest = suite / "recordings" / TAG
    other_question = record(suite, dest, data_dir, tmp_path / "q", question="How many ferries sailed in 2025?")
    assert other_question.exit_code == 2 and "ask its question" in other_question.output
    other_corpus = record(suite, dest, data_dir, tmp_path / "c", corpus=SCENARIOS / "cloud-market" / "corpus")
    assert other_corpus.exit_code == 2 and "give --corpus" in other_corpus.output
    assert not dest.exists() and not (tmp_path / "q").exists()


def test_bad_recording_input_is_one_line(suite, tmp_path, data_dir):
    none = runner.invoke(app, ["eval", str(suite), "--recording", "nobody", "--data-dir", str(data_dir)])
    assert none.exit_code == 1 and "no recording by nobody to replay" in none.output
    both = runner.invoke(app, ["eval", str(suite), "--recording", TAG, "--model", "test"])
    assert both.exit_code == 2 and "give one of them" in both.output
    broken = suite / "recordings" / "broken"
    broken.mkdir(parents=True)
    (broken / "recording.yaml").write_text("recorded_with: [unclosed\n", encoding="utf-8")
    shutil.copy(suite / "cassette.jsonl", broken / "cassette.jsonl")
    replayed = runner.invoke(app, ["replay", str(broken), "--out", str(tmp_path / "b"), "--data-dir", str(data_dir)])
    assert replayed.exit_code == 1 and "not a recording's settings" in replayed.output
    assert "Traceback" not in replayed.output


def test_every_test_scenario_carries_the_larger_models_recording():
    # the README and BENCHMARKS.md give its test-split figures as these recordings' replays
    of_larger = {p.parents[1].name for p in SHIPPED if p.name == LARGER}
    tests = {p.name for p in SCENARIOS.iterdir() if (p / "scenario.yaml").is_file()
             and yaml.safe_load((p / "scenario.yaml").read_text(encoding="utf-8"))["split"] == "test"}
    assert tests and tests <= of_larger, f"no recordings/{LARGER} in: {sorted(tests - of_larger)}"


@pytest.mark.parametrize("recording", SHIPPED, ids=[f"{p.parents[1].name}@{p.name}" for p in SHIPPED])
def test_every_shipped_recording_of_another_model_reproduces_its_report(recording, tmp_path, data_dir):
    result = runner.invoke(app, ["replay", str(recording), "--check", "--out", str(tmp_path / "run"),
                                 "--data-dir", str(data_dir), "-q"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("tag", SHIPPED_TAGS)
def test_another_models_reports_keep_every_number_and_citation_checked(tag, tmp_path, data_dir):
    result = runner.invoke(app, ["eval", str(SCENARIOS), "--recording", tag, "--max-unsupported", "0",
                                 "--max-unretrieved", "0", "--json", "--out", str(tmp_path / "eval"),
                                 "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    runs = json.loads(result.stdout)["runs"]
    assert len(runs) == sum(p.name == tag for p in SHIPPED) and all(r["score"] for r in runs)
