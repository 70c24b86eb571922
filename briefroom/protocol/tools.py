"""Typed tools: pydantic arguments and results, OpenAI tool definitions, one runner.

A model's tool call is validated against the argument model before anything runs; a
tool that raises becomes an EngineeringFailure payload the model can read. Transient
failures (a crash, a timeout) are retried inside the tool with exponential backoff;
a tool that still fails runs its configured fallback (e.g. `read_source` ->
`local_search`). Either way the result goes back with its own tool_call_id, through
the envelope.

Each tool declares its own output budget (`Tool.output_budget`, in tokens): the most
of one result a model is shown. The envelope fits what it shows into the budget of
the tool that produced it (`fit_output`), offloading the full result to an artifact
the model can drill into, and logs the budget with the size before and after.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import cast

from pydantic import BaseModel, Field, ValidationError

from briefroom.errors import EngineeringFailure
from briefroom.protocol.artifacts import ArtifactStore
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.redaction import redact_data


class ReadArtifactArgs(BaseModel):
    pointer: str = Field(pattern=r"^art:[0-9a-f]{16}$", description="pointer from an offloaded tool result",
                         json_schema_extra={"x-fill": "artifact"})
    fields: list[str] = Field(default_factory=list, max_length=8, description="JSON fields to keep, e.g. text")
    start: int = Field(default=0, ge=0)
    end: int | None = Field(default=None, ge=0, description="character range end (at most 6000 characters)")


class ReadArtifactResult(BaseModel):
    pointer: str
    content: str


# Output budgets, in tokens of one result shown to a model (the design documents give
# 1,500-4,000 per tool). Each is sized to what the tool returns when it works as meant
# (the corpus tools' budgets are in `corpus/tools.py`):
# - read_artifact: a slice is at most MAX_ARTIFACT_SLICE (6,000) characters, ~1,500
#   tokens; the budget matches, so a slice is never cut twice.
# - any other tool (plugins, recall_memory): 1,500, the design's floor.
DEFAULT_OUTPUT_BUDGET = 1500
READ_ARTIFACT_BUDGET = 1500


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args_model: type[BaseModel]
    result_model: type[BaseModel]
    run: Callable[[BaseModel], BaseModel]
    timeout_s: float = 30.0  # a tool that hangs becomes an EngineeringFailure, not a hung run
    retries: int = 0  # extra attempts after a transient failure (exception, timeout)
    backoff_s: float = 0.25  # wait before the first retry; doubles for each further one
    fallback: str | None = None  # tool to run when this one fails for good
    fallback_args: Callable[[BaseModel, str], dict] | None = None  # (failed args, task) -> its arguments
    output_budget: int = DEFAULT_OUTPUT_BUDGET  # tokens of one result a model may see; the rest is offloaded
    # A large result goes to an artifact the model reads in slices; a tool whose result
    # already is such a slice (read_artifact) is shown within its budget instead.
    offload: bool = True

    def __post_init__(self) -> None:
        if self.output_budget < 1:
            raise ValueError(f"tool {self.name!r}: output_budget must be at least 1 token")

    def definition(self) -> dict:
        """OpenAI function-tool definition (what `bind_tools` and the prompt show)."""
        schema = self.args_model.model_json_schema()
        schema.pop("title", None)
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": schema}}


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call produced: a validated result or a structured error."""

    call_id: str
    tool: str
    args: dict
    result: BaseModel | None
    error: dict | None
    attempts: int = 1
    fallback: "ToolOutcome | None" = None  # what the configured fallback tool returned
    redactions: dict = field(default_factory=dict)  # label -> how many secrets were taken out of the result
    output_budget: int = DEFAULT_OUTPUT_BUDGET  # the producing tool's budget: what the envelope trims to
    offload: bool = True  # the producing tool's `offload`

    @property
    def ok(self) -> bool:
        return self.error is None

    def redaction_counts(self) -> dict[str, int]:
        """Secrets taken out of this result and its fallback's, by label."""
        counts: dict[str, int] = {}
        for outcome in self.outcomes():
            for label, n in outcome.redactions.items():
                counts[label] = counts.get(label, 0) + n
        return counts

    def outcomes(self) -> list["ToolOutcome"]:
        """This outcome and its fallback's, for code that collects results."""
        return [self] if self.fallback is None else [self, self.fallback]


MAX_ARTIFACT_SLICE = 6000


@dataclass(frozen=True)
class FittedOutput:
    """A tool result's text fitted into its tool's budget, with the sizes to log."""

    text: str
    budget: int
    tokens_before: int  # what was to be shown, in full
    tokens_after: int  # what is shown: at most `budget`

    @property
    def trimmed(self) -> bool:
        return self.tokens_after < self.tokens_before


def fit_output(text: str, counter: TokenCounter, budget: int, full: str | None = None) -> FittedOutput:
    """The longest head of `text` that, with a note saying it was cut, fits `budget`
    tokens. `full`: the whole result, when `text` stands for it (an offloaded result's
    pointer and summary); it is counted only if the note is needed."""
    before = counter.count(text)
    if before <= budget:
        return FittedOutput(text, budget, before, before)
    marker = f"\n... [trimmed: {counter.count(full) if full is not None else before} tokens in full]"
    room = budget - counter.count(marker)
    if room <= 0:  # a budget smaller than the note: the head alone
        head = counter.head(text, budget)
        return FittedOutput(head, budget, before, counter.count(head))
    shown = counter.head(text, room) + marker
    while counter.count(shown) > budget and room > 0:  # a merge across the cut cost a token or two
        room -= 1
        shown = counter.head(text, room) + marker
    return FittedOutput(shown, budget, before, counter.count(shown))


