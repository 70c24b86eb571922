"""Memory read at decision points: the Critic before it rejects a conclusion, the Writer
before it writes that the documents do not say; a memory a role used is not in its
later prompts."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage

from briefroom.agents.base import Turn
from briefroom.agents.registry import bus_for, discover
from briefroom.agents.report_message import REPORT, ReportMessage
from briefroom.agents.run_context import RunContext
from briefroom.events import MemoryRead, MemoryReuse
from briefroom.llm import ModelHandle, ModelPool
from briefroom.memory.namespace import Namespace
from briefroom.memory.reading import memory_reader, memory_tool, unused_facts
from briefroom.memory.store import MemoryStore
from briefroom.memory.zones import FactRow
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.messages import MsgType, make_message
from briefroom.protocol.payloads import Conclusion, Critique
from briefroom.records import Charter, Fact, Passage, SourceRecord
from briefroom.report.language import LABELS
from briefroom.runlog import RunLog
from briefroom.state import reducers
from tests.fakes import HashEmbedder, ScriptedChatModel

S_MARKET, S_GROWTH = "S0000aaaa", "S0000bbbb"
SPENDING = "Public cloud spending will reach 723 billion USD in 2026."
GROWTH = "Azure grew fastest among the large providers, by 31 percent."
DOCS = {S_MARKET: SimpleNamespace(text=f"Cloud market outlook. {SPENDING} Buyers keep moving workloads.",
                                  title="Cloud market", path="market.md"),
        S_GROWTH: SimpleNamespace(text=f"Provider growth. Public cloud spending will reach a new high in 2026. "
                                       f"{GROWTH}", title="Provider growth", path="growth.md")}
QUESTION = "How big will public cloud spending be in 2026, and which provider grew fastest?"
NOT_SAID = LABELS["en"]["not_said"]



NS = Namespace("alice", "s1", "run2")


@pytest.fixture
def store(tmp_path):
    s = MemoryStore(tmp_path, HashEmbedder())
    yield s
    s.close()


def remember(store: MemoryStore, text: str = SPENDING, value: str = "723") -> str:
    """A fact an earlier run verified (two roles confirmed it), read in S_MARKET."""
    fact_id, _, _ = store.put_fact(Namespace("alice", "s1", "run1"), FactRow(
        "public cloud spending 2026", "billion usd", value, "billion USD", text, (S_MARKET,),
        ("critic", "searcher"), "run1"))
    return fact_id


def memory_on(store):
    return {"recall_memory": memory_tool(store, NS, "user", 0.75, 0.5)}


def memory_off():
    return {"recall_memory": memory_tool(None, None, "user", 0.75, 0.5)}  # what --no-memory and replays register


def accept_all(messages, kwargs):
    ids = re.search(r'"msg_id": \{[^{}]*?"enum": (\[[^\]]*\])', json.dumps(kwargs["response_format"]["schema"]))
    return AIMessage(content=json.dumps({"verdicts": [{"msg_id": i, "verdict": "accept", "reason": "fine"}
                                                      for i in json.loads(ids.group(1))]}))


def context(role: str, model: ScriptedChatModel, tools: dict) -> RunContext:
    roles = discover()
    pool = ModelPool({role: ModelHandle(role, "scripted", "scripted", model, "json_object_schema", 32_000,
                                        label="scripted")})
    index = SimpleNamespace(document=DOCS.get, embedder=HashEmbedder())
    return RunContext(bus=bus_for(roles), models=pool, counter=TokenCounter(), log=RunLog(None), index=index,
                      tools=tools)


def role_named(name: str):
    return next(r for r in discover() if r.name == name)


def growth_source() -> SourceRecord:
    return SourceRecord(source_id=S_GROWTH, title="Provider growth", path="growth.md",
                        passages=(Passage(chunk_id="g1", start=17, end=17 + len(GROWTH), text=GROWTH),))


def conclusion(content: str, refs: list[str], seq: int = 1, question: str = "How big?"):
    return make_message(sender="searcher", msg_type=MsgType.CONCLUSION, content=content, round=1, seq=seq,
                        references=refs, payload=Conclusion(question=question))


# --- the Critic --------------------------------------------------------------------------
def critic_turn(tools: dict, *messages) -> Turn:
    state = {"charter": Charter(goal=QUESTION, acceptance_criteria=("cited",), max_rounds=2), "round": 1,
             "whiteboard": list(messages), "seen": {}, "sources": {S_GROWTH: growth_source()}, "facts": []}
    turn = Turn(role=role_named("critic"), state=state, ctx=context("critic", ScriptedChatModel([accept_all]), tools))
    turn.role.step(turn)
    return turn


def review_of(turn: Turn) -> Critique:
    (review,) = [m.payload_as(Critique) for m in turn.published if m.header.msg_type == MsgType.CRITIQUE]
    return review


def memory_events(turn: Turn, kind):
    return [e for e in turn.ctx.log.events if isinstance(e, kind)]


def test_a_conclusion_citing_the_wrong_source_stays_rejected_but_memory_backing_is_said_and_joins_the_facts(store):
    fact_id = remember(store)
    wrong = conclusion(SPENDING, [S_GROWTH])  # the growth document says spending grows, not 723

    without = critic_turn(memory_off(), wrong)
    reason = review_of(without).rejected[wrong.msg_id]
    assert reason.startswith("unsupported_number") and "memory" not in reason
    assert not memory_events(without, MemoryRead) and "memory_used" not in without.extra
    assert S_MARKET not in without.all_sources()

    turn = critic_turn(memory_on(store), wrong)
    review = review_of(turn)
    assert review.accepted == ()  # its own citation still does not say it: no acceptance
    reason = review.rejected[wrong.msg_id]
    assert reason.startswith("unsupported_number") and f"verified fact M{fact_id}" in reason and S_MARKET in reason
    # the claim reaches the Writer as the verified fact, cited by its original source
    (backing,) = [f for f in turn.extra["facts"] if f.found_by == "memory"]
    assert (backing.fact_id, backing.text, backing.source_id) == (f"M{fact_id}", SPENDING, S_MARKET)
    assert turn.all_sources()[S_MARKET].passages[0].text == SPENDING
    (read,) = memory_events(turn, MemoryRead)
    assert read.agent == "critic" and [i.id for i in read.items] == [fact_id]
    (reuse,) = memory_events(turn, MemoryReuse)
    assert (reuse.agent, reuse.fact, reuse.source) == ("critic", f"M{fact_id}", S_MARKET)
    assert turn.updates()["memory_used"] == {"critic": [fact_id]}


def test_a_conclusion_whose_source_memory_holds_is_accepted_with_the_memory_fact_as_support(store):
    fact_id = remember(store)
    unretrieved = conclusion(SPENDING, [S_MARKET])  # a source this run has not retrieved

    without = critic_turn(memory_off(), unretrieved)
    assert review_of(without).rejected[unretrieved.msg_id].startswith("unresolved_citation")

    turn = critic_turn(memory_on(store), unretrieved)
    review = review_of(turn)
    assert review.accepted == (unretrieved.msg_id,) and review.rejected == {}
    assert S_MARKET in turn.updates()["sources"]
    assert any(f.fact_id == f"M{fact_id}" for f in turn.updates()["facts"])
    assert [e.agent for e in memory_events(turn, MemoryReuse)] == ["critic"]


def test_a_memory_fact_with_other_numbers_backs_nothing(store):
    remember(store, "Public cloud spending will reach 680 billion USD in 2026.", "680")
    wrong = conclusion(SPENDING, [S_GROWTH])
    turn = critic_turn(memory_on(store), wrong)
    reason = review_of(turn).rejected[wrong.msg_id]
    assert "memory" not in reason
    (read,) = memory_events(turn, MemoryRead)  # looked up (and logged), found, not used
    assert len(read.items) == 1
    assert not memory_events(turn, MemoryReuse) and "facts" not in turn.extra and S_MARKET not in turn.all_sources()


# --- the Writer --------------------------------------------------------------------------
# The Writer's model writes a section per part that has evidence; this one gives the growth
# figure whatever part it is asked about.
DRAFT = {"heading": "Provider growth", "claims": [{"text": GROWTH, "source_ids": [S_GROWTH]}]}


def writer_state(with_growth: bool = True) -> dict:
    growth = conclusion(GROWTH, [S_GROWTH], question="which provider grew fastest")
    fact = Fact(fact_id="Fgrowth", text=GROWTH, numbers=("31",), source_id=S_GROWTH, found_by="searcher", round=1,
                confirmed_by=("searcher", "critic"))
    return {"charter": Charter(goal=QUESTION, acceptance_criteria=("cited",), max_rounds=2), "round": 1,
            "whiteboard": [growth] if with_growth else [], "seen": {},
            "sources": {S_GROWTH: growth_source()} if with_growth else {},
            "facts": [fact] if with_growth else []}


def writer_turn(state: dict, tools: dict, model: ScriptedChatModel) -> Turn:
    turn = Turn(role=role_named("writer"), state=state, ctx=context("writer", model, tools))
    turn.role.step(turn)
    return turn


def report_of(turn: Turn) -> ReportMessage:
    (message,) = [m for m in turn.published if m.header.msg_type == REPORT]
    return message.payload_as(ReportMessage)


def prompt_text(model: ScriptedChatModel, call: int) -> str:
    return "\n".join(str(m.content) for m in model.calls[call]["messages"])


def apply(state: dict, update: dict) -> dict:
    """A turn's update merged into the state as the graph does it."""
    merged = dict(state)
    for key, reducer in (("whiteboard", reducers.append_messages), ("seen", reducers.merge_seen),
                         ("facts", reducers.merge_facts), ("sources", reducers.merge_sources),
                         ("memory_used", reducers.merge_memory_used)):
        if key in update:
            merged[key] = reducer(state.get(key), update[key])
    return merged


