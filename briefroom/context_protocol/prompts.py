"""Prompts: a task, a goal and prioritised items -> chat messages inside a token budget.

Built by `protocol/prompt_assembly.ContextBuilder` (P0 never cut, P1 compressed before
it is dropped, every decision recorded), untrusted text in sealed data blocks, secrets
redacted, the whole prompt checked for secrets before it is returned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Field

from briefroom.context_protocol.blocks import unseal
from briefroom.errors import FatalBreaker
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.data_blocks import DATA_NOTICE, mark_data
from briefroom.protocol.extraction import numbers_in, relevance, sentences
from briefroom.protocol.messages import Priority
from briefroom.protocol.prompt_assembly import DEFAULT_SHARES, ContextBuilder, Item, Section
from briefroom.protocol.redaction import assert_no_secrets, redact_data

ItemKind = Literal["message", "passage", "fact", "note", "memory", "tool_result"]
PriorityName = Literal["P0", "P1", "P2", "P3"]

# kind -> (section name, title, render best-ranked last). Section names are the
# builder's, so `--share`-style shares and floors mean the same here as in a run.
_SECTIONS: dict[str, tuple[str, str, bool]] = {
    "memory": ("memory", "## Memory from earlier work", False),
    "fact": ("facts", "## Facts (verbatim)", False),
    "message": ("whiteboard", "## Messages", False),
    "passage": ("sources", "## Retrieved passages (best last)", True),
    "tool_result": ("tool_results", "## Earlier tool results", True),
    "note": ("worktable", "## Your notes", False),
}
# Most stable first (memory is fixed for a task; facts only grow), most volatile last,
# so consecutive prompts share a long prefix, as in a run.
_ORDER = ("memory", "fact", "message", "passage", "tool_result", "note")
SHARES = {**DEFAULT_SHARES, "tool_results": 0.30}
INSTRUCTIONS = "You are a careful assistant. Use the tools when you need material; answer from what you read."


class Goal(BaseModel):
    """What a charter gives briefroom's roles, for any agent: the goal, how to tell it
    is met, and what must not be done. It sits in the stable prefix and is never cut."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    goal: str = Field(min_length=1)
    acceptance_criteria: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()

    def render(self) -> str:
        lines = [f"Goal: {self.goal}"]
        if self.acceptance_criteria:
            lines += ["Acceptance criteria:", *(f"- {c}" for c in self.acceptance_criteria)]
        if self.constraints:
            lines += ["Constraints:", *(f"- {c}" for c in self.constraints)]
        return "\n".join(lines)


