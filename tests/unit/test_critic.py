"""The Critic's own checks, apart from what the Searcher already filters."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

from langchain_core.messages import AIMessage

from briefroom.agents.base import Turn
from briefroom.agents.registry import bus_for, discover
from briefroom.agents.run_context import RunContext
from briefroom.llm import ModelHandle, ModelPool
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.messages import MsgType, make_message
from briefroom.protocol.payloads import Conclusion, Critique
from briefroom.records import Charter, Passage, SourceRecord
from briefroom.runlog import RunLog
from tests.fakes import ScriptedChatModel

TEXT = "Public cloud spending will reach 723 billion USD in 2026."


def accept_all(messages, kwargs):
    ids = re.search(r'"msg_id": \{[^{}]*?"enum": (\[[^\]]*\])', json.dumps(kwargs["response_format"]["schema"]))
    return AIMessage(content=json.dumps({"verdicts": [{"msg_id": i, "verdict": "accept", "reason": "fine"}
                                                      for i in json.loads(ids.group(1))]}))


def review_good_and_bad(replies) -> tuple[Critique, str, str, list]:
    """The Critic's review of a conclusion its source holds and one whose figure it does
    not, with the model answering `replies` in turn; and the run's events."""
    roles = discover()
    critic = next(r for r in roles if r.name == "critic")
    source = SourceRecord(source_id="S0000abcd", title="Cloud", path="cloud.md",
                          passages=(Passage(chunk_id="c1", start=0, end=len(TEXT), text=TEXT),))
    index = SimpleNamespace(document=lambda sid: SimpleNamespace(text=TEXT) if sid == "S0000abcd" else None)
    pool = ModelPool({"critic": ModelHandle("critic", "scripted", "scripted", ScriptedChatModel(replies),
                                            "json_object_schema", 32_000, label="scripted")})
    events: list = []
    ctx = RunContext(bus=bus_for(roles), models=pool, counter=TokenCounter(), log=RunLog(None, events.append),
                     index=index)
    good = make_message(sender="searcher", msg_type=MsgType.CONCLUSION, content=TEXT, round=1, seq=1,
                        references=["S0000abcd"], payload=Conclusion(question="How big?"))
    bad = make_message(sender="searcher", msg_type=MsgType.CONCLUSION, round=1, seq=2, references=["S0000abcd"],
                       content="Public cloud spending will reach 999 billion USD in 2026.",
                       payload=Conclusion(question="How big?"))
    state = {"charter": Charter(goal="How big is the cloud market?", acceptance_criteria=("cited",), max_rounds=2),
             "round": 1, "whiteboard": [good, bad], "seen": {}, "sources": {"S0000abcd": source}, "facts": []}
    turn = Turn(role=critic, state=state, ctx=ctx)
    critic.step(turn)
    (review,) = [m.payload_as(Critique) for m in turn.published]
    return review, good.msg_id, bad.msg_id, events


def test_a_conclusion_whose_number_is_not_in_its_source_is_rejected_even_if_the_model_accepts_it():
    review, good, bad, _ = review_good_and_bad([accept_all])
    assert review.kind == "review" and review.accepted == (good,)
    assert list(review.rejected) == [bad] and "999" in review.rejected[bad]


def test_a_review_the_model_cannot_write_leaves_the_code_verdicts_standing():
    broken = [lambda messages, kwargs: AIMessage(content='{"verdicts": [{"msg_id": "x" "verdict"')] * 3
    review, good, bad, events = review_good_and_bad(broken)
    assert review.accepted == (good,) and list(review.rejected) == [bad]
    assert any(e.event == "fallback" and "review was not used" in e.reason for e in events)
