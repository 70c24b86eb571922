"""Dependency closure in the ContextBuilder: an item is never shown without what it
needs, keeping it keeps its needs, and every drop for a need says which."""

from __future__ import annotations

import pytest

from briefroom.agents.prompting import message_item, passage_item, within_prompt
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.messages import MsgType, Priority, make_message
from briefroom.protocol.prompt_assembly import ContextBuilder, Item, Section

COUNTER = TokenCounter()
FILLER = "word " * 60  # ~60 tokens


def build(board: list[Item], budget: int, sources: list[Item] = ()):  # type: ignore[assignment]
    stable = [Section("role", "## Role", [Item("role", "You are a tester.", Priority.P0)])]
    dynamic = [Section("whiteboard", "## Whiteboard", board), Section("sources", "## Sources", list(sources))]
    task = Section("task", "## Current task", [Item("task", "Summarise the findings.", Priority.P0)])
    # one section takes the whole optional budget: the numbers below are easy to follow
    return ContextBuilder(COUNTER, budget, shares={"whiteboard": 1.0, "sources": 0.0}, floors={}).build(
        stable, dynamic, task)


def decision(prompt, key):
    (found,) = [d for d in prompt.stats.decisions if d.key == key]
    return found


def shown(prompt) -> str:
    return "\n".join(str(m.content) for m in prompt.messages)


def fillers(n: int) -> list[Item]:
    return [Item(f"f{i}", f"filler {i} " + FILLER, Priority.P2, 10 + i, 0.5) for i in range(n)]


def check_accounting(prompt) -> None:
    stats = prompt.stats
    assert stats.count("included") + stats.count("compressed") + stats.count("dropped") == stats.candidates
    assert len({d.key for d in stats.decisions}) == len(stats.decisions)  # one decision per item


def test_a_kept_conclusion_keeps_the_instruction_it_answers():
    instruction = Item("instr", "INSTRUCTION: how big is the market? " + FILLER, Priority.P3, 0, 0.0)

    def board(needs: tuple[str, ...]):
        return [instruction, Item("c1", "CONCLUSION: it is 723 billion. " + FILLER, Priority.P2, 5, 1.0,
                                  needs=needs), *fillers(4)]

    without = build(board(()), 330)
    assert decision(without, "c1").action == "included" and decision(without, "instr").action == "dropped"
    with_needs = build(board(("instr",)), 330)
    assert decision(with_needs, "c1").action == "included"
    kept = decision(with_needs, "instr")
    assert kept.action == "included" and "needed by c1" in kept.reason
    assert "INSTRUCTION" in shown(with_needs) and with_needs.total_tokens <= 330
    check_accounting(with_needs)


def test_a_kept_conclusion_keeps_a_passage_of_each_source_it_cites():
    passages = [passage_item("S1:0", "Cloud spending grew. " + FILLER, "S0000aaaa", "Cloud", 0, "other topic"),
                passage_item("S1:1", "The market is 723 billion. " + FILLER, "S0000aaaa", "Cloud", 1, "market"),
                passage_item("S2:0", "Unrelated passage. " + FILLER, "S0000bbbb", "Other", 2, "other")]
    conclusion = Item("c1", "CONCLUSION: 723 billion. " + FILLER, Priority.P2, 5, 1.0, needs=("source:S0000aaaa",))
    prompt = build([conclusion], 260, passages)
    assert decision(prompt, "c1").action == "included"
    kept = [d for d in prompt.stats.decisions if d.key.startswith("S1:") and d.action != "dropped"]
    assert len(kept) == 1 and "needed by c1" in kept[0].reason  # one passage of the source is enough
    assert kept[0].key == "S1:1"  # the best-ranked one: relevant to the task it was retrieved for
    assert decision(prompt, "S2:0").action == "dropped"  # a source it does not cite is not pulled in
    check_accounting(prompt)


def test_a_conclusion_whose_needs_do_not_fit_is_dropped_and_says_why():
    big = Item("instr", "INSTRUCTION " + "word " * 400, Priority.P3, 0, 0.0)
    conclusion = Item("c1", "CONCLUSION: it is 723 billion.", Priority.P2, 5, 1.0, needs=("instr",))
    prompt = build([big, conclusion], 200)
    dropped = decision(prompt, "c1")
    assert dropped.action == "dropped" and dropped.reason.startswith("needs instr")
    assert "CONCLUSION" not in shown(prompt) and decision(prompt, "instr").action == "dropped"
    # alone, it would have fit: the need is what dropped it
    alone = build([big, Item("c1", "CONCLUSION: it is 723 billion.", Priority.P2, 5, 1.0)], 200)
    assert decision(alone, "c1").action == "included"
    check_accounting(prompt)


def test_a_need_that_is_not_in_the_prompt_drops_the_item_and_what_needs_it():
    board = [Item("c1", "CONCLUSION", Priority.P2, 1, needs=("gone",)),
             Item("c2", "builds on c1", Priority.P2, 2, needs=("c1",)), Item("c3", "independent", Priority.P2, 3)]
    prompt = build(board, 2000)
    assert decision(prompt, "c1").reason == "needs gone, which is not in this prompt"
    assert decision(prompt, "c2").reason == "needs c1, which is not in this prompt"
    assert decision(prompt, "c3").action == "included"
    assert "CONCLUSION" not in shown(prompt) and "builds on" not in shown(prompt)
    check_accounting(prompt)


