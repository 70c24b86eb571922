"""Tool calls a model wrote into its message text instead of the `tool_calls` field.

Small local models served without a tool-call parser for their chat format (Qwen on a
generic llama.cpp template, many Ollama tags) answer a tool request with the call as
JSON in the content: a fenced block, a `<tool_call>` element, or bare JSON. Read as
text, the Searcher would read nothing and invent source ids; read as calls, the tool
loop runs them like any other. Only a call naming a tool the request offered, with an
object for its arguments, is taken: anything else stays text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import AIMessage

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_FENCED = re.compile(r"```(?:json|tool_call|tool)?\s*\n?(.*?)```", re.S)
MAX_CALLS = 8


def _decode_objects(text: str) -> list[Any]:
    """Every JSON value that starts at a `{` or `[` in `text`, left to right."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    i = 0
    while i < len(text) and len(found) < MAX_CALLS:
        start = min((p for p in (text.find("{", i), text.find("[", i)) if p >= 0), default=-1)
        if start < 0:
            break
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            i = start + 1
            continue
        found.append(value)
        i = end
    return found


def _as_call(value: Any, tools: set[str]) -> tuple[str, dict] | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # {"type": "function", "function": {...}}
        value = value["function"]
    name = value.get("name") or value.get("tool") or value.get("tool_name")
    args = value.get("arguments", value.get("parameters", value.get("args", {})))
    if isinstance(args, str):  # OpenAI's wire form: arguments as a JSON string
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if not isinstance(name, str) or name not in tools or not isinstance(args, dict):
        return None
    return name, args


def parse_tool_calls(content: str, tools: set[str]) -> list[tuple[str, dict]]:
    """The calls of offered tools written in `content`, in order; [] when there are none."""
    pieces = _TAGGED.findall(content) or _FENCED.findall(content) or [content]
    calls: list[tuple[str, dict]] = []
    for piece in pieces:
        for value in _decode_objects(piece):
            for item in value if isinstance(value, list) else [value]:
                call = _as_call(item, tools)
                if call is not None and len(calls) < MAX_CALLS:
                    calls.append(call)
    return calls


def with_content_tool_calls(reply: AIMessage, tools: list[dict]) -> AIMessage:
    """`reply` with the calls written in its text moved to `tool_calls`, when it has no
    real ones; unchanged otherwise."""
    if reply.tool_calls or not isinstance(reply.content, str) or not reply.content.strip():
        return reply
    names = {t.get("function", t).get("name") for t in tools if isinstance(t, dict)}
    calls = parse_tool_calls(reply.content, {n for n in names if isinstance(n, str)})
    if not calls:
        return reply
    tool_calls = [{"name": name, "args": args, "id": f"call_text_{i}", "type": "tool_call"}
                  for i, (name, args) in enumerate(calls)]
    return reply.model_copy(update={"content": "", "tool_calls": tool_calls,
                                    "response_metadata": {**reply.response_metadata, "tool_calls_from": "content"}})
