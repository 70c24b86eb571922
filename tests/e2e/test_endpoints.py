"""A configured endpoint that is down: one clear line, exit 1, the run directory kept."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from briefroom.cli import app
from briefroom.models.embedded import free_port

pytestmark = pytest.mark.e2e


def test_dead_endpoint_fails_cleanly(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens here
    result = CliRunner().invoke(app, ["research", "How big is the cloud market?", "--corpus", str(small_corpus),
                                      "--model", "some-model", "--base-url", url, "--out", str(out),
                                      "--data-dir", str(data_dir), "-q"])
    assert result.exit_code == 1
    assert "openai model 'some-model' failed for planner" in result.output
    assert "Traceback" not in result.output
    events = [json.loads(line) for line in (out / "run.jsonl").read_text().splitlines()]
    assert events[0]["event"] == "run_start" and events[-1]["event"] == "error"
    assert (out / "charter.json").is_file()
