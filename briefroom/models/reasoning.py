"""A reasoning model's thinking, taken out of its reply before any role reads it.

DeepSeek-R1 and its distills, QwQ and Qwen3 write `<think>…</think>` before the answer
when the server has no reasoning parser (vLLM without `--reasoning-parser`, older
Ollama, llama.cpp with `--reasoning-format none`). Left in, the thinking is read as the
answer: its first `{` becomes the reply's JSON, a tool call it rehearses is run, its
drafts of numbers reach the report. Chat templates that open the block themselves
(R1's ends the prompt with `<think>\n`) leave only the closing tag in the reply, so
everything up to the first `</think>` is thinking. A reply cut off mid-thought (no
closing tag yet) holds no answer at all: it becomes empty, which each role already
treats as a reply that said nothing.
"""

from __future__ import annotations

import re

from langchain_core.messages import AIMessage

_CLOSE = "</think>"
_OPEN = re.compile(r"^\s*<think>", re.I)


def without_reasoning(text: str) -> str:
    """`text` with a leading reasoning block removed."""
    end = text.lower().find(_CLOSE)
    if end >= 0:
        return text[end + len(_CLOSE):].lstrip()
    return "" if _OPEN.match(text) else text


def reply_without_reasoning(reply: AIMessage) -> AIMessage:
    """`reply` with its text content's reasoning removed (tool calls and metadata kept)."""
    if not isinstance(reply.content, str):
        return reply
    answer = without_reasoning(reply.content)
    return reply if answer == reply.content else reply.model_copy(update={"content": answer})
