"""A role's calls share their stable prefix: what a server's prompt cache can reuse."""

from __future__ import annotations

from briefroom.config import Settings
from briefroom.events import LlmCall, read_events
from briefroom.run import ResearchRequest, run_research

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"


def test_the_searchers_tool_calls_and_answers_share_one_system_message(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out),
                 Settings(model="test", rounds=1, data_dir=data_dir))
    calls = [e for e in read_events(out / "run.jsonl") if isinstance(e, LlmCall) and e.agent.startswith("searcher")]
    purposes = {c.purpose for c in calls}
    assert "tools" in purposes and "ask Findings" in purposes
    systems = {c.messages[0].content for c in calls}
    assert len({c.prefix_hash for c in calls}) == 1 and len(systems) == 1
    system = systems.pop()
    # both halves of the stable part are there on every call: the tools and the answer's schema
    assert "## Tools" in system and '"local_search"' in system
    assert "## Output format" in system and '"Findings"' in system
