"""The context benchmark's claims, on a short run (deterministic; nothing is timed here)."""

from __future__ import annotations

import importlib.util

from tests.conftest import REPO


def load():
    spec = importlib.util.spec_from_file_location("bench_context", REPO / "bench" / "context.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_layered_is_smaller_and_keeps_every_planted_fact(monkeypatch):
    bench = load()
    monkeypatch.setattr(bench, "build_times", lambda messages, repeats=40: [1.0, 1.0])  # timing is not tested here
    result = bench.run(6)
    assert result["layered_prompt_tokens"] < result["naive_prompt_tokens"]
    assert result["ratio"] < 0.25
    assert result["fact_recall"] == 1.0
    assert result["system_prefix_identical"] is True
    assert result["layered_last_round_tokens"] < result["naive_last_round_tokens"]
