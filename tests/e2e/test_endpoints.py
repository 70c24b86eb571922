"""A configured endpoint that is down: one clear line, exit 1, the run directory kept."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from briefroom.cli import app
from briefroom.events import ErrorEvent, RunStart, read_events
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
    events = read_events(out / "run.jsonl")
    assert isinstance(events[0], RunStart) and isinstance(events[-1], ErrorEvent)
    assert (out / "charter.json").is_file()