class ContextItem(BaseModel):
    """One unit the builder may keep, compress or drop.

    `priority`: P0 is never cut (if it does not fit, that is an error, never silent
    truncation); P1 is compressed before it is dropped; P2 and P3 compete for their
    section's share. Items are untrusted by default and enter the prompt as sealed data
    blocks; `trusted=True` is for the agent's own text only (its notes, say)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ItemKind
    text: str
    priority: PriorityName = "P2"
    key: str | None = Field(default=None, description="stable id, named in the decisions; default kind + position")
    source: str | None = Field(default=None, description="where it came from: a path, URL or source id")
    order: int | None = Field(default=None, description="recency, higher is newer; default its position")
    trusted: bool = False
    compressed: str | None = Field(default=None, description="a short form for P1; default one derived from text")


class PromptDecision(BaseModel):
    """What the builder did with one candidate (or a bulk of them), and why."""

    model_config = ConfigDict(frozen=True)

    section: str
    key: str
    action: Literal["included", "compressed", "dropped"]
    reason: str
    tokens: int = 0
    items: int = 1


@dataclass(frozen=True)
class PreparedPrompt:
    """Messages to send, and the accounting that explains them.

    `total_tokens` counts every message's text and the tool calls' names and arguments
    with the same tokenizer as the builder; it never exceeds `budget`. Provider-side
    overheads (a few tokens per message, bound tool schemas) are not in it: keep a margin."""

    messages: list[BaseMessage]
    total_tokens: int
    budget: int
    section_tokens: dict[str, int]
    decisions: list[PromptDecision]
    redactions: dict[str, int]
    prefix_hash: str

    def by_action(self, action: str) -> list[PromptDecision]:
        return [d for d in self.decisions if d.action == action]

    @property
    def kept(self) -> list[PromptDecision]:
        return self.by_action("included")

    @property
    def compressed(self) -> list[PromptDecision]:
        return self.by_action("compressed")

    @property
    def dropped(self) -> list[PromptDecision]:
        return self.by_action("dropped")



def prepare_prompt(counter: TokenCounter, shares: Mapping[str, float], floors: Mapping[str, int], task: str, *,
                   budget: int, goal: Goal | str | None, items: Sequence[ContextItem], instructions: str,
                   tools: Sequence[Mapping[str, Any]], exchange: Sequence[BaseMessage]) -> PreparedPrompt:
    """`ContextProtocol.prepare_prompt` with the protocol's counter, shares and floors."""
    redactions: dict[str, int] = {}
    verbatim, folded = _split_exchange(exchange, redactions)
    reserved = sum(message_tokens(counter, m) for m in verbatim)
    if reserved > budget:
        raise FatalBreaker(f"the newest tool round needs {reserved} tokens but the prompt budget is {budget}; "
                           "raise the budget or lower tool_tokens")
    stable = _stable_sections(instructions, goal, tools, redactions)
    grouped: dict[str, list[Item]] = {kind: [] for kind in _ORDER}
    for position, item in enumerate([*folded, *items]):
        grouped[item.kind].append(_item(item, position, task, redactions))
    dynamic = [Section(_SECTIONS[kind][0], _SECTIONS[kind][1], grouped[kind], _SECTIONS[kind][2])
               for kind in _ORDER]
    task_section = Section("task", "## Current task", [Item("task", _clean(task, redactions), Priority.P0)])
    builder = ContextBuilder(counter, budget - reserved, dict(shares), dict(floors))
    built = builder.build(stable, dynamic, task_section)
    messages = [*built.messages, *verbatim]
    for message in messages:  # the last guard, as before every model call in a run
        assert_no_secrets(message_text(message), "a prepared prompt")
    decisions = [PromptDecision(section=d.section, key=d.key, action=cast(Any, d.action), reason=d.reason,
                                tokens=d.tokens, items=d.items) for d in built.stats.decisions]
    decisions += [PromptDecision(section="exchange", key=_message_key(m, i), action="included",
                                 reason="newest tool round: kept verbatim", tokens=message_tokens(counter, m))
                  for i, m in enumerate(verbatim)]
    section_tokens = dict(built.section_tokens)
    if verbatim:
        section_tokens["exchange"] = reserved
    return PreparedPrompt(messages=messages, total_tokens=built.total_tokens + reserved, budget=budget,
                          section_tokens=section_tokens, decisions=decisions, redactions=redactions,
                          prefix_hash=built.prefix_hash)


def _stable_sections(instructions: str, goal: Goal | str | None, tools: Sequence[Mapping[str, Any]],
                     redactions: dict[str, int]) -> list[Section]:
    """The prefix that is the same bytes on every call: instructions, goal, tool definitions."""
    goal_model = Goal(goal=goal) if isinstance(goal, str) else goal
    stable = [Section("instructions", "## Instructions",
                      [Item("instructions", _clean(instructions, redactions) + "\n\n" + DATA_NOTICE,
                            Priority.P0)])]
    if goal_model is not None:
        stable.append(Section("charter", "## Goal",
                              [Item("goal", _clean(goal_model.render(), redactions), Priority.P0)]))
    if tools:
        stable.append(Section("tools", "## Tools", [Item("tools", json.dumps(list(tools), indent=1),
                                                         Priority.P0)]))
    return stable


def message_tokens(counter: TokenCounter, message: BaseMessage) -> int:
    return counter.count(message_text(message))


def _clean(text: str, found: dict[str, int]) -> str:
    return cast(str, redact_data(text, found))


