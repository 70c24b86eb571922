"""The run log's typed events: every kind round-trips, writers are checked, bad lines are named."""

from __future__ import annotations

import json
import warnings

import pytest
from pydantic import ValidationError

from briefroom.errors import ConfigError
from briefroom.events import (
    KINDS,
    TORN_LINE,
    BadLine,
    BudgetStop,
    BuildChange,
    BuildSummary,
    BusMessage,
    BusMessagePayload,
    ChatMessage,
    ClaimRejected,
    Clarification,
    Compaction,
    ContractErrorEvent,
    ErrorEvent,
    Event,
    Fallback,
    Finishing,
    HandleInfo,
    Index,
    Interrupted,
    LlmCall,
    LoggedToolCall,
    LogReadError,
    MemoryGates,
    MemoryRead,
    MemoryReadItem,
    MemoryReuse,
    MemoryWrite,
    Models,
    ModelServer,
    PlanReview,
    ReportAccepted,
    ReportRepair,
    ResumedAfter,
    ReviewedTask,
    RoundEnd,
    RoundSummaryEvent,
    RoundSummaryPayload,
    RunEnd,
    RunPaused,
    RunRestart,
    RunResume,
    RunStart,
    SkippedFile,
    SummaryPointPayload,
    SummaryPointReplaced,
    ToolCall,
    ToolError,
    ToolFallbackInfo,
    ToolResult,
    parse_event,
    read_events,
)
from briefroom.protocol.messages import MsgType, Priority, make_message
from briefroom.runlog import RunLog

MESSAGE = make_message(sender="planner", msg_type=MsgType.INSTRUCTION, content="How big is it?", round=1, seq=1,
                       receiver="searcher", references=("S1",), priority=Priority.P0, ttl_rounds=1)

