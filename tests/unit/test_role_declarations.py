"""Issue 25: what a role declares places it. Speaking order comes from `after=`,
`before=` and `guards=`, several roles may guard one message type (in speaking order),
a guard passes on what it holds while the run finishes, and a restatement of a
conclusion supersedes it only when its figures hold."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from briefroom.agents.base import Role, Turn
from briefroom.agents.critic import states
from briefroom.agents.registry import builtin_roles, bus_for, speaking_order
from briefroom.agents.report_message import REPORT
from briefroom.errors import ConfigError
from briefroom.graph.routing import next_speaker
from briefroom.protocol.bus import Bus, Subscription
from briefroom.protocol.messages import MsgType, make_message
from briefroom.protocol.payloads import Conclusion
from briefroom.records import Charter, Fact, Report, SourceRecord
from briefroom.report.checks import restates
from briefroom.runlog import RunLog


def role(name, *types, publishes=(MsgType.CONCLUSION,), **declared):
    return Role(name=name, subscriptions=tuple(Subscription(msg_type=t) for t in types), publications=publishes,
                step=lambda turn: None, **declared)


def names(roles):
    return [r.name for r in roles]


def test_the_built_in_team_speaks_in_the_order_its_declarations_give():
    assert names(speaking_order(builtin_roles())) == ["planner", "searcher", "critic", "writer"]


def test_guards_sit_between_what_they_guard_and_its_readers_and_declare_their_order_among_themselves():
    team = builtin_roles()
    checker = role("checker", MsgType.CONCLUSION, guards=(MsgType.CONCLUSION,))
    rewriter = role("rewriter", MsgType.CONCLUSION, guards=(MsgType.CONCLUSION,), before=(MsgType.CONCLUSION,))
    listener = role("listener", REPORT, publishes=())
    ordered = names(speaking_order([*team, checker, rewriter, listener]))
    assert ordered == ["planner", "searcher", "rewriter", "checker", "critic", "writer", "listener"]
    # without a declaration between them, the guards keep the order they were found in
    assert names(speaking_order([*team, rewriter.__class__(**{**rewriter.__dict__, "before": ()}), checker]))[2:4] \
        == ["rewriter", "checker"]


def test_a_capability_this_team_lacks_orders_nothing_and_contradictions_fail():
    assert names(speaking_order([role("a", after=("nobody-has-this",))])) == ["a"]
    a = role("a", capabilities=("first",), after=("second",))
    b = role("b", capabilities=("second",), after=("first",))
    with pytest.raises(ConfigError, match="contradicts itself"):
        speaking_order([a, b])
    with pytest.raises(ValueError, match="after="):
        role("c", after=("",))


def conclusion(sender, content, seq, **header):
    return make_message(sender=sender, msg_type=MsgType.CONCLUSION, content=content, round=1, seq=seq,
                        references=("S1",), payload=Conclusion(question="q"), **header)


def test_a_message_passes_several_guards_in_order_then_reaches_the_readers():
    subs = {"searcher": [], "first": [Subscription(msg_type=MsgType.CONCLUSION)],
            "second": [Subscription(msg_type=MsgType.CONCLUSION)], "critic": [Subscription(msg_type=MsgType.CONCLUSION)],
            "writer": [Subscription(msg_type=MsgType.CONCLUSION)]}
    bus = Bus(subs, {}, guards={"first": [MsgType.CONCLUSION], "second": [MsgType.CONCLUSION]})
    assert bus.guards_of(MsgType.CONCLUSION) == ("first", "second") and bus.guard_of(MsgType.CONCLUSION) == "first"
    assert bus.recipients(conclusion("searcher", "x", 0)) == ("first",)
    assert bus.recipients(conclusion("first", "x", 1)) == ("second",)
    assert bus.recipients(conclusion("second", "x", 2)) == ("critic", "writer")


def test_while_finishing_a_guard_holding_messages_passes_them_on_before_the_draft():
    guard = role("guard", MsgType.CONCLUSION, guards=(MsgType.CONCLUSION,))
    drafter = role("drafter", MsgType.CONCLUSION, publishes=(REPORT,), finishing_duty="draft")
    roles = [guard, drafter]
    bus = bus_for(roles)
    held = conclusion("searcher", "x", 0)
    state = {"whiteboard": [held], "seen": {}, "round": 1, "finishing": True}
    assert next_speaker(state, roles, bus) == "guard"
    assert next_speaker({**state, "seen": {"guard": [held.msg_id]}}, roles, bus) == "drafter"


SOURCE = "Norvalia added 2,600 MW of offshore wind capacity in 2025."


def turn_for(rewriter: Role, original, facts):
    bus = bus_for([rewriter, role("reader", MsgType.CONCLUSION, publishes=())])
    index = SimpleNamespace(document=lambda sid: SimpleNamespace(text=SOURCE) if sid == "S1" else None)
    ctx = SimpleNamespace(bus=bus, index=index, log=RunLog(None), compaction=SimpleNamespace(stage=lambda *a: None),
                          tokens_used=0, max_tokens=None)
    state = {"whiteboard": [original], "seen": {}, "round": 1, "facts": facts,
             "sources": {"S1": SourceRecord(source_id="S1", title="t", path="p")},
             "charter": Charter(goal="g", acceptance_criteria=("a",))}
    return Turn(role=rewriter, state=state, ctx=ctx)  # type: ignore[arg-type]


def test_a_restatement_supersedes_the_original_keeps_its_citations_and_names_the_facts_it_states():
    rewriter = role("rewriter", MsgType.CONCLUSION, guards=(MsgType.CONCLUSION,))
    fact = Fact(fact_id="F1", text=SOURCE, numbers=("2600", "2025"), source_id="S1", found_by="searcher", round=1)
    original = make_message(sender="searcher", msg_type=MsgType.CONCLUSION, content=SOURCE, round=1, seq=0,
                            references=("S1",), payload=Conclusion(question="q", verbatim_fact="F1"))
    turn = turn_for(rewriter, original, [fact])
    restated = turn.restate(original, "Norvalia added 2.6 GW of offshore wind capacity in 2025.")
    assert restated is not None
    assert restated.header.supersedes == original.msg_id and restated.body.references == ("S1",)
    payload = restated.payload_as(Conclusion)
    assert payload.verbatim_fact is None and payload.restates == ("F1",)
    assert states(restated, fact)  # the Critic confirms the fact by its figures
    # a figure its source does not give, or a spelling the checks cannot read as it, is refused
    assert turn.restate(original, "Norvalia added 2.7 GW of offshore wind capacity in 2025.") is None
    assert turn.restate(original, "Norvalia added 2.6 gigawatts of offshore wind capacity in 2025.") is None
    # a conclusion that merely names the fact, without its figures, does not confirm it
    loose = make_message(sender="rewriter", msg_type=MsgType.CONCLUSION, content="Norvalia added capacity in 2025.",
                         round=1, seq=5, references=("S1",), payload=Conclusion(restates=("F1",)))
    assert not states(loose, fact)


def test_restates_reads_figures_in_any_spelling_and_wants_the_facts_words():
    assert restates("Norvalia added 2.6 GW of offshore wind capacity in 2025.", SOURCE)
    assert restates("Norvalia added 2600MW of offshore wind capacity in 2025.", SOURCE)
    assert not restates("Norvalia added 2.6 GW of offshore wind capacity in 2024.", SOURCE)
    assert not restates("Solar farms elsewhere reached 2.6 GW in 2025.", SOURCE)


def test_an_empty_restates_is_not_written():
    assert "restates" not in Conclusion(question="q").model_dump(mode="json")
    assert Conclusion(restates=("F1",)).model_dump(mode="json")["restates"] == ["F1"]


def test_a_report_accepted_is_not_held_up_by_a_guard():
    guard = role("guard", MsgType.CONCLUSION, guards=(MsgType.CONCLUSION,))
    state = {"whiteboard": [conclusion("searcher", "x", 0)], "seen": {}, "round": 1,
             "report": Report(markdown="r", round=1, accepted=True)}
    assert next_speaker(state, [guard], bus_for([guard])) == "round_end"
