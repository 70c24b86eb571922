"""Every way a tool can misbehave ends as a structured result, never a crash or a leak."""

from __future__ import annotations

import time

import pytest

from briefroom.protocol.artifacts import ArtifactStore
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.envelope import envelope
from briefroom.protocol.tools import run_tool
from tests.faulty_tools import faulty_search
from tests.secret_samples import samples


@pytest.mark.filterwarnings("ignore::UserWarning")  # the garbage double trips pydantic's serializer
@pytest.mark.parametrize("mode,message", [("raise", "RuntimeError: backend exploded"),
                                          ("not_found", "404"),
                                          ("timeout", "timed out after 0.5s"),
                                          ("garbage", "does not match its schema")])
def test_failures_become_structured_errors(mode, message):
    started = time.perf_counter()
    outcome = run_tool(faulty_search(mode), "call_1", {"query": "cloud"})
    assert outcome.result is None and outcome.call_id == "call_1"
    assert outcome.error["error"] == "engineering_failure"
    assert message in outcome.error["message"]
    assert outcome.error["advice"] == "do not retry the same call blindly"
    assert time.perf_counter() - started < 1.5  # the timeout did not wait for the slow tool


def test_ten_megabytes_are_offloaded_and_the_prompt_stays_small(tmp_path):
    outcome = run_tool(faulty_search("huge"), "call_2", {"query": "cloud"})
    assert outcome.ok
    env = envelope(outcome, TokenCounter(), store=ArtifactStore(tmp_path))
    assert env.full_bytes > 9_000_000
    assert env.artifact and len(env.text) < 4000
    assert TokenCounter().count(env.text) <= 1300


def test_secrets_in_a_tool_result_never_reach_the_envelope_or_the_artifact(tmp_path):
    outcome = run_tool(faulty_search("secrets"), "call_3", {"query": "cloud"})
    env = envelope(outcome, TokenCounter(), store=ArtifactStore(tmp_path), offload_bytes=100)
    stored = "".join(p.read_text() for p in tmp_path.iterdir())
    for _, secret in samples()[:10]:
        assert secret not in env.text and secret not in stored
    assert "[REDACTED:" in stored
