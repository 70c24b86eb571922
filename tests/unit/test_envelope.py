"""Offloading large tool results: pointer + summary + size in the prompt, drill-down tool."""

from __future__ import annotations

import json

import pytest

from briefroom.corpus.tools import LocalSearchResult, SearchHit
from briefroom.errors import EngineeringFailure
from briefroom.protocol.artifacts import ArtifactStore
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.envelope import envelope
from briefroom.protocol.prompt_assembly import DATA_BLOCK
from briefroom.protocol.tools import ReadArtifactArgs, ToolOutcome, artifact_tool, run_tool


def big_outcome(n: int = 12) -> ToolOutcome:
    hits = [SearchHit(source_id=f"S{i:08x}", chunk_id=f"S{i:08x}:0", title=f"Doc {i}", start=0, end=400,
                      text=f"Passage {i}: spending grew {i}% in 2026. " * 10, score=0.5) for i in range(n)]
    return ToolOutcome("call_7", "local_search", {"query": "q"}, LocalSearchResult(hits=hits), None)


def test_large_results_are_offloaded_with_pointer_summary_and_size(tmp_path):
    store = ArtifactStore(tmp_path / "artifacts")
    env = envelope(big_outcome(), TokenCounter(), store=store)
    assert env.artifact and env.artifact.startswith("art:")
    assert env.tool_call_id == "call_7"
    shown = json.loads(DATA_BLOCK.fullmatch(env.text).group(4))
    assert shown["artifact"] == env.artifact and shown["bytes"] == env.full_bytes > 2048
    assert shown["summary"]["hits_count"] == 12 and len(shown["summary"]["hits_top"]) == 3
    assert len(env.text.encode()) < env.full_bytes / 3
    again = envelope(big_outcome(), TokenCounter(), store=store)
    assert again.artifact == env.artifact and len(list((tmp_path / "artifacts").iterdir())) == 1


def test_small_results_stay_inline(tmp_path):
    env = envelope(big_outcome(1), TokenCounter(), store=ArtifactStore(tmp_path))
    assert env.artifact is None and "Passage 0" in env.text


def test_read_artifact_by_fields_and_range(tmp_path):
    store = ArtifactStore(tmp_path)
    pointer = envelope(big_outcome(), TokenCounter(), store=store).artifact
    tool = artifact_tool(store)
    by_field = run_tool(tool, "c1", {"pointer": pointer, "fields": ["source_id"]})
    assert json.loads(by_field.result.content) == {"hits": [{"source_id": f"S{i:08x}"} for i in range(12)]}
    by_range = run_tool(tool, "c2", {"pointer": pointer, "start": 0, "end": 50})
    assert len(by_range.result.content) == 50
    missing = run_tool(tool, "c3", {"pointer": "art:" + "0" * 16})
    assert missing.error["error"] == "engineering_failure" and "no artifact" in missing.error["message"]
    bad = run_tool(tool, "c4", {"pointer": "../../etc/passwd"})
    assert bad.error["error"] == "contract_error"
    with pytest.raises(EngineeringFailure):
        store.get("not-a-pointer")
    ReadArtifactArgs(pointer=pointer)


def test_the_envelope_fits_a_result_into_its_own_tools_budget():
    from briefroom.corpus.tools import ReadSourceArgs, ReadSourceResult
    from briefroom.protocol.tools import Tool

    text = " ".join(f"Cloud spending grew {i}% in region {i} during 2026." for i in range(900))

    def reader(budget: int) -> Tool:
        return Tool("read_source", "read", ReadSourceArgs, ReadSourceResult,
                    lambda a: ReadSourceResult(source_id=a.source_id, title="t", path="p", text=text),
                    output_budget=budget)

    counter = TokenCounter()
    small = envelope(run_tool(reader(1500), "a", {"source_id": "S0000abcd"}), counter)
    large = envelope(run_tool(reader(4000), "b", {"source_id": "S0000abcd"}), counter)
    for env, budget in ((small, 1500), (large, 4000)):
        body = DATA_BLOCK.fullmatch(env.text).group(4)
        assert env.trimmed and env.budget_tokens == budget
        assert env.tokens_after == counter.count(body) <= budget < env.tokens_before
    assert small.tokens_after < large.tokens_after


def test_a_slice_of_an_artifact_is_shown_not_offloaded_again(tmp_path):
    store = ArtifactStore(tmp_path)
    pointer = envelope(big_outcome(40), TokenCounter(), store=store).artifact
    slice_ = run_tool(artifact_tool(store), "c1", {"pointer": pointer, "start": 0, "end": 5000})
    shown = envelope(slice_, TokenCounter(), store=store)
    assert shown.artifact is None and '"artifact": "art:' not in shown.text
    assert "Passage 0: spending grew 0% in 2026" in shown.text and shown.tokens_after <= shown.budget_tokens
