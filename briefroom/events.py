"""The run log's events: one model per kind of line in run.jsonl.

Every line of run.jsonl is one of the models below, told apart by its `event` field
(`Event` is their discriminated union). `RunLog` validates what a writer logs against
the model of its kind before the line is written, and every reader (inspect, the run
page, `runs show`, eval, the tests) reads the lines back as these models through
`read_events` / `parse_event`; nobody reads the log by string keys.

Unknown fields. The models forbid fields they do not declare (`extra="forbid"`): a
writer that misspells a field, or logs one the schema does not know, fails where it
builds the event, in the tests, instead of writing a line no reader looks at. A
*reader*, though, may meet a log written by a newer briefroom that added a field:
`parse_event` drops fields the schema does not know (and only those: a missing field,
a wrong type or an unknown kind is still an error) rather than refusing the line. So
writing is strict and reading is tolerant of additions, with one set of models.

Fields added to a kind after it first shipped (`strategy`, `cached_tokens` of
llm_call, `shown_bytes`, `attempts`, `redactions` and the fallback fields of
tool_result) have the defaults the readers always assumed for older logs.

Nested payloads: a bus message is logged as the `AgentMessage` model itself (one
definition of a message and its typed payload); a round summary, a prompt's messages
and a context build's decisions have log models of their own here (the live objects
are dataclasses or langchain messages, and the log is a file format that should
change only when this module says so).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError, field_serializer

from briefroom.errors import ConfigError
from briefroom.protocol.messages import AgentMessage

JsonObject: TypeAlias = dict[str, JsonValue]


class _Strict(BaseModel):
    # See the module docstring: forbid for writers; `parse_event` tolerates additions.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class _Base(_Strict):
    """What `RunLog` adds to every line: its number in the log and the run's clock."""

    event: str  # each kind narrows it to its Literal: the union's tag
    seq: int = 0
    elapsed_s: float = 0.0

    def record(self) -> dict[str, Any]:
        """The line as written: `event`, `seq`, `elapsed_s`, then the fields a writer set
        (an optional field nobody set stays off the line, as it always has)."""
        body = self.model_dump(mode="json", by_alias=True, exclude_unset=True,
                               exclude={"event", "seq", "elapsed_s"})
        return {"event": self.event, "seq": self.seq, "elapsed_s": self.elapsed_s, **body}


class TurnEvent(_Base):
    """An event of one role's turn."""

    agent: str
    round: int


# --- nested payloads ---------------------------------------------------------------------
class LoggedToolCall(_Strict):
    name: str
    args: JsonObject
    id: str | None = None


class ChatMessage(_Strict):
    """One message of a prompt or a reply, as `serialize_messages` writes it."""

    type: str  # system | human | ai | tool
    content: str | list[str | JsonObject]
    tool_calls: list[LoggedToolCall] | None = None  # ai messages that call tools
    tool_call_id: str | None = None  # tool results


class BuildChange(_Strict):
    """A context-build decision other than `included`: what was cut from a prompt, and why."""

    section: str
    key: str
    action: str  # compressed | dropped
    reason: str
    tokens: int = 0
    items: int = 1


class BuildSummary(_Strict):
    candidates: int
    included: int
    compressed: int
    dropped: int
    changes: list[BuildChange]


# An AgentMessage as logged is the message model itself (briefroom.protocol.messages,
# with its typed payload): one definition, not a copy that drifts.
BusMessagePayload = AgentMessage


class SummaryPointPayload(_Strict):
    text: str
    source_ids: list[str]


class RoundSummaryPayload(_Strict):
    conclusions: list[SummaryPointPayload]
    agents_involved: list[str]
    todos: list[str]
    risks: list[str]
    # the structured summary's other fields (records.RoundSummary); absent in older logs
    goal: str = ""
    constraints: list[str] = []
    decisions: list[str] = []
    open_questions: list[str] = []
    fact_refs: list[str] = []
    next_action: str = ""
    tasks: list[str] = []


class ToolFallbackInfo(_Strict):
    tool: str
    ok: bool


class ToolError(_Strict):
    """The structured error a tool call answers with (contract error or engineering failure)."""

    error: str  # contract_error | engineering_failure
    tool: str | None
    message: str
    advice: str | None = None
    attempts: int | None = None
    fallback: ToolFallbackInfo | None = None


class SkippedFile(_Strict):
    path: str
    reason: str


