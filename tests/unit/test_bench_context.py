"""The context benchmark's claims, on a short run (deterministic; nothing is timed here)."""

from __future__ import annotations

import dataclasses
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


def _writer_prompt(bench, sim, facts=None):
    from briefroom.agents.base import Turn

    role = next(r for r in sim.roles if r.name == "writer")
    return Turn(role=role, state=sim.state, ctx=sim.ctx).build_prompt(bench.TASKS["writer"], facts=facts)


def test_section_shares_from_settings_change_what_a_prompt_holds():
    from briefroom.protocol.messages import MsgType, Priority
    from briefroom.records import Fact

    bench = load()
    sim = bench.Simulation("layered")
    for i in range(300):
        sim.publish("searcher", MsgType.CONCLUSION, f"Conclusion {i}: segment grew {i % 97}.{i % 10}% this year.",
                    refs=(f"S{i:08d}",), priority=Priority.P1, ttl=10**6)
    facts = [Fact(fact_id=f"F{i}", text=f"Region {i} revenue reached {i}.5 billion USD in 2025.", numbers=(f"{i}.5",),
                  source_id=f"S{i}", found_by="searcher", round=1) for i in range(300)]
    # Both sections have more than the budget holds: the shares decide the split.
    default = _writer_prompt(bench, sim, facts).section_tokens
    sim.ctx = dataclasses.replace(sim.ctx, shares={"whiteboard": 0.05, "facts": 0.8}, floors={"whiteboard": 0})
    tuned = _writer_prompt(bench, sim, facts).section_tokens
    assert 0 < tuned["whiteboard"] < default["whiteboard"] / 2
    assert tuned["facts"] > default["facts"] * 2


def test_key_fact_is_recited_in_the_last_15_percent_and_the_charter_comes_first():
    from briefroom.records import Fact

    bench = load()
    sim = bench.Simulation("layered")
    facts = [Fact(fact_id=f"F{i}", text=f"Segment {i} of the garden shop sold {i} spades.", numbers=(str(i),),
                  source_id=f"S{i}", found_by="searcher", round=1, confirmed_by=("searcher", "critic"))
             for i in range(40)]
    facts.insert(5, Fact(fact_id="KEY", text="The accepted conclusions put the report's total at 723.5 billion USD.",
                         numbers=("723.5",), source_id="S99", found_by="searcher", round=1,
                         confirmed_by=("searcher", "critic")))
    built = _writer_prompt(bench, sim, facts)
    text = "\n\n".join(str(m.content) for m in built.messages)
    assert text.startswith("## Role") and text.index("## Charter") < text.index("## Facts")
    assert text.rindex("723.5") / len(text) >= 0.85
    assert "## Facts" in text and text.index("723.5") < text.index("## Current task")  # also in the facts section


def test_naive_loses_planted_facts_once_its_window_overflows(monkeypatch):
    bench = load()
    monkeypatch.setattr(bench, "build_times", lambda messages, repeats=40: [1.0, 1.0])
    result = bench.run(8, window=16_000)
    assert result["naive_window_overflow"] is True
    assert result["naive_fact_recall"] < 1.0
    assert result["fact_recall"] == 1.0


def test_a_prompt_build_touches_only_the_newest_messages_however_long_the_board(monkeypatch):
    """Build cost must not grow with history: count the messages a build turns into items."""
    from briefroom.agents import prompting
    from briefroom.protocol.messages import MsgType, Priority

    bench = load()
    touched = []
    real = prompting.message_item
    monkeypatch.setattr(prompting, "message_item", lambda m, *rest: touched.append(m.msg_id) or real(m, *rest))
    counts = {}
    for size in (300, 3000):
        sim = bench.Simulation("layered")
        for i in range(size):
            sim.publish("searcher", MsgType.CONCLUSION, f"Conclusion {i}: grew {i % 97}%.", refs=(f"S{i:08d}",),
                        priority=Priority.P1, ttl=10**6)
        sim.publish("critic", MsgType.CRITIQUE, "Old but unread: keep me.", receiver="writer", priority=Priority.P1)
        for i in range(size):  # the critique is now far from the newest messages
            sim.publish("searcher", MsgType.CONCLUSION, f"Later {i}: grew {i % 89}%.", refs=(f"T{i:08d}",),
                        priority=Priority.P1, ttl=10**6)
        touched.clear()
        built = _writer_prompt(bench, sim)
        counts[size] = len(touched)
        assert "Old but unread: keep me." in str(built.messages[1].content)  # must-keep survives the cut
    assert counts[300] == counts[3000] == prompting.BOARD_CANDIDATES + 1