def artifact_tool(store: ArtifactStore) -> Tool:
    def read_artifact(args: BaseModel) -> BaseModel:
        assert isinstance(args, ReadArtifactArgs)
        end = min(args.end if args.end is not None else args.start + MAX_ARTIFACT_SLICE,
                  args.start + MAX_ARTIFACT_SLICE)
        return ReadArtifactResult(pointer=args.pointer, content=store.read(args.pointer, args.fields, args.start, end))

    return Tool("read_artifact", "Read part of an offloaded tool result: chosen fields or a character range.",
                ReadArtifactArgs, ReadArtifactResult, read_artifact, output_budget=READ_ARTIFACT_BUDGET,
                offload=False)


def run_tool(tool: Tool, call_id: str, raw_args: dict | str, *, tools: Mapping[str, Tool] | None = None,
             task: str = "", sleep: Callable[[float], None] = time.sleep) -> ToolOutcome:
    """Validate arguments, run the tool (with retries, then its fallback), validate its
    result; never raises. `tools` is where the fallback is looked up; `task` is what the
    role was doing, for the fallback's arguments."""
    try:
        args_dict = json.loads(raw_args) if isinstance(raw_args, str) else dict(raw_args)
        args = tool.args_model.model_validate(args_dict)
    except (ValidationError, json.JSONDecodeError, TypeError) as exc:
        # A validation error quotes the input: both go through redaction like a result does.
        found: dict[str, int] = {}
        return ToolOutcome(call_id, tool.name, cast(dict, redact_data({"raw": str(raw_args)[:500]}, found)), None,
                           cast(dict, redact_data({"error": "contract_error", "tool": tool.name,
                                                   "message": f"arguments do not match the schema: {_short(exc)}"},
                                                  found)),
                           redactions=found, output_budget=tool.output_budget, offload=tool.offload)
    attempt = 0
    while True:
        attempt += 1
        try:
            redactions: dict[str, int] = {}
            result = _attempt(tool, args, redactions)
            return ToolOutcome(call_id, tool.name, args.model_dump(), result, None, attempts=attempt,
                               redactions=redactions, output_budget=tool.output_budget, offload=tool.offload)
        except EngineeringFailure as exc:
            if exc.transient and attempt <= tool.retries:
                sleep(tool.backoff_s * 2 ** (attempt - 1))
                continue
            # An error message may quote what failed (a URL with its token, a config line).
            payload = cast(dict, redact_data({**exc.payload(), "attempts": attempt}, redactions))
            break
    fallback = None
    if tool.fallback and tools and tool.fallback in tools and tool.fallback != tool.name:
        fallback_args = tool.fallback_args(args, task) if tool.fallback_args else {}
        # No `tools` here: a fallback does not chain into further fallbacks.
        fallback = run_tool(tools[tool.fallback], f"{call_id}-fallback", fallback_args, sleep=sleep)
        payload["fallback"] = {"tool": tool.fallback, "ok": fallback.ok}
    return ToolOutcome(call_id, tool.name, args.model_dump(), None, payload, attempts=attempt, fallback=fallback,
                       redactions=redactions, output_budget=tool.output_budget, offload=tool.offload)


def _attempt(tool: Tool, args: BaseModel, redactions: dict[str, int]) -> BaseModel:
    """One try; every failure comes out as an EngineeringFailure saying whether to retry."""
    try:
        raw = _with_timeout(tool, args)
        if not isinstance(raw, BaseModel):
            raise EngineeringFailure(f"{tool.name} returned {type(raw).__name__}, not {tool.result_model.__name__}",
                                     tool=tool.name)
        # Redacted before validation and before anything downstream (envelope, state, log) sees it.
        return tool.result_model.model_validate(redact_data(raw.model_dump(), redactions))
    except ValidationError as exc:
        raise EngineeringFailure(f"{tool.name} returned a result that does not match its schema: {_short(exc)}",
                                 tool=tool.name) from None
    except EngineeringFailure:
        raise
    except Exception as exc:  # a tool bug must not kill the run; it is reported (and may pass on a retry)
        raise EngineeringFailure(f"{type(exc).__name__}: {exc}", tool=tool.name, transient=True) from None


def _with_timeout(tool: Tool, args: BaseModel) -> BaseModel:
    """Run the tool in a worker thread and stop waiting after its timeout.

    Python cannot kill the thread; it finishes in the background and its result is
    discarded. The run goes on with a structured error instead of hanging.
    """
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"tool-{tool.name}")
    future = pool.submit(tool.run, args)
    try:
        return future.result(timeout=tool.timeout_s)
    except FutureTimeout:
        raise EngineeringFailure(f"{tool.name} timed out after {tool.timeout_s:g}s", tool=tool.name,
                                 transient=True) from None
    finally:
        pool.shutdown(wait=False)


def _short(exc: Exception) -> str:
    return str(exc).replace("\n", " ")[:300]