def test_the_writer_fills_a_part_no_verified_fact_answers_from_memory_cited_by_its_original_source(store):
    fact_id = remember(store)

    without = writer_turn(writer_state(), memory_off(), ScriptedChatModel([DRAFT]))
    first = report_of(without).draft.sections[0]
    assert [c.text for c in first.claims] == [NOT_SAID]
    assert not memory_events(without, MemoryRead)

    turn = writer_turn(writer_state(), memory_on(store), ScriptedChatModel([DRAFT]))
    sent = report_of(turn)
    first, second = sent.draft.sections
    assert [(c.text, c.source_ids) for c in first.claims] == [(f"“{SPENDING}”", [S_MARKET])]
    assert any(GROWTH in c.text for c in second.claims)  # the part the run answered keeps its own evidence
    assert "723 billion USD" in sent.markdown and "market.md" in sent.markdown  # cited by its original source
    # looked up once, for the one part nothing answered; logged; marked used by the Writer
    (read,) = memory_events(turn, MemoryRead)
    assert read.agent == "writer" and [i.id for i in read.items] == [fact_id]
    (reuse,) = memory_events(turn, MemoryReuse)
    assert (reuse.question, reuse.fact, reuse.source) == ("How big will public cloud spending be in 2026",
                                                          f"M{fact_id}", S_MARKET)
    update = turn.updates()
    assert update["memory_used"] == {"writer": [fact_id]}
    assert [f.fact_id for f in update["facts"]] == [f"M{fact_id}"] and S_MARKET in update["sources"]


