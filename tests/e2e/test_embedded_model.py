"""One real run on the embedded SmolLM2 model behind llama.cpp's OpenAI-compatible server.

The model is tiny and often wrong; the test checks what briefroom promises regardless:
a report whose every citation resolves and whose every number is in a cited source.
"""

from __future__ import annotations

import socket

import pytest

from briefroom.config import Settings
from briefroom.corpus.documents import load_corpus
from briefroom.events import LlmCall, ModelServer, read_events
from briefroom.report.checks import markdown_problems
from briefroom.run import ResearchRequest, run_research
from tests.conftest import SCENARIOS

pytestmark = pytest.mark.e2e


def test_embedded_model_writes_a_verified_report(tmp_path, data_dir):
    corpus = SCENARIOS / "cloud-market" / "corpus"
    out = tmp_path / "run"
    result = run_research(ResearchRequest(question="How big is the 2026 public cloud market?", corpus=[corpus],
                                          out=out), Settings(rounds=1, data_dir=data_dir))
    report = (out / "report.md").read_text()
    assert "embedded smollm2-135m-instruct" in report
    texts = {d.source_id: d.text for d in load_corpus(corpus)}
    assert markdown_problems(report, texts) == []
    assert "## Sources" in report and "[1]" in report
    events = read_events(out / "run.jsonl")
    calls = [e for e in events if isinstance(e, LlmCall)]
    assert calls and all(c.provider == "embedded" for c in calls)
    assert result.state["report"].accepted
    # the CLI-owned server was stopped: nothing listens on its port any more
    url = next(e.base_url for e in events if isinstance(e, ModelServer))
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