EXAMPLES: list[Event] = [
    RunStart(question="How big?", rounds=2, roles=["planner", "writer"], corpus=["/c"]),
    RunRestart(reason="starting over", moved_lines=3),
    RunResume(round=1, next=["writer"], moved_lines=2, after=ResumedAfter(event="error", kind="FatalBreaker",
                                                                          message="budget"),
              documents=4, settings={"rounds": 2, "model": "test", "role_models": {"writer": "x"}}),
    RunResume(round=None, next=[], moved_lines=0, after=ResumedAfter(event="killed"), documents=1, settings={}),
    Index(documents=2, embedded_chunks=7, reused_documents=1, seconds=0.25,
          skipped=[SkippedFile(path="/c/scan.pdf", reason="no text")]),
    ModelServer(base_url="http://127.0.0.1:8080/v1", model_path="model.gguf"),
    Models(handles={"writer": HandleInfo(provider="test", model="test", label="briefroom TEST provider")}),
    LlmCall(agent="searcher", round=1, purpose="tools", attempt=0, provider="scripted", model="m",
            messages=[ChatMessage(type="system", content="## Role\nYou search."),
                      ChatMessage(type="ai", content="", tool_calls=[LoggedToolCall(name="local_search",
                                                                                    args={"query": "cloud"},
                                                                                    id="call_1")]),
                      ChatMessage(type="tool", content="<data>…</data>", tool_call_id="call_1"),
                      ChatMessage(type="human", content=["part", {"type": "text", "text": "more"}])],
            sections={"role": 10, "task": 5, "turns": 0}, prompt_tokens=15, budget=1000, use_pct=1.5,
            prefix_hash="abc", build=BuildSummary(candidates=3, included=2, compressed=0, dropped=1, changes=[
                BuildChange(section="whiteboard", key="m1", action="dropped", reason="P3", tokens=40, items=2)]),
            compaction=True, strategy="layered", completion_tokens=7, cached_tokens=None, latency_ms=12.5,
            response=ChatMessage(type="ai", content="done")),
    ContractErrorEvent(agent="planner", round=1, attempt=0, schema="Plan", error="not JSON"),
    ContractErrorEvent(agent="searcher", round=1, kind="tool_arguments", attempt=1, error="k: too big",
                       exhausted=False),
    BudgetStop(agent="writer", round=2, budget=900),
    ToolCall(agent="searcher", round=1, tool="local_search", call_id="call_1", args={"query": "cloud", "k": 5}),
    ToolResult(agent="searcher", round=1, tool="local_search", call_id="call_1", ok=True, bytes=900, trimmed=False,
               shown_bytes=900, artifact=None, attempts=1, redactions={}, fallback=None, fallback_ok=None,
               error=None),
    ToolResult(agent="searcher", round=1, tool="read_source", call_id="call_2", ok=False, bytes=120, trimmed=True,
               shown_bytes=80, artifact="art-1", attempts=3, redactions={"aws_key": 2}, fallback="local_search",
               fallback_ok=True, error=ToolError(error="engineering_failure", tool="read_source", message="timed out",
                                                 advice="do not retry the same call blindly", attempts=3,
                                                 fallback=ToolFallbackInfo(tool="local_search", ok=True))),
    Fallback(agent="searcher", round=1, reason="no successful local_search"),
    ClaimRejected(agent="searcher", round=1, claim="It is 999.", replaced_by=None),
    BusMessage(agent="planner", round=1, message=BusMessagePayload.model_validate(MESSAGE.model_dump(mode="json")),
               recipients=["searcher"]),
    MemoryReuse(agent="planner", round=1, question="How big?", fact="f1", source="S1"),
    ReportRepair(agent="critic", round=1, repair="replaced: 71.2"),
    ReportAccepted(agent="critic", round=1, repairs=1, cited=2, criteria={"Every [n] resolves.": "✓"}),
    Finishing(round=2, tokens_used=8500, max_tokens=10000),
    Compaction(round=2, stage="compress", tokens_used=7600, max_tokens=10000, share_used=0.76,
               budget_before=5000, budget_after=3000),
    SummaryPointReplaced(round=1, text="A guess.", replaced_by="f2"),
    RoundSummaryEvent(round=1, summary=RoundSummaryPayload(
        conclusions=[SummaryPointPayload(text="It is 723 billion.", source_ids=["S1"])],
        agents_involved=["searcher"], todos=[], risks=["one source"]), replaced=["m1-pla-1-abcdef"]),
    RoundEnd(round=1, expired=["m1"], live=2, pending=["writer"], done=False, report_accepted=False),
    MemoryRead(agent="planner", scope="user", threshold=0.75, fact_threshold=0.8, items=[
        MemoryReadItem(id="v1", zone="vector", similarity=0.9, score=0.5,
                       provenance={"run": "r1", "sources": ["S1"], "namespace": {"user": "alice"}})]),
    MemoryWrite(kind="fact", accepted=True, reason="confirmed", preview="It is 723.", zone="fact", action="insert",
                id="f1", entity="cloud market"),
    MemoryWrite(kind="skill_use", zone="skill", accepted=True, id="s1", action="success", reason="credited"),
    MemoryGates(seconds=0.01, written=3, rejected=9),
    RunPaused(round=1, next=["planner"]),
    PlanReview(agent="planner", round=1, before=[ReviewedTask(task_id="t1.1", question="How big?")],
               after=[ReviewedTask(task_id="t1.1", question="How big in 2026?")], accepted=False, note="2026 only"),
    Clarification(agent="planner", round=1, questions=["Which region?"], answers=["Europe"]),
    Interrupted(round=1, resume="briefroom resume runs/x"),
    ErrorEvent(kind="FatalBreaker", message="budget", traceback="Traceback …"),
    RunEnd(accepted=True, repairs=0, rounds=2, cited=["S1"], tokens_used=1234, budget=None),
]


def test_every_kind_has_an_example_here():
    assert {e.event for e in EXAMPLES} == KINDS and len(KINDS) == 31


def test_every_kind_round_trips_through_the_file(tmp_path):
    path = tmp_path / "run.jsonl"
    log = RunLog(path)
    written = [log.write(e) for e in EXAMPLES]
    log.close()
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    back = read_events(path)
    assert back == written == log.events
    for original, line, event in zip(EXAMPLES, lines, back):
        assert type(event) is type(original)
        assert event.model_copy(update={"seq": 0, "elapsed_s": 0.0}) == original  # nothing lost or changed
        assert event.record() == line  # what the reader gives back is the line, field for field
    assert [e.seq for e in back] == list(range(1, len(EXAMPLES) + 1))


def test_a_live_message_is_logged_whole_with_its_defaults(tmp_path):
    path = tmp_path / "run.jsonl"
    log = RunLog(path)
    written = log.write(BusMessage(agent="planner", round=1, message=MESSAGE, recipients=["searcher"]))
    log.close()
    line = json.loads(path.read_text(encoding="utf-8"))
    # as the message is, every field: `record` leaves off only a writer's unset top-level fields
    assert line["message"] == MESSAGE.model_dump(mode="json")
    assert written.message.header.msg_id == MESSAGE.msg_id and read_events(path) == [written]


