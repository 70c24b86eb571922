"""Ten rounds of summaries cannot lose a number: facts are copied verbatim, not summarised."""

from __future__ import annotations

import importlib.util
import json

from langchain_core.messages import AIMessage

from briefroom.llm import ModelHandle
from tests.conftest import REPO
from tests.fakes import ScriptedChatModel


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_context", REPO / "bench" / "context.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mangling_summary(messages, kwargs):
    """A summariser that rounds every figure wrongly, as a tiny model would."""
    return AIMessage(content=json.dumps({"conclusions": [{"text": "Revenue reached about 71.2 billion.",
                                                          "source_ids": []}],
                                         "agents_involved": ["searcher"], "todos": [], "risks": []}))


def test_planted_numbers_survive_ten_rounds_of_bad_summaries():
    bench = load_bench()
    sim = bench.Simulation("layered")
    summarizer = ScriptedChatModel([mangling_summary] * 10, name="summarizer")
    sim.ctx.models.handles["summarizer"] = ModelHandle("summarizer", "scripted", "scripted", summarizer,
                                                        "json_object_schema", bench.WINDOW)
    for _ in range(10):
        sim.play_round()
    summarizer.assert_done()
    planted = [bench.planted(r, k) for r in range(1, 11) for k in range(2)]
    fact_numbers = {n for f in sim.state["facts"] for n in f.numbers}
    assert set(planted) <= fact_numbers
    final_writer_prompt = sim.prompts["writer"][-1]
    assert all(n in final_writer_prompt for n in planted)
    records = sim.state["summaries"]
    assert [r.round for r in records] == list(range(1, 11))
    assert all(r.replaced for r in records)  # each summary replaced that round's raw messages
    replaced = {i for r in records for i in r.replaced}
    assert not replaced & {m.msg_id for m in sim.state["whiteboard"]}  # and they left the board
    assert "71.2" not in final_writer_prompt  # an unsourced figure in a summary is not carried forward


def test_a_summary_the_model_cannot_write_is_made_of_the_rounds_facts():
    # A small model looping inside the grammar is cut at the output cap: the summary is
    # bookkeeping, so the round ends with its verbatim facts as the conclusions, asked once.
    from langchain_core.messages import AIMessage

    def cut_at_the_cap(messages, kwargs):
        return AIMessage(content='{"conclusions": [{"text": "1.1.1.1.1.1', response_metadata={"finish_reason": "length"})

    bench = load_bench()
    sim = bench.Simulation("layered")
    summarizer = ScriptedChatModel([cut_at_the_cap], name="summarizer")
    sim.ctx.models.handles["summarizer"] = ModelHandle("summarizer", "scripted", "scripted", summarizer,
                                                        "json_object_schema", bench.WINDOW)
    sim.play_round()
    summarizer.assert_done()  # one call, no correction
    record = sim.state["summaries"][-1]
    assert record.round == 1 and record.summary.conclusions
    assert not any("1.1.1" in p.text for p in record.summary.conclusions)  # the cut reply left no trace
    assert record.summary.fact_refs  # the round's facts are still referenced
