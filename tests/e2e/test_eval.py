"""`briefroom eval` end to end: shipped recordings scored offline, and a live comparison."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from briefroom.cli import app
from tests.conftest import SCENARIOS

runner = CliRunner()
CLOUD = SCENARIOS / "cloud-market"


def literal_recall(report: str, answer_key: list[dict]) -> float:
    body = report.split("\n## Sources\n")[0].lower()
    return sum(any(s.lower() in body for s in k["any"]) for k in answer_key) / len(answer_key)


def test_a_recorded_scenario_is_scored_offline_from_its_cassette(tmp_path, data_dir):
    out = tmp_path / "eval"
    result = runner.invoke(app, ["eval", str(CLOUD), "--json", "--out", str(out), "--data-dir", str(data_dir),
                                 "--html", str(tmp_path / "eval.html")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    run = data["runs"][0]
    spec = yaml.safe_load((CLOUD / "scenario.yaml").read_text())
    recorded = (CLOUD / "report.md").read_text()
    assert (out / "cloud-market-layered-1" / "report.md").read_text() == recorded  # replayed, not re-generated
    assert run["score"]["recall"] == literal_recall(recorded, spec["answer_key"])
    assert run["calls"] == len((CLOUD / "cassette.jsonl").read_text().splitlines())
    assert data["summary"]["layered"]["unretrieved_citations"] == 0
    assert set(run["tokens"]) >= {"planner", "searcher", "writer"}
    page = (tmp_path / "eval.html").read_text()
    assert "<svg" in page and "cloud-market" in page
    # a bar above what was measured fails the run; one at it passes
    recall = data["summary"]["layered"]["recall"]
    too_high = runner.invoke(app, ["eval", str(CLOUD), "--out", str(tmp_path / "e2"), "--data-dir", str(data_dir),
                                   "--min-recall", str(min(1.0, recall + 0.01)), "-q"])
    assert too_high.exit_code == (1 if recall < 1.0 else 0)


def test_live_runs_compare_layered_and_naive_context(tmp_path, data_dir):
    result = runner.invoke(app, ["eval", str(CLOUD), "--model", "test", "--context", "layered", "--context", "naive",
                                 "--json", "--out", str(tmp_path / "live"), "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["summary"]
    assert set(summary) == {"layered", "naive"}
    # the design's claim, on the deterministic provider: less context for the same work
    assert summary["layered"]["prompt_tokens"] < summary["naive"]["prompt_tokens"]
    assert summary["layered"]["calls"] == summary["naive"]["calls"]


def test_bad_eval_input_is_one_line(tmp_path):
    missing = runner.invoke(app, ["eval", str(tmp_path / "nope")])
    assert missing.exit_code == 1 and "no such scenario folder" in missing.output
    wrong = runner.invoke(app, ["eval", str(CLOUD), "--model", "test", "--context", "everything"])
    assert wrong.exit_code == 2 and "layered or naive" in wrong.output
