"""ToolResultEnvelope: the only way a tool result reaches a prompt.

Skeleton version: serialise, trim to the tool's token budget, mark as untrusted data,
keep the tool_call_id. Redaction and offloading plug in here (issue 4).
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.context import mark_data
from briefroom.protocol.tools import ToolOutcome


class ToolResultEnvelope(BaseModel):
    tool_call_id: str
    tool: str
    ok: bool
    text: str  # what the model sees, already marked as data
    full_bytes: int
    trimmed: bool


def envelope(outcome: ToolOutcome, counter: TokenCounter, max_tokens: int = 1200) -> ToolResultEnvelope:
    payload = outcome.result.model_dump() if outcome.result is not None else outcome.error
    raw = json.dumps(payload, ensure_ascii=False, indent=1)
    text = counter.head(raw, max_tokens)
    trimmed = text != raw
    if trimmed:
        text += f"\n... [trimmed: {counter.count(raw)} tokens in full]"
    return ToolResultEnvelope(tool_call_id=outcome.call_id, tool=outcome.tool, ok=outcome.ok,
                              text=mark_data("tool_result", text, tool=outcome.tool, call=outcome.call_id),
                              full_bytes=len(raw.encode()), trimmed=trimmed)
