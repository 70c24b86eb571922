"""Compaction thresholds: at shares of --max-tokens the run warns, then builds every
later prompt inside a smaller budget, then leaves only the Writer; each stage is logged
once, with the totals before and after."""

from __future__ import annotations

import pytest

from briefroom.agents.run_context import Compaction
from briefroom.config import Settings
from briefroom.errors import ConfigError, FatalBreaker
from briefroom.events import Compaction as CompactionEvent
from briefroom.events import LlmCall, read_events
from briefroom.run import ResearchRequest, run_research

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"


def test_stages_follow_the_shares():
    policy = Compaction(warn=0.5, compress=0.7, finish=0.9)
    assert [policy.stage(used, 1000) for used in (0, 499, 500, 700, 899, 900, 1500)] == \
        [None, None, "warn", "compress", "compress", "finish", "finish"]
    assert policy.stage(10**6, None) is None  # no run budget, nothing to compact
    with pytest.raises(ValueError):
        Compaction(warn=0.8, compress=0.7, finish=0.9)


def test_bad_thresholds_are_a_one_line_error():
    for bad in ("0.5,0.4,0.9", "0.5,0.7", "a,b,c", "0,0.5,0.9"):
        with pytest.raises(ConfigError, match="--compact-at"):
            Settings.from_env({}, compact_at=bad)
    assert Settings.from_env({"BRIEFROOM_COMPACT_AT": "0.5,0.6,0.95"}).compact_at == (0.5, 0.6, 0.95)


def test_a_run_warns_then_compresses_then_finishes(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    try:
        run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out),
                     Settings(model="test", rounds=3, data_dir=data_dir, memory=False, max_tokens=20_000,
                              compact_at=(0.2, 0.4, 0.9)))
    except FatalBreaker:
        pass  # the budget may stop the run at 100%; what came before is what is checked
    events = read_events(out / "run.jsonl")
    stages = [e for e in events if isinstance(e, CompactionEvent)]
    assert [s.stage for s in stages][:2] == ["warn", "compress"]
    assert [s.stage for s in stages] == sorted({s.stage for s in stages}, key=["warn", "compress", "finish"].index)
    warn, compress = stages[0], stages[1]
    assert warn.share_used >= 0.2 and compress.share_used >= 0.4
    assert compress.budget_after is not None and compress.budget_before is not None
    assert compress.budget_after == int(compress.budget_before * 0.6)
    # every prompt built after the compress stage was announced fits the smaller budget
    later = [e for e in events if isinstance(e, LlmCall) and e.seq > compress.seq and e.attempt == 0]
    assert later and all(e.budget <= int(0.6 * 6000) for e in later)
    before = [e for e in events if isinstance(e, LlmCall) and e.seq < warn.seq]
    assert any(e.budget > int(0.6 * 5000) for e in before)
