"""`briefroom inspect`: a table per call and an offline HTML page."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from briefroom.cli import app
from briefroom.config import Settings
from briefroom.errors import ConfigError
from briefroom.run import ResearchRequest, run_research

runner = CliRunner()


def test_inspect_table_json_and_html(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    run_research(ResearchRequest(question="How big is the 2026 public cloud market?", corpus=[small_corpus], out=out),
                 Settings(model="test", rounds=1, data_dir=data_dir))
    calls = [json.loads(line) for line in (out / "run.jsonl").read_text().splitlines()
             if json.loads(line)["event"] == "llm_call"]
    result = runner.invoke(app, ["inspect", str(out), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["agent"] for r in rows] == [c["agent"] for c in calls]
    for row, call in zip(rows, calls):
        assert sum(row["sections"].values()) == call["prompt_tokens"]  # sections account for every token
        assert row["prompt_tokens"] <= row["budget"]
    page = tmp_path / "run.html"
    result = runner.invoke(app, ["inspect", str(out), "--html", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert text.startswith("<!doctype html>") and "<svg" in text
    assert len(re.findall(r"<rect ", text)) >= len(calls)  # at least one segment per call
    assert not re.search(r"(src|href)=\"https?://", text)  # opens offline: nothing fetched
    assert "planner" in text and "writer" in text


def test_inspect_errors_are_one_line(tmp_path):
    result = runner.invoke(app, ["inspect", str(tmp_path / "missing")])
    assert result.exit_code == 1 and "run directory not found" in result.output
    (tmp_path / "run.jsonl").write_text('{"event": "llm_call"}\n{oops\n')
    result = runner.invoke(app, ["inspect", str(tmp_path)])
    assert result.exit_code == 1 and "run.jsonl:2" in result.output


def test_a_log_cut_short_by_a_kill_still_loads_and_a_corrupt_line_does_not(tmp_path):
    from briefroom.inspect import load_events

    (tmp_path / "run.jsonl").write_text('{"event": "run_start", "seq": 1}\n{"event": "llm_ca')  # SIGKILL mid-write
    assert [e["event"] for e in load_events(tmp_path)] == ["run_start"]
    (tmp_path / "run.jsonl").write_text('{"event": "run_start", "seq": 1}\n{"event": "llm_ca\n')
    with pytest.raises(ConfigError, match="run.jsonl:2"):
        load_events(tmp_path)