def _item(item: ContextItem, position: int, task: str, found: dict[str, int]) -> Item:
    key = item.key or f"{item.kind}{position}"
    order = item.order if item.order is not None else position
    priority = Priority(item.priority)
    if item.trusted:
        text = _clean(item.text, found)
        short = _clean(item.compressed, found) if item.compressed else _short_form(item.kind, text, task)
        return Item(key, text, priority, order, relevance(text, task), short)
    kind, body, attrs = unseal(item.text) or (item.kind, item.text, {})
    if item.source and "source" not in attrs:
        attrs["source"] = item.source
    attrs = cast(dict, redact_data(attrs, found))  # a call's arguments, a source name: data too
    body = _clean(body, found)
    short = _clean(item.compressed, found) if item.compressed else _short_form(item.kind, body, task)
    return Item(key, mark_data(kind, body, **attrs), priority, order, relevance(body, task),
                mark_data(kind, short, **attrs) if short else None)


def _split_exchange(exchange: Sequence[BaseMessage],
                    found: dict[str, int]) -> tuple[list[BaseMessage], list[ContextItem]]:
    rounds: list[list[BaseMessage]] = []
    for message in exchange:
        if isinstance(message, AIMessage) or not rounds:
            rounds.append([message])
        else:
            rounds[-1].append(message)
    folded: list[ContextItem] = []
    for messages in rounds[:-1]:
        calls = {c["id"]: c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
        for message in messages:
            if isinstance(message, ToolMessage):
                call: Mapping[str, Any] = calls.get(message.tool_call_id) or {}
                kind, body, attrs = unseal(str(message.content)) or ("tool_result", str(message.content), {})
                attrs = {**attrs, "call": message.tool_call_id}
                if call:
                    attrs["args"] = json.dumps(call.get("args", {}), ensure_ascii=False)[:200]
                folded.append(ContextItem(kind="tool_result", text=mark_data(kind, body, **attrs),
                                          key=f"tool:{message.tool_call_id}"))
            elif str(message.content).strip():  # what the model said between calls: it had read data
                folded.append(ContextItem(kind="message", text=str(message.content),
                                          key=f"said:{len(folded)}"))
    return [_sealed_message(m, found) for m in (rounds[-1] if rounds else [])], folded


def _sealed_message(message: BaseMessage, found: dict[str, int]) -> BaseMessage:
    """A verbatim message with secrets redacted; a tool result not yet sealed is sealed."""
    content = _clean(str(message.content), found)
    if isinstance(message, ToolMessage):
        unsealed = unseal(content)
        if unsealed is None:
            content = mark_data("tool_result", content, call=message.tool_call_id)
        return message.model_copy(update={"content": content})
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = [{**c, "args": redact_data(dict(c["args"]), found)} for c in message.tool_calls]
        return message.model_copy(update={"content": content, "tool_calls": calls})
    return message.model_copy(update={"content": content})



def _short_form(kind: str, text: str, task: str) -> str | None:
    """What a P1 item keeps when its whole text does not fit: a fact its numbers, a
    passage the sentences with figures or task words, a message its first sentence."""
    if kind == "fact":
        found = numbers_in(text)
        return "numbers: " + " | ".join(dict.fromkeys(found)) if found else None
    parts = sentences(text)
    if kind in ("passage", "tool_result", "memory"):
        keep = [s for s in parts if relevance(s, task) > 0 or any(ch.isdigit() for ch in s)]
        return " ".join(keep)[:600] + " [extract]" if keep else None
    return (parts[0][:240] + " [shortened]") if parts and parts[0] != text else None


def message_text(message: BaseMessage) -> str:
    """A message as counted and scanned: its text, and the tool calls' names and arguments."""
    text = message.content if isinstance(message.content, str) else json.dumps(message.content, ensure_ascii=False)
    if isinstance(message, AIMessage) and message.tool_calls:
        text += "\n" + json.dumps([{"name": c["name"], "args": c["args"]} for c in message.tool_calls],
                                  ensure_ascii=False)
    return text


def _message_key(message: BaseMessage, index: int) -> str:
    if isinstance(message, ToolMessage):
        return f"tool:{message.tool_call_id}"
    return f"{message.type}:{index}"