def test_a_remembered_fact_that_does_not_answer_the_part_is_not_used(store):
    # the right subject, the wrong year: the outline judges it as it judges every fact
    remember(store, "Public cloud spending reached 410 billion USD in 2021.", "410")
    turn = writer_turn(writer_state(), memory_on(store), ScriptedChatModel([DRAFT]))
    assert [c.text for c in report_of(turn).draft.sections[0].claims] == [NOT_SAID]
    assert len(memory_events(turn, MemoryRead)) == 1 and not memory_events(turn, MemoryReuse)
    update = turn.updates()
    assert "memory_used" not in update and "facts" not in update and S_MARKET not in update.get("sources", {})


def test_with_no_accepted_conclusion_the_writer_asks_memory_before_writing_a_no_evidence_report(store):
    remember(store)
    silent = ScriptedChatModel([])  # a no-evidence report needs no model
    without = writer_turn(writer_state(with_growth=False), memory_off(), silent)
    assert report_of(without).draft.short_answer.text == LABELS["en"]["no_evidence"]

    model = ScriptedChatModel([{"heading": "Spending", "claims": [{"text": SPENDING, "source_ids": [S_MARKET]}]}])
    turn = writer_turn(writer_state(with_growth=False), memory_on(store), model)
    first = report_of(turn).draft.sections[0]
    # the model's sentence stays (it is the remembered source's own, verified), cited by that source
    assert [(c.text.strip("“”"), c.source_ids) for c in first.claims][0] == (SPENDING, [S_MARKET])
    assert S_MARKET in json.dumps(model.calls[0]["kwargs"]["response_format"]["schema"])  # it may cite it
    # both parts were looked up (once each), one was filled
    assert [e.agent for e in memory_events(turn, MemoryRead)] == ["writer", "writer"]
    assert len(memory_events(turn, MemoryReuse)) == 1


