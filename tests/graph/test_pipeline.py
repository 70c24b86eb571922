"""The whole graph with a scripted model per role, real chromadb and real embeddings."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from briefroom.config import Settings
from briefroom.corpus.documents import load_corpus
from briefroom.events import BusMessage, ContractErrorEvent, ErrorEvent, Event, LlmCall, read_events
from briefroom.llm import ModelHandle, ModelPool
from briefroom.protocol.messages import MsgType
from briefroom.protocol.prompt_assembly import DATA_BLOCK
from briefroom.report.checks import markdown_problems
from briefroom.report.sources import load_sources
from briefroom.run import ResearchRequest, run_research
from tests.fakes import ScriptedChatModel


def ids_by_title(corpus: Path) -> dict[str, str]:
    return {d.title: d.source_id for d in load_corpus(corpus)}


def enum_of(kwargs, field: str) -> list[str]:
    text = json.dumps(kwargs["response_format"]["schema"])
    m = re.search(r'"%s": \{[^{}]*?"enum": (\[[^\]]*\])' % field, text) or \
        re.search(r'"%s": \{"items": \{[^{}]*?"enum": (\[[^\]]*\])' % field, text)
    assert m, f"no enum for {field} in schema"
    return json.loads(m.group(1))


def pool_of(scripts: dict[str, list]) -> tuple[ModelPool, dict[str, ScriptedChatModel]]:
    models = {role: ScriptedChatModel(steps, name=role) for role, steps in scripts.items()}
    pool = ModelPool({role: ModelHandle(role, "scripted", "scripted", model, "json_object_schema", 32_000,
                                        label="scripted test model") for role, model in models.items()})
    return pool, models


def events(run_dir: Path) -> list[Event]:
    return read_events(run_dir / "run.jsonl")


def test_full_round_with_scripted_models(small_corpus, data_dir, tmp_path):
    ids = ids_by_title(small_corpus)
    market = ids["Cloud market"]

    def findings(messages, kwargs):
        assert market in enum_of(kwargs, "source_ids")
        return AIMessage(content=json.dumps({"findings": [
            {"claim": "Public cloud spending will reach 723 billion USD in 2026.", "source_ids": [market],
             "subject": "cloud spending 2026"},
            {"claim": "Public cloud spending will reach 71.2 billion in 2026.", "source_ids": [market],
             "subject": "cloud spending 2026"}]}))

    def review(messages, kwargs):
        return AIMessage(content=json.dumps({"verdicts": [
            {"msg_id": i, "verdict": "accept", "reason": "supported"} for i in enum_of(kwargs, "msg_id")]}))

    # the Writer's section for the question's one part: a figure no source gives goes back once
    bad_draft = {"heading": "Size", "claims": [{"text": "It is 723 billion USD, up from 999 billion USD.",
                                                "source_ids": [market]},
                                               {"text": "Azure grew 31%.", "source_ids": [market]}]}
    good_draft = {"heading": "Cloud growth", "claims": [
        {"text": "Spending will reach 723 billion USD in 2026.", "source_ids": [market]},
        {"text": "Azure grew 31% while AWS grew 17%.", "source_ids": [market]}]}

    def second_draft(messages, kwargs):
        assert "999 does not appear" in messages[-1].content  # the failure and its reason reached the model
        return AIMessage(content=json.dumps(good_draft))

    pool, models = pool_of({
        "planner": [{"subquestions": [{"question": "How big is the 2026 public cloud market?"}]}],
        "searcher": [AIMessage(content="", tool_calls=[{"name": "local_search", "args": {"query": "cloud market 2026"},
                                                        "id": "call_1"}]),
                     AIMessage(content="done"), findings],
        "critic": [review],
        "writer": [bad_draft, second_draft],
    })
    out = tmp_path / "run"
    result = run_research(ResearchRequest(question="How big is the 2026 public cloud market?", corpus=[small_corpus],
                                          out=out, models=pool), Settings(rounds=1, data_dir=data_dir))
    for model in models.values():
        model.assert_done()
    report = (out / "report.md").read_text()
    assert report == result.report
    assert "723 billion USD in 2026. [1]" in report and "999" not in report
    assert f"(source `{market}`)" in report
    texts = {d.source_id: d.text for d in load_corpus(small_corpus)}
    assert markdown_problems(report, texts) == []
    assert json.loads((out / "charter.json").read_text())["max_rounds"] == 1
    assert market in load_sources(out).cited

    log = events(out)
    kinds = {e.event for e in log}
    assert {"llm_call", "bus_message", "tool_call", "tool_result", "round_end", "claim_rejected"} <= kinds
    calls = [e for e in log if isinstance(e, LlmCall)]
    assert len(calls) == 7
    for call in calls:
        assert {"charter", "task", "role"} <= set(call.sections)
        assert isinstance(call.messages[0].content, str) and call.messages[0].content.startswith("## Role")
    # the paraphrased number never became a conclusion
    conclusions = [e.message.body.content for e in log if isinstance(e, BusMessage)
                   and e.message.header.msg_type is MsgType.CONCLUSION]
    assert conclusions and not any("71.2" in c for c in conclusions)
    # tool results are marked as data and routed back with their call id
    tool_prompt = models["searcher"].calls[1]["messages"]
    assert tool_prompt[-1].tool_call_id == "call_1"
    assert DATA_BLOCK.fullmatch(tool_prompt[-1].content).group(2) == "tool_result"


def test_worktables_stay_private(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    run_research(ResearchRequest(question="How big is the 2026 public cloud market?", corpus=[small_corpus], out=out),
                 Settings(model="test", rounds=1, data_dir=data_dir))
    calls = [e for e in events(out) if isinstance(e, LlmCall)]
    planner_notes = "asked 1 question"
    for call in calls:
        text = json.dumps([m.model_dump(mode="json") for m in call.messages])
        if call.agent != "planner":
            assert planner_notes not in text
    assert any(c.agent == "writer" for c in calls)


FIFTH_ROLE = '''
from pathlib import Path
from briefroom.agents.base import Role
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import MsgType


def step(turn):
    for message in turn.unread:
        turn.note(f"got {message.msg_id} {message.header.msg_type.value} from {message.header.sender}")


ROLE = Role(name="factchecker", prompt=Path(__file__).with_name("factchecker.md"),
            subscriptions=(Subscription(msg_type=MsgType.CONCLUSION, senders=("searcher",)),),
            publications=(), step=step, after=("check",), before=("draft",))
'''


def test_fifth_role_from_one_file_gets_exactly_its_subscriptions(small_corpus, data_dir, tmp_path):
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "factchecker.py").write_text(FIFTH_ROLE)
    (roles / "factchecker.md").write_text("You check facts.\n{{data_notice}}\n")
    out = tmp_path / "run"
    result = run_research(ResearchRequest(question="How big is the 2026 public cloud market and who grows fastest?",
                                          corpus=[small_corpus], out=out, roles_dirs=[roles]),
                          Settings(model="test", rounds=2, data_dir=data_dir))
    log = events(out)
    published = [e.message for e in log if isinstance(e, BusMessage)]
    expected = [m.header.msg_id for m in published
                if m.header.msg_type is MsgType.CONCLUSION and m.header.sender == "searcher"]
    notes = result.state["worktables"]["factchecker"].notes
    received = [n.split()[1] for n in notes]
    assert expected and received == expected
    assert all(" conclusion from searcher" in n for n in notes)
    for event in log:
        if isinstance(event, BusMessage):
            in_list = "factchecker" in event.recipients
            assert in_list == (event.message.header.msg_id in expected)
    assert json.loads((out / "charter.json").read_text())["roles"] == ["planner", "searcher", "critic",
                                                                        "factchecker", "writer"]


def test_model_returning_garbage_stops_with_contract_error_and_keeps_the_log(small_corpus, data_dir, tmp_path):
    from briefroom.errors import ContractError

    pool, models = pool_of({"planner": ["I think the answer is 42", '{"subquestions": []}', "{not json"],
                            "searcher": [], "critic": [], "writer": []})
    out = tmp_path / "run"
    with pytest.raises(ContractError, match="planner: the model's Plan was invalid after 2 corrections"):
        run_research(ResearchRequest(question="How big is the cloud market?", corpus=[small_corpus], out=out,
                                     models=pool), Settings(rounds=1, data_dir=data_dir))
    models["planner"].assert_done()
    log = events(out)
    assert [e.attempt for e in log if isinstance(e, ContractErrorEvent)] == [0, 1, 2]
    assert isinstance(log[-1], ErrorEvent) and log[-1].kind == "ContractError"
    # the correction prompt tells the model what was wrong
    correction = models["planner"].calls[1]["messages"][-1].content
    assert "did not match the required output" in correction


CUT_DRAFT = AIMessage(content='{"title": "Cloud", "short_answer": {"text": "723 billion USD and then on and on',
                      response_metadata={"finish_reason": "length"})


@pytest.mark.parametrize("replies", [['{"title": "Cloud", "short_answer": {"text": "723', "not json at all",
                                      '{"title": 3}'],
                                     [CUT_DRAFT]], ids=["invalid three times", "cut at the output cap once"])
def test_a_writer_that_cannot_write_its_json_still_hands_in_the_verified_quotes(small_corpus, data_dir, tmp_path,
                                                                              replies):
    from briefroom.events import Fallback

    market = ids_by_title(small_corpus)["Cloud market"]

    def findings(messages, kwargs):
        return AIMessage(content=json.dumps({"findings": [
            {"claim": "Public cloud spending will reach 723 billion USD in 2026.", "source_ids": [market],
             "subject": "cloud spending 2026"}]}))

    def review(messages, kwargs):
        return AIMessage(content=json.dumps({"verdicts": [
            {"msg_id": i, "verdict": "accept", "reason": "supported"} for i in enum_of(kwargs, "msg_id")]}))

    pool, models = pool_of({
        "planner": [{"subquestions": [{"question": "How big is the 2026 public cloud market?"}]}],
        "searcher": [AIMessage(content="", tool_calls=[{"name": "local_search", "args": {"query": "cloud market 2026"},
                                                        "id": "call_1"}]),
                     AIMessage(content="done"), findings],
        "critic": [review, review],
        "writer": list(replies),
    })
    out = tmp_path / "run"
    result = run_research(ResearchRequest(question="How big is the 2026 public cloud market?", corpus=[small_corpus],
                                          out=out, models=pool), Settings(rounds=1, data_dir=data_dir))
    models["writer"].assert_done()
    assert result.state["report"].accepted
    short = result.report.split("## Short answer", 1)[1].split("##", 1)[0]
    assert "723 billion USD" in short and "[1]" in short  # a verified sentence of the source, cited
    texts = {d.source_id: d.text for d in load_corpus(small_corpus)}
    assert markdown_problems(result.report, texts) == []
    assert any(isinstance(e, Fallback) and e.agent == "writer" and "invalid JSON or cut" in e.reason
               for e in events(out))
