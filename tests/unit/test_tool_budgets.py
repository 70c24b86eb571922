"""Per-tool output budgets: each tool declares how many tokens of a result a model may
see, its outcomes carry that budget, and a result is fitted into it."""

from __future__ import annotations

import pytest

from briefroom.corpus.tools import ReadSourceArgs, ReadSourceResult
from briefroom.errors import EngineeringFailure
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.tools import DEFAULT_OUTPUT_BUDGET, Tool, fit_output, run_tool

COUNTER = TokenCounter()
LONG = " ".join(f"Cloud spending grew {i}% in region {i} during 2026, said report {i}." for i in range(900))


def reader(budget: int, text: str = LONG, name: str = "read_source") -> Tool:
    return Tool(name, "read", ReadSourceArgs, ReadSourceResult,
                lambda args: ReadSourceResult(source_id=args.source_id, title="t", path="p", text=text),
                output_budget=budget)


def test_the_built_in_tools_declare_their_own_budgets(tmp_path):
    from briefroom.corpus.tools import corpus_tools
    from briefroom.protocol.artifacts import ArtifactStore
    from briefroom.protocol.tools import artifact_tool

    tools = {**corpus_tools(index=None), "read_artifact": artifact_tool(ArtifactStore(tmp_path))}  # type: ignore[arg-type]
    budgets = {name: tool.output_budget for name, tool in tools.items()}
    assert budgets == {"local_search": 2000, "read_source": 4000, "read_artifact": 1500}
    assert all(1500 <= b <= 4000 for b in budgets.values())  # the design's range
    assert Tool("x", "x", ReadSourceArgs, ReadSourceResult, lambda a: a).output_budget == DEFAULT_OUTPUT_BUDGET


def test_a_budget_must_be_positive():
    with pytest.raises(ValueError, match="output_budget"):
        reader(0)


def test_outcomes_carry_the_budget_of_the_tool_that_produced_them():
    ok = run_tool(reader(321), "c1", {"source_id": "S0000abcd"})
    assert ok.ok and ok.output_budget == 321
    bad_args = run_tool(reader(321), "c2", {"source_id": "nope"})
    assert bad_args.error and bad_args.output_budget == 321

    def broken(args):
        raise EngineeringFailure("gone", tool="read_source")

    failing = Tool("read_source", "read", ReadSourceArgs, ReadSourceResult, broken, output_budget=4000,
                   fallback="local_search", fallback_args=lambda a, t: {"source_id": "S0000abcd"})
    stand_in = reader(777, name="local_search")
    outcome = run_tool(failing, "c3", {"source_id": "S0000abcd"}, tools={"local_search": stand_in})
    assert outcome.output_budget == 4000 and outcome.fallback is not None
    assert outcome.fallback.output_budget == 777  # the fallback's own budget, not the failed tool's


def test_a_result_over_its_budget_is_trimmed_to_it():
    full = COUNTER.count(LONG)
    assert full > 4000
    fitted = fit_output(LONG, COUNTER, 2000)
    assert fitted.trimmed and fitted.budget == 2000
    assert fitted.tokens_before == full
    assert fitted.tokens_after == COUNTER.count(fitted.text) <= 2000
    assert fitted.tokens_after > 1900  # trimmed to the budget, not far below it
    assert fitted.text.startswith(LONG[:200]) and f"[trimmed: {full} tokens in full]" in fitted.text


def test_a_result_within_its_budget_is_shown_whole():
    text = "Cloud spending grew 21% in 2026."
    fitted = fit_output(text, COUNTER, 1500)
    assert fitted.text == text and not fitted.trimmed
    assert fitted.tokens_before == fitted.tokens_after == COUNTER.count(text)


def test_two_tools_with_different_budgets_trim_the_same_result_differently():
    small, large = run_tool(reader(1500), "a", {"source_id": "S0000abcd"}), \
        run_tool(reader(4000), "b", {"source_id": "S0000abcd"})
    text = small.result.model_dump_json()  # the same result from both
    shown_small = fit_output(text, COUNTER, small.output_budget)
    shown_large = fit_output(text, COUNTER, large.output_budget)
    assert shown_small.tokens_after <= 1500 < shown_large.tokens_after <= 4000
    assert shown_large.text.startswith(shown_small.text.split("\n... [trimmed")[0])


def test_the_note_names_the_whole_result_when_the_shown_text_stands_for_it():
    whole = LONG * 20
    fitted = fit_output(LONG, COUNTER, 300, full=whole)
    assert f"[trimmed: {COUNTER.count(whole)} tokens in full]" in fitted.text and fitted.tokens_after <= 300


@pytest.mark.parametrize("budget", [1, 3, 10, 17])
def test_tiny_budgets_are_still_kept(budget):
    fitted = fit_output(LONG, COUNTER, budget)
    assert COUNTER.count(fitted.text) <= budget and fitted.trimmed