def test_a_dropped_tool_call_drops_its_result():
    call = Item("call1", "CALL read_source(S0000aaaa) " + "word " * 300, Priority.P2, 0, 0.0)
    result = Item("result1", "RESULT of call1: 723 billion.", Priority.P2, 1, 1.0, needs=("call1",))
    prompt = build([call, result, *fillers(1)], 200)
    assert decision(prompt, "call1").action == "dropped"
    assert decision(prompt, "result1").action == "dropped" and "needs call1" in decision(prompt, "result1").reason
    assert "RESULT" not in shown(prompt)
    # with room for both, the result keeps its call even though the call ranks lower
    roomy = build([call, result], 1000)
    assert decision(roomy, "result1").action == decision(roomy, "call1").action == "included"
    check_accounting(prompt)


def test_a_result_without_its_call_is_never_shown():
    prompt = build([Item("result1", "RESULT: 723 billion.", Priority.P1, 1, 1.0, needs=("call1",))], 2000)
    assert decision(prompt, "result1").action == "dropped" and "RESULT" not in shown(prompt)


def test_a_call_dropped_in_the_second_pass_takes_a_later_result_with_it():
    # the call is pending (over its share) and too big for the spare budget; the result,
    # ranked after it, must not be shown on its own
    call = Item("call1", "CALL " + "word " * 300, Priority.P1, 0, 1.0)
    result = Item("result1", "RESULT: 723 billion.", Priority.P2, 1, 0.0, needs=("call1",))
    prompt = build([call, result], 150)
    assert decision(prompt, "call1").action == "dropped"
    assert decision(prompt, "result1").action == "dropped"
    assert decision(prompt, "result1").reason.startswith("needs call1")
    check_accounting(prompt)


def test_needs_can_be_kept_in_their_short_form():
    passage = Item("p1", "PASSAGE " + "word " * 200, Priority.P1, 0, 0.0, compressed="PASSAGE extract: 723 billion.",
                   provides=("source:S1",))
    # both P1, the conclusion decided first (its section comes first): it takes the passage's extract along
    conclusion = Item("c1", "CONCLUSION: 723 billion.", Priority.P1, 1, 1.0, needs=("source:S1",))
    prompt = build([conclusion], 120, [passage])
    assert decision(prompt, "c1").action == "included"
    short = decision(prompt, "p1")
    assert short.action == "compressed" and "needed by c1" in short.reason
    assert "PASSAGE extract" in shown(prompt)
    check_accounting(prompt)


def test_the_needs_of_a_p0_item_are_kept_like_p0():
    background = Item("bg", "BACKGROUND " + FILLER, Priority.P3, 0, 0.0)
    critique = Item("crit", "CRITIQUE: fix the number.", Priority.P0, 1, needs=("bg",))
    prompt = build([background, critique, *fillers(6)], 300)
    kept = decision(prompt, "bg")
    assert kept.action == "included" and kept.reason == "P3: needed by P0 crit"
    with pytest.raises(ValueError, match="never shown without what it rests on"):
        build([Item("crit", "CRITIQUE", Priority.P0, 1, needs=("nowhere",))], 2000)


def test_prompting_sets_a_conclusions_needs_and_keeps_only_those_in_the_prompt():
    instruction = make_message(sender="planner", msg_type=MsgType.INSTRUCTION, content="How big is it?", round=1,
                               seq=1, priority=Priority.P0)
    conclusion = make_message(sender="searcher", msg_type=MsgType.CONCLUSION, content="It is 723 billion USD.",
                              round=1, seq=2, references=["S0000aaaa", "S0000bbbb"], relation=instruction.msg_id)
    item = message_item(conclusion, Priority.P2, frozenset())
    assert item.needs == (instruction.msg_id, "source:S0000aaaa", "source:S0000bbbb")
    assert message_item(instruction, Priority.P0, frozenset()).needs == ()
    passage = passage_item("c:0", "It is 723 billion USD.", "S0000aaaa", "Cloud", 0, "how big")
    assert passage.provides == ("source:S0000aaaa",)
    # only S0000aaaa has a passage here and the instruction expired: those needs are cut
    (board, sources) = within_prompt([Section("whiteboard", "", [item]), Section("sources", "", [passage])])
    assert board.items[0].needs == ("source:S0000aaaa",) and sources.items[0] is passage
    (board,) = within_prompt([Section("whiteboard", "", [item, message_item(instruction, Priority.P0, frozenset())])])
    assert board.items[0].needs == (instruction.msg_id,)


def test_without_needs_the_builder_decides_as_before():
    board = [Item(f"m{i}", f"message {i} " + FILLER, Priority.P2, i, 0.1 * i) for i in range(8)]
    plain = build(board, 300)
    assert [(d.key, d.action) for d in plain.stats.decisions] == \
        [(d.key, d.action) for d in build([Item(it.key, it.text, it.priority, it.order, it.relevance,
                                                provides=("x",)) for it in board], 300).stats.decisions]
    assert {d.key for d in plain.dropped} == {"m0", "m1", "m2", "m3"}
