"""A misbehaving search tool inside a whole run: the run finishes, honestly, and leaks nothing."""

from __future__ import annotations

import pytest

from briefroom.config import Settings
from briefroom.errors import EngineeringFailure
from briefroom.events import Fallback, RunEnd, ToolResult, read_events
from briefroom.report.checks import markdown_problems
from briefroom.run import ResearchRequest, run_research
from tests.faulty_tools import faulty_search
from tests.secret_samples import samples


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("mode", ["raise", "timeout", "garbage"])
def test_a_search_tool_broken_on_every_call_stops_the_run_naming_it(mode, small_corpus, data_dir, tmp_path):
    # A tool that never works is an error of the run, not a report that found nothing.
    out = tmp_path / "run"
    with pytest.raises(EngineeringFailure, match="local_search"):
        run_research(ResearchRequest(question="How big is the 2026 public cloud market?", corpus=[small_corpus],
                                     out=out, tools={"local_search": faulty_search(mode)}),
                     Settings(model="test", rounds=1, data_dir=data_dir))
    assert not (out / "report.md").exists()
    blob = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    for _, secret in samples()[:10]:
        assert secret.encode() not in blob


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("mode", ["not_found", "huge", "secrets"])
def test_run_survives_a_faulty_search_tool(mode, small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    result = run_research(ResearchRequest(question="How big is the 2026 public cloud market?", corpus=[small_corpus],
                                          out=out, tools={"local_search": faulty_search(mode)}),
                          Settings(model="test", rounds=1, data_dir=data_dir))
    events = read_events(out / "run.jsonl")
    results = [e for e in events if isinstance(e, ToolResult) and e.tool == "local_search"]
    report = (out / "report.md").read_text()
    assert result.state["report"].accepted and isinstance(events[-1], RunEnd)
    if mode == "not_found":
        assert results and all(not r.ok for r in results)
        assert any(isinstance(e, Fallback) for e in events)
        assert "[1]" not in report.split("## Sources")[0]  # nothing to cite, and nothing is cited
    else:
        assert any(r.ok for r in results)
    texts = {"S0000abcd": "Cloud spending grew 21% in 2026."}
    assert [p for p in markdown_problems(report, texts) if p.kind == "unresolved_citation"] == [] or mode != "huge"
    blob = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    for _, secret in samples()[:10]:
        assert secret.encode() not in blob
