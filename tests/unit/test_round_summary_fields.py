"""The round summary's structured fields: code fills what it knows exactly (goal,
constraints, fact references, open questions, agents), the model only what needs
judgement, its points are still verified, and later prompts see every field."""

from __future__ import annotations

import json
from types import SimpleNamespace

from langchain_core.messages import AIMessage

from briefroom.agents.registry import bus_for, discover
from briefroom.agents.run_context import RunContext
from briefroom.events import RoundSummaryEvent
from briefroom.graph.summary import summarize_round
from briefroom.llm import ModelHandle, ModelPool
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.messages import MsgType, Priority, make_message
from briefroom.protocol.payloads import Conclusion, Critique
from briefroom.records import Charter, Fact, Passage, RoundRecord, RoundSummary, SourceRecord, SummaryPoint
from briefroom.runlog import RunLog
from tests.fakes import ScriptedChatModel

TEXT = "Public cloud spending will reach 723 billion USD in 2026. Growth was 21% in 2025."
SID = "S0000abcd"
CHARTER = Charter(goal="How big is the public cloud market in 2026?", acceptance_criteria=("cited",),
                  constraints=("Use only the given documents.", "Answer in English."), max_rounds=3)


def reply(**fields):
    body = {"conclusions": [{"text": "Public cloud spending will reach 723 billion USD in 2026.",
                             "source_ids": [SID]}], **fields}

    def answer(messages, kwargs):
        answer.schema = kwargs["response_format"]["schema"]
        answer.prompt = "\n".join(str(m.content) for m in messages)
        return AIMessage(content=json.dumps(body))
    return answer


def run(answer, *, extra_messages=()):
    roles = discover()
    pool = ModelPool({"summarizer": ModelHandle("summarizer", "scripted", "scripted", ScriptedChatModel([answer]),
                                                "json_object_schema", 32_000, label="scripted")})
    log = RunLog(None)
    index = SimpleNamespace(document=lambda sid: SimpleNamespace(text=TEXT) if sid == SID else None)
    ctx = RunContext(bus=bus_for(roles), models=pool, counter=TokenCounter(), log=log, index=index)
    goal = make_message(sender="user", msg_type=MsgType.INSTRUCTION, content=CHARTER.goal, round=1, seq=0,
                        priority=Priority.P0)
    asked = make_message(sender="planner", msg_type=MsgType.INSTRUCTION, content="How big is the market in 2026?",
                         round=1, seq=1, priority=Priority.P0)
    unanswered = make_message(sender="planner", msg_type=MsgType.INSTRUCTION, content="Who grows fastest?",
                              round=1, seq=2, priority=Priority.P0)
    found = make_message(sender="searcher", msg_type=MsgType.CONCLUSION, content=TEXT.split(". ")[0] + ".",
                         round=1, seq=3, references=[SID], relation=asked.msg_id,
                         payload=Conclusion(question=asked.body.content))
    nothing = make_message(sender="searcher", msg_type=MsgType.CONCLUSION, round=1, seq=4, relation=unanswered.msg_id,
                           content="No passage in the corpus answers: Who grows fastest?",
                           payload=Conclusion(question=unanswered.body.content))
    gaps = make_message(sender="critic", msg_type=MsgType.CRITIQUE, content="No verified evidence yet for: margins",
                        round=1, seq=5, payload=Critique(kind="gaps", gaps=("What are the margins?",)),
                        priority=Priority.P0)
    facts = [Fact(fact_id="f-r1a", text="Public cloud spending will reach 723 billion USD in 2026.",
                  numbers=("723", "2026"), source_id=SID, found_by="searcher", round=1),
             Fact(fact_id="f-r1b", text="Growth was 21% in 2025.", numbers=("21", "2025"), source_id=SID,
                  found_by="searcher", round=1),
             Fact(fact_id="f-r0", text="Old figure 5 in 2024.", numbers=("5", "2024"), source_id=SID,
                  found_by="searcher", round=0)]
    replaced = [found, nothing, *extra_messages]
    state = {"charter": CHARTER, "round": 1, "whiteboard": [goal, asked, unanswered, gaps, *replaced], "seen": {},
             "facts": facts, "summaries": [],
             "sources": {SID: SourceRecord(source_id=SID, title="Cloud", path="cloud.md",
                                           passages=(Passage(chunk_id="c1", start=0, end=len(TEXT), text=TEXT),))}}
    record = summarize_round(state, ctx, replaced)
    return record, log, {"asked": asked, "unanswered": unanswered, "found": found}


def test_code_fills_what_it_knows_and_does_not_ask_the_model_for_it():
    answer = reply(decisions=["Keep the 723 billion USD figure."], next_action="Search for market shares.")
    record, _, _ = run(answer)
    s = record.summary
    assert s.goal == CHARTER.goal and s.constraints == CHARTER.constraints
    assert s.fact_refs == ("f-r1a", "f-r1b")  # this round's facts only, by id
    assert s.agents_involved == ("searcher",)
    # the Critic's gap first, then the instruction no sourced conclusion answered; not the user's goal,
    # not the instruction that was answered
    assert s.open_questions == ("What are the margins?", "Who grows fastest?")
    asked_for = set(answer.schema["properties"])
    assert {"conclusions", "decisions", "next_action"} <= asked_for
    assert not asked_for & {"goal", "constraints", "open_questions", "fact_refs", "agents_involved"}


