"""The retrieval benchmark's bookkeeping (queries, targets, metrics) with a fake embedder:
deterministic, no model is loaded and nothing is timed."""

from __future__ import annotations

import importlib
import zlib

import numpy as np
import pytest

from briefroom.scenario import AnswerKeyItem, Scenario
from tests.conftest import REPO


def load():
    return importlib.import_module("bench.retrieval")


def fake_embed(texts: list[str]) -> np.ndarray:
    """Bag of hashed words: deterministic, no model."""
    out = np.zeros((len(texts), 64), np.float32)
    for row, text in enumerate(texts):
        for word in text.lower().split():
            out[row, zlib.crc32(word.encode()) % 64] += 1.0
    return out


def test_queries_follow_parts_or_the_whole_question():
    bench = load()
    items = [AnswerKeyItem(name="a", any=["x"], part=1), AnswerKeyItem(name="b", any=["y"], part=2)]
    parted = Scenario(name="s", question="q?", parts=["one", "two"], answer_key=items)
    assert [(q.part, q.text, [i.name for i in q.items]) for q in bench.queries(parted)] == [
        (1, "one", ["a"]), (2, "two", ["b"])]
    whole = Scenario(name="s", question="q?", answer_key=items)
    assert [(q.part, q.text, len(q.items)) for q in bench.queries(whole)] == [(0, "q?", 2)]


def test_targets_ignore_case_and_spacing():
    bench = load()
    from briefroom.corpus.chunking import Chunk

    chunks = [Chunk("d:0", "d", 0, 1, "Revenue was 723  Billion USD."), Chunk("d:1", "d", 0, 1, "nothing here")]
    assert bench.targets(chunks, [AnswerKeyItem(name="m", any=["723 billion"])]) == ["d:0"]
    assert bench.chance_at(12, 1) == pytest.approx(5 / 12)
    assert bench.chance_at(4, 1) == 1.0


def test_a_scenario_is_scored_for_every_method():
    bench = load()
    timings: dict = {}
    res = bench.evaluate_scenario(REPO / "scenarios" / "wind-multipart", {"fake": fake_embed}, timings)
    assert res["language"] == "en" and len(res["queries"]) == 3 and not res["skipped_no_target"]
    assert timings["fake"][1] == res["chunks"]
    summary = bench.summarise([res], ["fake_vector", "fake_hybrid", "bm25"])
    for method in ("fake_vector", "fake_hybrid", "bm25"):
        assert 0.0 <= summary["en"][method]["recall@5"] <= 1.0
    assert summary["zh"]["queries"] == 0 and summary["zh"]["bm25"] is None
    assert summary["en"]["bm25"]["recall@5"] == 1.0  # the part names are in the answering passages