class HandleInfo(_Strict):
    provider: str
    model: str
    label: str


class ResumedAfter(_Strict):
    """How the attempt before a resume ended: the stop event's kind (or `killed`) and,
    for an error, its kind and message."""

    event: str
    kind: str | None = None
    message: str | None = None


class MemoryReadItem(_Strict):
    id: str
    zone: str
    similarity: float
    score: float
    provenance: JsonObject


# --- the events --------------------------------------------------------------------------
class RunStart(_Base):
    event: Literal["run_start"] = "run_start"
    question: str
    rounds: int
    roles: list[str]
    corpus: list[str]


class RunRestart(_Base):
    event: Literal["run_restart"] = "run_restart"
    reason: str
    moved_lines: int


class RunResume(_Base):
    event: Literal["run_resume"] = "run_resume"
    round: int | None
    next: list[str]
    moved_lines: int
    after: ResumedAfter
    documents: int
    settings: JsonObject


class Index(_Base):
    event: Literal["index"] = "index"
    documents: int
    embedded_chunks: int
    reused_documents: int
    seconds: float
    skipped: list[SkippedFile]


class ModelServer(_Base):
    event: Literal["model_server"] = "model_server"
    base_url: str
    model_path: str
    threads: int | None = None  # generating: chosen from the cores free at start, or the --threads setting
    batch_threads: int | None = None  # reading prompts: every core free at start, or the --threads setting
    free_cores: float | None = None  # None: the user set the threads
    slots: int | None = None  # one KV cache per role and searcher instance


class Models(_Base):
    event: Literal["models"] = "models"
    handles: dict[str, HandleInfo]


class LlmCall(TurnEvent):
    event: Literal["llm_call"] = "llm_call"
    purpose: str
    attempt: int
    provider: str
    model: str
    messages: list[ChatMessage]
    sections: dict[str, int]
    prompt_tokens: int
    budget: int
    use_pct: float
    prefix_hash: str
    build: BuildSummary
    compaction: bool
    strategy: str = "layered"
    completion_tokens: int
    cached_tokens: int | None = None  # None: the endpoint did not say
    # the prompt as the endpoint counted it (its tokenizer): what cached_tokens is a share of
    served_prompt_tokens: int | None = None
    latency_ms: float
    response: ChatMessage


class ContractErrorEvent(TurnEvent):
    """A reply or a tool call that did not match its schema. Two shapes: a structured
    reply (`schema` set) or tool arguments (`kind="tool_arguments"`, `exhausted` set)."""

    event: Literal["contract_error"] = "contract_error"
    kind: Literal["tool_arguments"] | None = None
    attempt: int
    schema_: str | None = Field(default=None, alias="schema")
    error: str
    exhausted: bool | None = None


class BudgetStop(TurnEvent):
    event: Literal["budget_stop"] = "budget_stop"
    budget: int


class ToolCall(TurnEvent):
    event: Literal["tool_call"] = "tool_call"
    tool: str
    call_id: str
    args: JsonObject


class ToolResult(TurnEvent):
    event: Literal["tool_result"] = "tool_result"
    tool: str
    call_id: str
    ok: bool
    bytes: int
    trimmed: bool
    shown_bytes: int | None = None
    # the tool's output budget and the shown text's size before and after fitting it
    budget_tokens: int | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    artifact: str | None
    attempts: int = 1
    redactions: dict[str, int] = Field(default_factory=dict)
    fallback: str | None = None
    fallback_ok: bool | None = None
    error: ToolError | None


class Fallback(TurnEvent):
    event: Literal["fallback"] = "fallback"
    reason: str


class ClaimRejected(TurnEvent):
    event: Literal["claim_rejected"] = "claim_rejected"
    claim: str
    replaced_by: str | None


class BusMessage(TurnEvent):
    event: Literal["bus_message"] = "bus_message"
    message: BusMessagePayload
    recipients: list[str]

    @field_serializer("message")
    def _whole(self, message: BusMessagePayload) -> dict[str, Any]:
        # The line holds the message whole, defaults included: a message is what was on
        # the bus, not a set of fields a writer chose (`record` leaves unset ones off).
        return message.model_dump(mode="json")


class MemoryReuse(TurnEvent):
    event: Literal["memory_reuse"] = "memory_reuse"
    question: str
    fact: str
    source: str