@pytest.mark.parametrize("model, fields", [
    (ToolCall, {"agent": "s", "round": 1, "tool": "t", "call_id": "c", "argz": {}}),  # a misspelt field
    (ToolCall, {"agent": "s", "round": 1, "tool": "t", "call_id": "c"}),  # a missing one
    (RoundEnd, {"round": "first", "expired": [], "live": 0, "pending": [], "done": False,
                "report_accepted": False}),  # a wrong type
    (LlmCall, {"event": "llm_cal", "agent": "s", "round": 1}),  # an unknown kind
])
def test_a_writer_mistake_fails_at_the_call_and_writes_nothing(tmp_path, model, fields):
    with pytest.raises(ValidationError):
        model(**fields)  # where the writer builds the event
    path = tmp_path / "run.jsonl"
    log = RunLog(path)
    log.write(EXAMPLES[0])
    unchecked = model.model_construct(**fields)  # built around the models' checks: the log checks the line
    with pytest.raises(ValidationError), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic warns serialising a wrong type; the log's check is the point
        log.write(unchecked)
    log.write(EXAMPLES[1])
    log.close()
    assert [e.seq for e in read_events(path)] == [1, 2] and log.seq == 2  # no line, no gap


def test_bad_lines_are_named_with_their_number_and_a_torn_last_line_is_not_an_event(tmp_path):
    good = [json.dumps(e.model_copy(update={"seq": n}).record()) for n, e in enumerate(EXAMPLES[:3], start=1)]
    path = tmp_path / "run.jsonl"
    torn = good[2][:25]  # a kill in the middle of writing line 5
    path.write_text(f"{good[0]}\n{{oops\n{good[1]}\n{json.dumps({'event': 'run_end', 'seq': 3})}\n{torn}",
                    encoding="utf-8")
    with pytest.raises(LogReadError) as raised:
        read_events(path)
    message = str(raised.value)
    assert f"{path}:2: not valid JSON" in message and f"{path}:4: not a valid run_end event" in message
    assert ":5" not in message and ":1:" not in message and ":3:" not in message
    assert isinstance(raised.value, ConfigError) and [e.seq for e in raised.value.events] == [1, 2]
    bad: list[BadLine] = []
    assert [e.seq for e in read_events(path, on_bad_line=bad.append)] == [1, 2]
    assert [b.line for b in bad] == [2, 4]
    path.write_text(f"{good[0]}\n{torn}", encoding="utf-8")
    assert [e.seq for e in read_events(path)] == [1]  # the torn tail is left out, silently unless asked
    torn_lines: list[BadLine] = []
    assert [e.seq for e in read_events(path, on_bad_line=bad.append, on_torn_line=torn_lines.append)] == [1]
    assert [(b.line, b.reason, b.text) for b in torn_lines] == [(2, TORN_LINE, torn)]
    path.write_text(f"{good[0]}\n", encoding="utf-8")  # a whole log: nothing torn
    read_events(path, on_torn_line=torn_lines.append)
    assert len(torn_lines) == 1


def test_a_reader_ignores_a_field_a_newer_writer_added_but_not_a_missing_one():
    line = {**EXAMPLES[-1].record(), "seq": 9, "carbon_g": 1.5}
    event = parse_event(line)
    assert isinstance(event, RunEnd) and event.seq == 9 and "carbon_g" not in event.record()
    nested = EXAMPLES[4].record()
    nested["skipped"][0]["size"] = 10  # inside a nested payload too
    assert parse_event(nested) == EXAMPLES[4]
    with pytest.raises(ValidationError):
        parse_event({k: v for k, v in line.items() if k != "cited"})
    with pytest.raises(ValidationError):
        parse_event({**line, "event": "run_ended"})


def test_events_are_redacted_before_they_are_checked_and_written(tmp_path):
    from tests.secret_samples import samples

    secret = samples()[0][1]
    log = RunLog(tmp_path / "run.jsonl")
    event = log.write(ErrorEvent(kind="X", message=f"failed with {secret}", traceback=""))
    log.close()
    assert secret not in (tmp_path / "run.jsonl").read_text() and secret not in event.message
    assert "[REDACTED:" in event.message