def test_a_memory_fact_the_writer_used_is_not_in_its_next_prompt(store):
    fact_id = remember(store)
    model = ScriptedChatModel([DRAFT] * 9)

    def prompts_from(first_call: int) -> str:
        return "\n".join(prompt_text(model, n) for n in range(first_call, len(model.calls)))

    first = writer_turn(writer_state(), memory_on(store), model)
    assert model.calls and SPENDING not in prompts_from(0)  # unknown when the prompt was built; found after
    state = apply(writer_state(), first.updates())
    assert state["memory_used"] == {"writer": [fact_id]}

    start = len(model.calls)
    second = writer_turn(state, memory_on(store), model)
    assert len(model.calls) > start and SPENDING not in prompts_from(start)  # used once: withdrawn from its prompts
    assert GROWTH in prompts_from(start)  # the run's own facts are still shown
    # the report still quotes it (code builds the sections from the run's facts), with no new lookup
    assert report_of(second).draft.sections[0].claims[0].text == f"“{SPENDING}”"
    assert not memory_events(second, MemoryRead)

    # the control: the same state without the mark shows the fact in the facts section
    unmarked = {k: v for k, v in state.items() if k != "memory_used"}
    start = len(model.calls)
    writer_turn(unmarked, memory_on(store), model)
    assert SPENDING in prompts_from(start)


def test_unused_facts_leaves_out_only_what_that_role_used():
    remembered = Fact(fact_id="Mf1", text=SPENDING, numbers=("723", "2026"), source_id=S_MARKET, found_by="memory",
                      round=0, confirmed_by=("critic", "searcher"))
    found = Fact(fact_id="f1", text=GROWTH, numbers=("31",), source_id=S_GROWTH, found_by="searcher", round=1)
    # memory item f1 is the run's fact Mf1; the run's own fact "f1" is not a memory and stays
    state = {"memory_used": {"critic": ["f1"]}}
    assert unused_facts([remembered, found], state, "critic") == [found]
    assert unused_facts([remembered, found], state, "writer") == [remembered, found]  # per role
    assert unused_facts([remembered, found], {}, "critic") == [remembered, found]
    assert reducers.merge_memory_used({"writer": ["a"]}, {"writer": ["b", "a"], "critic": ["c"]}) == \
        {"writer": ["a", "b"], "critic": ["c"]}


def test_memory_off_gives_no_reader_and_the_tool_still_answers(store):
    assert memory_reader(memory_off()) is None and memory_reader({}) is None
    remember(store)
    reader = memory_reader(memory_on(store))
    assert reader is not None and [r.text for r in reader.verified_facts("public cloud spending 2026")] == [SPENDING]
    tool = memory_on(store)["recall_memory"]
    assert any(m.text == SPENDING for m in tool.run(tool.args_model(query="public cloud spending 2026")).memories)


def test_after_memory_the_writer_asks_the_searcher_about_the_part_nothing_answers():
    # the model wrote the growth figure under the spending part: that part is still unanswered
    turn = writer_turn(writer_state(), memory_off(), ScriptedChatModel([DRAFT]))
    assert [c.text for c in report_of(turn).draft.sections[0].claims] == [NOT_SAID]
    asked = [m for m in turn.published if m.header.msg_type == MsgType.QUESTION]
    assert [(m.header.receiver, m.body.content) for m in asked] == [
        ("searcher", "How big will public cloud spending be in 2026")]