class ReportRepair(TurnEvent):
    event: Literal["report_repair"] = "report_repair"
    repair: str


class ReportAccepted(TurnEvent):
    event: Literal["report_accepted"] = "report_accepted"
    repairs: int
    cited: int
    criteria: dict[str, str]


class Finishing(_Base):
    event: Literal["finishing"] = "finishing"
    round: int
    tokens_used: int
    max_tokens: int | None


class Compaction(_Base):
    """The run crossed a compaction threshold (a share of --max-tokens): `warn` says so,
    `compress` shrinks every later prompt's budget, `finish` leaves only the Writer.
    Totals before and after: the share used, and the prompt budget a role had and has."""

    event: Literal["compaction"] = "compaction"
    round: int
    stage: Literal["warn", "compress", "finish"]
    tokens_used: int
    max_tokens: int
    share_used: float
    budget_before: int | None = None  # a prompt's budget before compression (compress only)
    budget_after: int | None = None


class SummaryPointReplaced(_Base):
    event: Literal["summary_point_replaced"] = "summary_point_replaced"
    round: int
    text: str
    replaced_by: str | None


class RoundSummaryEvent(_Base):
    event: Literal["round_summary"] = "round_summary"
    round: int
    summary: RoundSummaryPayload
    replaced: list[str]


class RoundEnd(_Base):
    event: Literal["round_end"] = "round_end"
    round: int
    expired: list[str]
    live: int
    pending: list[str]
    done: bool
    discarded: list[str] = []  # left the board with archive policy "discard": not archived
    report_accepted: bool


class MemoryRead(_Base):
    event: Literal["memory_read"] = "memory_read"
    agent: str
    scope: str
    threshold: float
    fact_threshold: float
    items: list[MemoryReadItem]


class MemoryWrite(_Base):
    """One write-gate decision: a candidate judged (and written or rejected), or a
    recalled skill credited with the run's outcome (`kind="skill_use"`)."""

    event: Literal["memory_write"] = "memory_write"
    kind: str
    accepted: bool
    reason: str
    zone: str | None
    action: str  # rejected | insert | update | ...
    preview: str | None = None  # candidates only
    id: str | None = None  # what was written
    entity: str | None = None  # facts only


class MemoryGates(_Base):
    event: Literal["memory_gates"] = "memory_gates"
    seconds: float
    written: int
    rejected: int


class RunPaused(_Base):
    event: Literal["run_paused"] = "run_paused"
    round: int
    next: list[str]
    waiting_for: str | None = None  # the question a run paused on for its user (review.py): plan_review, clarify


class ReviewedTask(_Strict):
    task_id: str
    question: str


class PlanReview(TurnEvent):
    """The user's review of the plan (`--review-plan`): the sub-questions before and
    after it, and their note; the tasks after it are the ones handed out."""

    event: Literal["plan_review"] = "plan_review"
    before: list[ReviewedTask]
    after: list[ReviewedTask]
    accepted: bool  # taken as proposed
    note: str | None = None


class Clarification(TurnEvent):
    """The Planner's clarifying questions (`--clarify`) and the user's answers ("" for none)."""

    event: Literal["clarification"] = "clarification"
    questions: list[str]
    answers: list[str]


class Interrupted(_Base):
    event: Literal["interrupted"] = "interrupted"
    round: int
    resume: str


class ErrorEvent(_Base):
    event: Literal["error"] = "error"
    kind: str
    message: str
    traceback: str


class RunEnd(_Base):
    event: Literal["run_end"] = "run_end"
    accepted: bool
    repairs: int
    rounds: int | None
    cited: list[str]
    tokens_used: int
    budget: int | None


EVENT_TYPES: tuple[type[_Base], ...] = (
    RunStart, RunRestart, RunResume, Index, ModelServer, Models, LlmCall, ContractErrorEvent, BudgetStop,
    ToolCall, ToolResult, Fallback, ClaimRejected, BusMessage, MemoryReuse, ReportRepair, ReportAccepted,
    Finishing, Compaction, SummaryPointReplaced, RoundSummaryEvent, RoundEnd, MemoryRead, MemoryWrite,
    MemoryGates, RunPaused, Interrupted, ErrorEvent, RunEnd, PlanReview, Clarification,
)

