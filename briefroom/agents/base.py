"""Role spec and the machinery every role shares: one Turn per node invocation.

A role is data (`Role`) plus a `step(turn)` function. The Turn gives the step what the
role is allowed to see (its inbox, its own worktable, facts, sources) and the only
ways to act: ask the model for structured output, use tools, publish messages, write
notes. Everything a step does becomes one state update when it returns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel, ValidationError

from briefroom.agents.context import RunContext
from briefroom.agents.prompting import layered_prompt, naive_prompt, passage_item
from briefroom.errors import ConfigError, ContractError, FatalBreaker
from briefroom.graph.state import AgentState, Charter, Fact, SourceRecord, Worktable
from briefroom.models.cassette import serialize_messages
from briefroom.protocol.budget import input_budget
from briefroom.protocol.bus import Subscription
from briefroom.protocol.calls import normalize_calls, run_calls
from briefroom.protocol.context import BuiltPrompt, Item, mark_data
from briefroom.protocol.envelope import envelope
from briefroom.protocol.messages import (
    BROADCAST,
    AgentMessage,
    MsgType,
    Priority,
    make_message,
)
from briefroom.protocol.tools import ToolOutcome, run_tool

T = TypeVar("T", bound=BaseModel)
FINISHING_AT = 0.85  # share of --max-tokens after which only the Writer works
MAX_CONTRACT_RETRIES = 2


@dataclass(frozen=True)
class Role:
    """Everything the registry, the bus and the graph need to know about a role."""

    name: str
    prompt: str | Path  # shipped prompt file name, or an absolute path for plugin roles
    subscriptions: tuple[Subscription, ...]
    publications: tuple[MsgType, ...]
    output_schema: type[BaseModel] | None
    step: Callable[["Turn"], None]
    tools: tuple[str, ...] = ()
    order: int = 100  # who speaks first when several roles have unread messages
    budget_tokens: int = 6000  # input budget; capped by the model's window
    description: str = ""
    # What the role does once the run is finishing (85% of --max-tokens used):
    # "draft" writes the report from what is known, "check" reviews that draft;
    # roles without a duty stop working.
    finishing_duty: str | None = None
    # Reads long-term memory at task start (the Planner); other roles read it only at
    # declared decision points, through a memory tool.
    reads_memory: bool = False

    def __post_init__(self) -> None:
        if self.finishing_duty not in (None, "draft", "check"):
            raise ValueError(f"role {self.name!r}: finishing_duty must be 'draft', 'check' or None")


def cached_prompt_tokens(reply: AIMessage) -> int | None:
    """Prompt tokens the endpoint served from its cache, if it says (OpenAI-style
    `prompt_tokens_details.cached_tokens`, which langchain reports as `cache_read`)."""
    details = (reply.usage_metadata or {}).get("input_token_details") or {}
    if "cache_read" in details:
        return int(details["cache_read"] or 0)
    usage = (reply.response_metadata or {}).get("token_usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    return int(cached) if cached is not None else None


def constrain_schema(schema: dict, enums: dict[str, list[str]], max_items: dict[str, int] | None = None) -> dict:
    """Restrict named properties (anywhere in the schema) to the given values, and named
    lists to at most so many items.

    Used so a model can only cite source ids that exist: llama.cpp turns the schema
    into a grammar, and hosted models see the allowed values. A list without a bound
    lets a small model at temperature 0 repeat itself until max_tokens (measured: a
    review of 5 conclusions ran past 120 s that way).
    """
    schema = json.loads(json.dumps(schema))
    max_items = max_items or {}

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            for name, prop in (node.get("properties") or {}).items():
                if name in enums:
                    target = prop.get("items", prop) if prop.get("type") == "array" else prop
                    target["enum"] = list(enums[name])
                if name in max_items and prop.get("type") == "array":
                    prop["maxItems"] = min(prop.get("maxItems", max_items[name]), max_items[name])
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return schema


def parse_json_object(text: str) -> Any:
    """The first JSON object in a reply, tolerating code fences and chatter around it."""
    cleaned = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the reply contains no JSON object")
    # strict=False: small models put raw newlines inside strings; the meaning is unchanged.
    return json.loads(cleaned[start:end + 1], strict=False)


@dataclass
class Turn:
    role: Role
    state: AgentState
    ctx: RunContext
    published: list[AgentMessage] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    new_facts: list[Fact] = field(default_factory=list)
    new_sources: dict[str, SourceRecord] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        board = self.state.get("whiteboard", [])
        # The bus keeps each role's inbox incrementally; the lists it hands out are shared, read-only.
        self.view = self.ctx.bus.view(self.role.name, board, self.state.get("seen", {}).get(self.role.name, []))
        self._calls = 0
        self._texts: dict[str, str] = {}  # source texts read this turn (one SQLite read each)

    # --- reading -------------------------------------------------------------------
    @cached_property
    def inbox(self) -> list[AgentMessage]:
        """Live messages routed to this role, oldest first (listed only if a step asks)."""
        return self.view.inbox

    @cached_property
    def unread(self) -> list[AgentMessage]:
        """Inbox messages this role has not read yet (fixed for the turn)."""
        return list(self.view.unread.values())

    @property
    def round(self) -> int:
        return self.state.get("round", 1)

    @property
    def charter(self) -> Charter:
        return self.state["charter"]

    @property
    def worktable(self) -> Worktable:
        return self.state.get("worktables", {}).get(self.role.name, Worktable())

    @property
    def finishing(self) -> bool:
        """Past 85% of the run's token budget: wrap up, start nothing new."""
        budget = self.ctx.max_tokens
        return bool(self.state.get("finishing")) or bool(budget and self.ctx.tokens_used >= FINISHING_AT * budget)

    def unread_of(self, msg_type: MsgType) -> list[AgentMessage]:
        return [m for m in self.unread if m.header.msg_type == msg_type]

    def inbox_of(self, msg_type: MsgType) -> list[AgentMessage]:
        return [m for m in self.inbox if m.header.msg_type == msg_type]

    def own_messages(self) -> list[AgentMessage]:
        """What this role has published so far (live on the board or just now)."""
        return [m for m in self.state.get("whiteboard", []) if m.header.sender == self.role.name] + self.published

    def all_sources(self) -> dict[str, SourceRecord]:
        return {**self.state.get("sources", {}), **self.new_sources}

    def all_facts(self) -> list[Fact]:
        return [*self.state.get("facts", []), *self.new_facts]

    def source_texts(self) -> dict[str, str]:
        """Full text of every source retrieved in this run (what citations may point at)."""
        for sid in self.all_sources():
            if sid not in self._texts:
                doc = self.ctx.index.document(sid) if self.ctx.index else None
                if doc is not None:
                    self._texts[sid] = doc.text
        return dict(self._texts)

    # --- acting --------------------------------------------------------------------
    def publish(self, msg_type: MsgType, content: str, *, receiver: str = BROADCAST,
                references: Iterable[str] = (), structured: dict[str, Any] | None = None,
                relation: str | None = None, supersedes: str | None = None, ttl: int = 2,
                priority: Priority = Priority.P2) -> AgentMessage:
        message = make_message(sender=self.role.name, msg_type=msg_type, content=content, round=self.round,
                               seq=len(self.state.get("whiteboard", [])) + len(self.published), receiver=receiver,
                               references=tuple(references), structured_data=structured, relation=relation,
                               supersedes=supersedes, ttl_rounds=ttl, priority=priority)
        self.ctx.bus.check_publish(message)
        self.published.append(message)
        self.ctx.log.event("bus_message", agent=self.role.name, round=self.round, message=message,
                           recipients=list(self.ctx.bus.recipients(message)))
        return message

    def _clock(self) -> float:
        """Now, on the scale of message timestamps (round * 1000 + sequence)."""
        return self.round * 1000 + len(self.state.get("whiteboard", [])) + len(self.published) + 0.5

    def note(self, text: str) -> None:
        self.notes.append(text)

    def add_sources(self, records: Iterable[SourceRecord]) -> None:
        from briefroom.graph.reducers import merge_sources

        self.new_sources = merge_sources(self.new_sources, {r.source_id: r for r in records})

    def add_facts(self, facts: Iterable[Fact]) -> None:
        known = {f.fact_id for f in self.all_facts()}
        self.new_facts.extend(f for f in facts if f.fact_id not in known and not known.add(f.fact_id))

    # --- prompts -------------------------------------------------------------------
    def build_prompt(self, task: str, *, material: list[Item] | None = None, facts: list[Fact] | None = None,
                     schema: dict | None = None, tools: list[dict] | None = None) -> BuiltPrompt:
        handle = self.ctx.models.for_role(self.role.name)
        window = input_budget(handle.context_window)
        if self.ctx.context_strategy == "naive":
            return naive_prompt(self, task, material or [], facts or [], schema, tools, window)
        return layered_prompt(self, task, material or [], facts or [], schema, tools,
                              min(self.role.budget_tokens, window))

    def _log_call(self, prompt: BuiltPrompt, messages: list[BaseMessage], reply: AIMessage, latency: float,
                  purpose: str, attempt: int) -> None:
        handle = self.ctx.models.for_role(self.role.name)
        usage = reply.usage_metadata or {}
        completion = usage.get("output_tokens") or self.ctx.counter.count(
            str(reply.content) + json.dumps([tc["args"] for tc in reply.tool_calls]))
        self._calls += 1
        turns = self._turn_tokens(prompt, messages)
        prompt_tokens = prompt.total_tokens + turns
        self.ctx.tokens_used += prompt_tokens + completion
        sections = {**prompt.section_tokens, "turns": turns}
        build = prompt.stats.summary()
        self.ctx.log.event("llm_call", agent=self.role.name, round=self.round, purpose=purpose, attempt=attempt,
                           provider=handle.provider, model=handle.model_name, messages=serialize_messages(messages),
                           sections=sections, prompt_tokens=prompt_tokens, budget=prompt.budget,
                           use_pct=round(100 * prompt_tokens / prompt.budget, 1), prefix_hash=prompt.prefix_hash,
                           build=build, compaction=bool(build["changes"]),
                           strategy=self.ctx.context_strategy, completion_tokens=completion,
                           cached_tokens=cached_prompt_tokens(reply),
                           latency_ms=round(latency * 1000, 1), response=serialize_messages([reply])[0])
        self.ctx.progress(self.round, self.role.name, f"{purpose} ({prompt_tokens}/{prompt.budget} tokens)")

    def _turn_tokens(self, prompt: BuiltPrompt, messages: list[BaseMessage]) -> int:
        """Tokens of the tool results and correction turns appended after the built prompt.

        The builder already counted its own sections; only what came after is counted here.
        """
        return sum(self.ctx.counter.count(str(m.content)) for m in messages[len(prompt.messages):])

    def ask(self, task: str, output: type[T], *, material: list[Item] | None = None, facts: list[Fact] | None = None,
            enums: dict[str, list[str]] | None = None, check: Callable[[T], list[str]] | None = None,
            max_items: dict[str, int] | None = None) -> T:
        """Structured output: prompt -> model -> JSON -> pydantic, with bounded correction."""
        schema = constrain_schema(output.model_json_schema(), enums or {}, max_items)
        prompt = self.build_prompt(task, material=material, facts=facts, schema=schema)
        messages = list(prompt.messages)
        handle = self.ctx.models.for_role(self.role.name)
        last_error = ""
        for attempt in range(MAX_CONTRACT_RETRIES + 1):
            self._check_run_budget()
            reply, latency = handle.invoke(messages, schema=schema, schema_name=output.__name__)
            self._log_call(prompt, messages, reply, latency, f"ask {output.__name__}", attempt)
            try:
                value = output.model_validate(parse_json_object(str(reply.content)))
                problems = check(value) if check else []
                if not problems:
                    return value
                last_error = "; ".join(problems)
            except (ValueError, ValidationError) as exc:
                last_error = str(exc).replace("\n", " ")[:600]
            self.ctx.log.event("contract_error", agent=self.role.name, round=self.round, attempt=attempt,
                               schema=output.__name__, error=last_error)
            messages = [*messages, AIMessage(content=str(reply.content)),
                        HumanMessage(content="Your reply did not match the required output:\n"
                                             + mark_data("error", last_error) + "\n"
                                             "Reply again with only one JSON object that matches the schema.")]
        raise ContractError(f"{self.role.name}: the model's {output.__name__} was invalid after "
                            f"{MAX_CONTRACT_RETRIES} corrections: {last_error[:200]}")

    def use_tools(self, task: str, max_turns: int = 3) -> list[ToolOutcome]:
        """Let the model call this role's tools; every result goes through the envelope.

        Calls of one reply run in parallel and each result goes back with its own call.
        Arguments that do not match a tool's schema get the validation error back as a
        correction prompt, at most MAX_CONTRACT_RETRIES times (logged as contract_error);
        corrections do not use up the role's tool turns.
        """
        missing = [name for name in self.role.tools if name not in self.ctx.tools]
        if missing:
            raise ConfigError(f"role {self.role.name!r} uses tools this run does not have: {', '.join(missing)}")
        tools = {name: self.ctx.tools[name] for name in self.role.tools}
        definitions = [t.definition() for t in tools.values()]
        prompt = self.build_prompt(task, tools=definitions)
        messages: list[BaseMessage] = list(prompt.messages)
        handle = self.ctx.models.for_role(self.role.name)
        outcomes: list[ToolOutcome] = []
        forced = handle.tool_mode == "first"
        turns, turn, corrections = (1 if forced else max_turns), 0, 0
        used_ids: set[str] = set()  # call ids are unique across the whole tool conversation
        while turn < turns:
            if self.finishing:
                break  # results so far are enough; the budget is for the Writer now
            if turn and prompt.total_tokens + self._turn_tokens(prompt, messages) > prompt.budget:
                # Tool results would push the prompt past the role's budget: stop calling tools.
                self.ctx.log.event("budget_stop", agent=self.role.name, round=self.round, budget=prompt.budget)
                break
            self._check_run_budget()
            reply, latency = handle.invoke(messages, tools=definitions,
                                           force_tool=self.role.tools[0] if forced else None)
            self._log_call(prompt, messages, reply, latency, "tools", turn)
            turn += 1
            if not reply.tool_calls:
                break
            calls = normalize_calls(reply.tool_calls, f"call_{self.role.name}_{self._calls}", used_ids)
            messages.append(reply.model_copy(update={"tool_calls": calls}))
            for call in calls:
                self.ctx.log.event("tool_call", agent=self.role.name, round=self.round, tool=call["name"],
                                   call_id=call["id"], args=call["args"])
            results = run_calls(calls, lambda call: self._run_call(tools, call, task))
            invalid = []
            for call, outcome in zip(calls, results):
                env = envelope(outcome, self.ctx.counter, store=self.ctx.artifacts)
                for done in outcome.outcomes():
                    if done.result is not None:
                        self.ctx.add_tool_output(self._clock(), done.result.model_dump_json())
                self.ctx.log.event("tool_result", agent=self.role.name, round=self.round, tool=outcome.tool,
                                   call_id=call["id"], ok=outcome.ok, bytes=env.full_bytes, trimmed=env.trimmed,
                                   shown_bytes=len(env.text.encode()),
                                   artifact=env.artifact, attempts=outcome.attempts,
                                   redactions=outcome.redaction_counts(),
                                   fallback=outcome.fallback.tool if outcome.fallback else None,
                                   fallback_ok=outcome.fallback.ok if outcome.fallback else None,
                                   error=outcome.error)
                outcomes.extend(outcome.outcomes())
                messages.append(ToolMessage(content=env.text, tool_call_id=call["id"]))
                if outcome.error and outcome.error.get("error") == "contract_error":
                    invalid.append(outcome)
            if invalid:
                problems = "; ".join(f"{o.tool}: {o.error['message']}" for o in invalid if o.error)
                exhausted = corrections >= MAX_CONTRACT_RETRIES
                self.ctx.log.event("contract_error", agent=self.role.name, round=self.round, kind="tool_arguments",
                                   attempt=corrections, error=problems[:600], exhausted=exhausted)
                if exhausted:
                    break  # the structured errors above are the answer; no more calls
                corrections += 1
                turns += 1
                messages.append(HumanMessage(content="These tool calls did not match their schema:\n"
                                                     + mark_data("error", problems[:600]) + "\n"
                                                     "Call the tool again with arguments that match its schema."))
        return outcomes

    def _run_call(self, tools: dict[str, Any], call: dict, task: str) -> ToolOutcome:
        tool = tools.get(call["name"])
        if tool is None:
            return ToolOutcome(call["id"], call["name"], call["args"], None,
                               {"error": "contract_error", "tool": call["name"],
                                "message": f"no tool named {call['name']!r}; the tools are {', '.join(tools)}"})
        return run_tool(tool, call["id"], call["args"], tools=self.ctx.tools, task=task)

    # --- result --------------------------------------------------------------------
    def updates(self) -> dict[str, Any]:
        update: dict[str, Any] = {
            "seen": {self.role.name: [m.msg_id for m in self.unread]},
            "speaker": self.role.name,
        }
        if self.published:
            update["whiteboard"] = self.published
        if self.notes:
            update["worktables"] = {self.role.name: Worktable(notes=tuple(self.notes))}
        if self.new_facts:
            update["facts"] = self.new_facts
        if self.new_sources:
            update["sources"] = self.new_sources
        update.update(self.extra)
        if self.finishing and not self.state.get("finishing"):
            self.ctx.log.event("finishing", round=self.round, tokens_used=self.ctx.tokens_used,
                               max_tokens=self.ctx.max_tokens)
            update["finishing"] = True
        return update

    def _check_run_budget(self) -> None:
        budget = self.ctx.max_tokens
        if budget and self.ctx.tokens_used >= budget:
            raise FatalBreaker(f"run token budget exhausted: {self.ctx.tokens_used} of {budget} tokens used; "
                               "the state is checkpointed in the run directory; rerun with a larger --max-tokens")


def passage_items(records: Iterable[SourceRecord], task: str) -> list[Item]:
    """Retrieved passages as data items for the `sources` section."""
    return [passage_item(p.chunk_id, p.text, r.source_id, r.title, -i, task)
            for r in records for i, p in enumerate(r.passages)]
