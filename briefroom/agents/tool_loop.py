"""A role's tool conversation: the model calls tools, every result goes back through
the envelope (trimmed, redacted, offloaded, wrapped as data), bad arguments get a
bounded correction, and the loop stops at the role's budget or the run's.

A tool that broke on every call of a turn (`broken_tools`) is an error of the run, not
an empty result: a report that says "no verified answer" because a module is missing
would hide the bug. What a model caused (arguments that do not match, an id that does
not exist) and what the world answered (a 404, a site that is down) stay tool results
the model reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from briefroom.agents.model_calls import CallLog, check_run_budget
from briefroom.agents.role import Role
from briefroom.agents.run_context import RunContext
from briefroom.agents.structured import MAX_CONTRACT_RETRIES
from briefroom.errors import ConfigError, EngineeringFailure
from briefroom.events import BudgetStop, ContractErrorEvent, ToolCall, ToolResult
from briefroom.protocol.calls import normalize_calls, run_calls
from briefroom.protocol.envelope import envelope
from briefroom.protocol.prompt_assembly import BuiltPrompt, mark_data
from briefroom.protocol.tools import Tool, ToolOutcome, run_tool


class ToolTurn(Protocol):
    """What the tool loop uses of a role's turn (`agents/base.Turn` is one): named here
    so this module needs nothing of the machinery that calls it."""

    @property
    def role(self) -> Role: ...
    @property
    def ctx(self) -> RunContext: ...
    @property
    def calls(self) -> CallLog: ...
    @property
    def worker(self) -> str: ...
    @property
    def round(self) -> int: ...
    @property
    def finishing(self) -> bool: ...
    def clock(self) -> float: ...
    def build_prompt(self, task: str, *, tools: list[dict] | None = None) -> BuiltPrompt: ...


def use_tools(turn: ToolTurn, task: str, max_turns: int = 3) -> list[ToolOutcome]:
    """Let the model call this role's tools; every result goes through the envelope.

    Calls of one reply run in parallel and each result goes back with its own call.
    Arguments that do not match a tool's schema get the validation error back as a
    correction prompt, at most MAX_CONTRACT_RETRIES times (logged as contract_error);
    corrections do not use up the role's tool turns.
    """
    ctx = turn.ctx
    missing = [name for name in turn.role.tools if name not in ctx.tools]
    if missing:
        raise ConfigError(f"role {turn.role.name!r} uses tools this run does not have: {', '.join(missing)}")
    tools = {name: ctx.tools[name] for name in (*turn.role.tools, *turn.role.optional_tools) if name in ctx.tools}
    definitions = [t.definition() for t in tools.values()]
    prompt = turn.build_prompt(task, tools=definitions)
    messages: list[BaseMessage] = list(prompt.messages)
    handle = ctx.models.for_role(turn.worker)
    outcomes: list[ToolOutcome] = []
    forced = handle.tool_mode == "first"
    turns, taken, corrections = (1 if forced else max_turns), 0, 0
    used_ids: set[str] = set()  # call ids are unique across the whole tool conversation
    while taken < turns:
        if turn.finishing:
            break  # results so far are enough; the budget is for the Writer now
        if taken and prompt.total_tokens + turn.calls.turn_tokens(prompt, messages) > prompt.budget:
            # Tool results would push the prompt past the role's budget: stop calling tools.
            ctx.log.write(BudgetStop(agent=turn.worker, round=turn.round, budget=prompt.budget))
            break
        check_run_budget(ctx)
        reply, latency = handle.invoke(messages, tools=definitions,
                                       force_tool=turn.role.tools[0] if forced else None)
        turn.calls.record(prompt, messages, reply, latency, "tools", taken)
        taken += 1
        if not reply.tool_calls:
            break
        calls = normalize_calls([dict(c) for c in reply.tool_calls], f"call_{turn.worker}_{turn.calls.calls}",
                                used_ids)
        messages.append(reply.model_copy(update={"tool_calls": calls}))
        for call in calls:
            ctx.log.write(ToolCall(agent=turn.worker, round=turn.round, tool=call["name"],
                                   call_id=call["id"], args=call["args"]))
        results = run_calls(calls, lambda call: _run_call(ctx, tools, call, task))
        invalid = []
        for call, outcome in zip(calls, results):
            env = envelope(outcome, ctx.counter, store=ctx.artifacts)
            for done in outcome.outcomes():
                if done.result is not None:
                    ctx.add_tool_output(turn.clock(), done.result.model_dump_json())
            ctx.log.write(ToolResult(agent=turn.worker, round=turn.round, tool=outcome.tool,
                                     call_id=call["id"], ok=outcome.ok, bytes=env.full_bytes, trimmed=env.trimmed,
                                     shown_bytes=len(env.text.encode()), budget_tokens=env.budget_tokens,
                                     tokens_before=env.tokens_before, tokens_after=env.tokens_after,
                                     artifact=env.artifact, attempts=outcome.attempts,
                                     redactions=outcome.redaction_counts(),
                                     fallback=outcome.fallback.tool if outcome.fallback else None,
                                     fallback_ok=outcome.fallback.ok if outcome.fallback else None,
                                     error=outcome.error))
            outcomes.extend(outcome.outcomes())
            messages.append(ToolMessage(content=env.text, tool_call_id=call["id"]))
            if outcome.error and outcome.error.get("error") == "contract_error":
                invalid.append(outcome)
        if invalid:
            problems = "; ".join(f"{o.tool}: {o.error['message']}" for o in invalid if o.error)
            exhausted = corrections >= MAX_CONTRACT_RETRIES
            ctx.log.write(ContractErrorEvent(agent=turn.worker, round=turn.round, kind="tool_arguments",
                                             attempt=corrections, error=problems[:600], exhausted=exhausted))
            if exhausted:
                break  # the structured errors above are the answer; no more calls
            corrections += 1
            turns += 1
            messages.append(HumanMessage(content="These tool calls did not match their schema:\n"
                                                 + mark_data("error", problems[:600]) + "\n"
                                                 "Call the tool again with arguments that match its schema."))
    return outcomes


def code_call(turn: ToolTurn, tool_name: str, call_id: str, args: dict[str, Any], task: str) -> ToolOutcome:
    """A tool call code makes on the role's behalf (a fallback search, the whole
    question's search, a page nobody opened), run and logged as the model's calls are:
    the run log, the run page and the memory gates see every tool result either way."""
    ctx = turn.ctx
    ctx.log.write(ToolCall(agent=turn.worker, round=turn.round, tool=tool_name, call_id=call_id, args=args))
    outcome = _run_call(ctx, ctx.tools, {"id": call_id, "name": tool_name, "args": args}, task)
    size = len(json.dumps(outcome.error).encode())
    for done in outcome.outcomes():
        if done.result is not None:
            raw = done.result.model_dump_json()  # serialised once: the transcript's text and the logged size
            ctx.add_tool_output(turn.clock(), raw)
            if done is outcome:
                size = len(raw.encode())
    ctx.log.write(ToolResult(agent=turn.worker, round=turn.round, tool=tool_name, call_id=call_id, ok=outcome.ok,
                             bytes=size, trimmed=False, artifact=None, attempts=outcome.attempts,
                             redactions=outcome.redaction_counts(),
                             fallback=outcome.fallback.tool if outcome.fallback else None,
                             fallback_ok=outcome.fallback.ok if outcome.fallback else None,
                             error=outcome.error))
    return outcome


def _run_call(ctx: RunContext, tools: dict[str, Any], call: dict, task: str) -> ToolOutcome:
    tool = tools.get(call["name"])
    if tool is None:
        return ToolOutcome(call["id"], call["name"], call["args"], None,
                           {"error": "contract_error", "tool": call["name"],
                            "message": f"no tool named {call['name']!r}; the tools are {', '.join(tools)}"})
    return run_tool(tool, call["id"], call["args"], tools=ctx.tools, task=task)


# How `protocol/tools.py` words a failure of the tool itself, as opposed to a failure the
# tool reports on purpose: an exception its code raised ("ImportError: …"), a hang
# past its timeout, a result that is not its result model.
_CRASH = re.compile(r"^[A-Z][A-Za-z0-9_]*: ")


def tool_broke(outcome: ToolOutcome, tool: Tool | None) -> bool:
    """Whether this call failed because the tool (or its backend) is broken.

    Counted: the tool's code raised, hung past its timeout or returned something that is
    not its result, or a failure it calls transient (an index that failed) lasted
    through its retries. Not counted: a contract error (the model's arguments) and a
    definite answer the tool gives on purpose (no such source, HTTP 404, robots.txt),
    which say something about the call's arguments, not about the tool."""
    error = outcome.error
    if not error or error.get("error") != "engineering_failure":
        return False
    message = str(error.get("message", ""))
    if _CRASH.match(message) or message.startswith((f"{outcome.tool} timed out after ", f"{outcome.tool} returned ")):
        return True
    # a definite answer is given once; only a transient failure is tried again
    return tool is not None and tool.retries > 0 and outcome.attempts > tool.retries


@dataclass(frozen=True)
class BrokenTool:
    """A tool every call of which broke, in one turn."""

    tool: str
    calls: int
    error: str  # the last call's message

    def reason(self, where: str) -> str:
        """One line for the user: which tool, how often, and its error."""
        error = " ".join(self.error.split())[:300]
        return f"tool {self.tool} failed on every call ({self.calls}) of {where}: {error}"


def broken_tools(outcomes: Sequence[ToolOutcome], tools: Mapping[str, Tool]) -> list[BrokenTool]:
    """The tools that were called in `outcomes` (fallbacks included) and broke on every call."""
    calls: dict[str, list[ToolOutcome]] = {}
    for outcome in outcomes:
        for done in outcome.outcomes():
            calls.setdefault(done.tool, []).append(done)
    return [BrokenTool(name, len(made), str((made[-1].error or {}).get("message", "")))
            for name, made in calls.items() if all(tool_broke(o, tools.get(name)) for o in made)]


def stop_if_a_tool_broke(outcomes: Sequence[ToolOutcome], tools: Mapping[str, Tool], where: str) -> None:
    """Raise EngineeringFailure (the run stops, checkpointed, exit 1) for the first tool
    that broke on every call in `outcomes`."""
    broken = broken_tools(outcomes, tools)
    if broken:
        raise EngineeringFailure(broken[0].reason(where), tool=broken[0].tool)