Event = Annotated[
    Union[RunStart, RunRestart, RunResume, Index, ModelServer, Models, LlmCall, ContractErrorEvent, BudgetStop,
          ToolCall, ToolResult, Fallback, ClaimRejected, BusMessage, MemoryReuse, ReportRepair, ReportAccepted,
          Finishing, Compaction, SummaryPointReplaced, RoundSummaryEvent, RoundEnd, MemoryRead, MemoryWrite,
          MemoryGates, RunPaused, Interrupted, ErrorEvent, RunEnd, PlanReview, Clarification],
    Field(discriminator="event"),
]
_WITH_ROUND = (TurnEvent, Finishing, Compaction, SummaryPointReplaced, RoundSummaryEvent, RoundEnd, RunPaused,
               Interrupted, RunResume)


def round_of(event: Event) -> int | None:
    """The round an event belongs to, for the kinds that say."""
    return event.round if isinstance(event, _WITH_ROUND) else None


KINDS: frozenset[str] = frozenset(t.model_fields["event"].default for t in EVENT_TYPES)
_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


# --- writing and reading -------------------------------------------------------------------
def validate_record(record: object) -> Event:
    """A line about to be written, checked strictly: unknown kind, unknown field, missing
    field or wrong type raise `ValidationError`."""
    return _ADAPTER.validate_python(record)


def parse_event(data: Mapping[str, Any]) -> Event:
    """A line read back. Fields this briefroom does not know (a newer writer's) are
    dropped; anything else wrong raises `ValidationError`."""
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        extra = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
        if not extra or len(extra) != exc.error_count():
            raise
    return _ADAPTER.validate_python(_without(data, extra))


def _without(data: Any, locs: list[tuple[int | str, ...]]) -> Any:
    """`data` with the values at `locs` removed (a loc may start with the union tag)."""
    out = json.loads(json.dumps(data))
    kind = out.get("event") if isinstance(out, dict) else None
    for loc in locs:
        path = list(loc[1:] if loc and loc[0] == kind else loc)
        node = out
        for key in path[:-1]:
            node = node[key]
        node.pop(path[-1], None)
    return out


@dataclass(frozen=True)
class BadLine:
    """A line of run.jsonl that is not an event, and why."""

    line: int  # 1-based
    reason: str
    text: str


class LogReadError(ConfigError):
    """run.jsonl has lines that are not events; `events` holds every line that is."""

    def __init__(self, path: Path, bad: list[BadLine], events: list[Event]):
        self.path, self.bad_lines, self.events = path, bad, events
        shown = "; ".join(f"{path}:{b.line}: {b.reason}" for b in bad[:5])
        more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
        super().__init__(shown + more)


TORN_LINE = "cut short mid-write (no newline at its end: the run was killed or crashed while writing it)"


def read_events(path: Path, *, on_bad_line: Callable[[BadLine], None] | None = None,
                on_torn_line: Callable[[BadLine], None] | None = None) -> list[Event]:
    """Every event of a run log, in order.

    A last line without its newline is what a kill cut short mid-write (every event
    ends with one): it is not an event and is left out, and goes to `on_torn_line` if
    given (a reader that shows the log says so; a resume sets it aside anyway). Any
    other line that is not JSON, or not a valid event, is a bad line: with `on_bad_line`
    each goes to it and the valid events are returned; without, `LogReadError` names
    each with its line number (and carries the valid events)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    if not text.endswith("\n"):
        torn = lines.pop()  # the torn last line (or the empty remainder of an empty file)
        if torn.strip() and on_torn_line is not None:
            on_torn_line(BadLine(len(lines) + 1, TORN_LINE, torn))
    events: list[Event] = []
    bad: list[BadLine] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            bad.append(BadLine(n, f"not valid JSON ({exc.msg})", line))
            continue
        if not isinstance(data, dict):
            bad.append(BadLine(n, "not a JSON object", line))
            continue
        try:
            events.append(parse_event(data))
        except ValidationError as exc:
            bad.append(BadLine(n, _why(data, exc), line))
    if bad and on_bad_line is None:
        raise LogReadError(path, bad, events)
    for b in bad:
        on_bad_line(b)  # type: ignore[misc]
    return events


def _why(data: Mapping[str, Any], exc: ValidationError) -> str:
    kind = data.get("event")
    if kind not in KINDS:
        return f"not a known event ({kind!r})"
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"][1:]) or "line"
    return f"not a valid {kind} event ({where}: {first['msg']}; {exc.error_count()} error(s))"