def test_the_models_judgement_is_kept_when_it_holds_up():
    record, _, _ = run(reply(decisions=["Keep the 723 billion USD figure.", "Trust the cloud report."],
                             todos=["Find market shares."], risks=["Only one source."],
                             next_action="Search for market shares by provider."))
    s = record.summary
    assert s.decisions == ("Keep the 723 billion USD figure.", "Trust the cloud report.")
    assert s.next_action == "Search for market shares by provider."
    assert s.todos == ("Find market shares.",) and s.risks == ("Only one source.",)


def test_a_judgement_line_with_a_number_no_fact_or_source_holds_is_dropped():
    record, log, _ = run(reply(decisions=["Use 999 billion as the market size.", "Keep 21% growth."],
                               next_action="Report 812 billion."))
    s = record.summary
    assert s.decisions == ("Keep 21% growth.",) and s.next_action == ""
    dropped = [e.text for e in log.events if e.event == "summary_point_replaced"]
    assert "Use 999 billion as the market size." in dropped and "Report 812 billion." in dropped


def test_conclusions_are_still_verified():
    answer_body = {"conclusions": [{"text": "Public cloud spending will reach 900 billion USD in 2026.",
                                    "source_ids": [SID]}]}

    def wrong(messages, kwargs):
        return AIMessage(content=json.dumps(answer_body))

    record, _, _ = run(wrong)
    assert [p.text for p in record.summary.conclusions] == \
        ["Public cloud spending will reach 723 billion USD in 2026."]  # replaced by the fact it was about


def test_a_rejected_answer_leaves_its_question_open():
    def with_rejection(ids):
        return make_message(sender="critic", msg_type=MsgType.CRITIQUE, content="Rejected.", round=1, seq=6,
                            payload=Critique(kind="review", rejected={ids["found"].msg_id: "wrong number"}))

    _, _, ids = run(reply())
    record, _, _ = run(reply(), extra_messages=[with_rejection(ids)])
    assert "How big is the market in 2026?" in record.summary.open_questions


def test_the_log_line_is_a_valid_round_summary_event():
    record, log, _ = run(reply(decisions=["Keep the 723 billion USD figure."]))
    (event,) = [e for e in log.events if isinstance(e, RoundSummaryEvent)]
    assert [p.text for p in event.summary.conclusions] == [p.text for p in record.summary.conclusions]


def test_the_record_renders_what_the_charter_does_not_already_say():
    record = RoundRecord(round=2, summary=RoundSummary(
        conclusions=(SummaryPoint(text="Spending reaches 723 billion USD.", source_ids=(SID,)),),
        agents_involved=("searcher", "critic"), todos=("Find shares.",), risks=("One source.",),
        goal="How big is the market?", constraints=("Use only the documents.",),
        decisions=("Keep the 723 figure.",), open_questions=("Who grows fastest?",),
        fact_refs=("f-1", "f-2"), next_action="Search shares."))
    text = record.render()
    for line in ["Round 2 (agents: searcher, critic)", f"- Spending reaches 723 billion USD. [{SID}]",
                 "Decision: Keep the 723 figure.", "Open question: Who grows fastest?", "f-1, f-2",
                 "Todo: Find shares.", "Risk: One source.", "Next: Search shares."]:
        assert line in text, line
    # the charter opens every prompt: the summary does not repeat its goal or constraints
    assert "How big is the market?" not in text and "Use only the documents." not in text
    bare = RoundRecord(round=1, summary=RoundSummary(conclusions=(SummaryPoint(text="Nothing verified."),),
                                                     agents_involved=("none",))).render()
    assert bare == "Round 1 (agents: none)\n- Nothing verified."  # empty fields add no lines


def test_later_prompts_carry_the_summary_fields():
    first, _, _ = run(reply(decisions=["Keep the 723 billion USD figure."], next_action="Search for shares."))
    answer = reply()
    roles = discover()
    pool = ModelPool({"summarizer": ModelHandle("summarizer", "scripted", "scripted", ScriptedChatModel([answer]),
                                                "json_object_schema", 32_000, label="scripted")})
    ctx = RunContext(bus=bus_for(roles), models=pool, counter=TokenCounter(), log=RunLog(None),
                     index=SimpleNamespace(document=lambda sid: SimpleNamespace(text=TEXT)))
    later = make_message(sender="searcher", msg_type=MsgType.CONCLUSION, content=TEXT.split(". ")[1], round=2,
                         seq=1, references=[SID])
    state = {"charter": CHARTER, "round": 2, "whiteboard": [later], "seen": {}, "facts": [], "sources": {},
             "summaries": [first]}
    summarize_round(state, ctx, [later])
    for text in ["Decision: Keep the 723 billion USD figure.", "Open question: Who grows fastest?",
                 "f-r1a, f-r1b", "Next: Search for shares."]:
        assert text in answer.prompt, text
