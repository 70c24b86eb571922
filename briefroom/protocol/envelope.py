"""ToolResultEnvelope: the only way a tool result reaches a prompt.

validate + redact (in `run_tool`, on the untrimmed result) -> offload a payload over
the threshold to the run's artifact store, leaving pointer + structured summary +
size -> fit into the output budget of the tool that produced it (`Tool.output_budget`,
logged with the size before and after) -> mark as untrusted data -> route back with
its own tool_call_id.
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from briefroom.protocol.artifacts import ArtifactStore, summarize
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.prompt_assembly import mark_data
from briefroom.protocol.tools import ToolOutcome, fit_output


class ToolResultEnvelope(BaseModel):
    tool_call_id: str
    tool: str
    ok: bool
    text: str  # what the model sees, already marked as data
    full_bytes: int
    trimmed: bool
    artifact: str | None = None  # pointer when the full payload was offloaded
    budget_tokens: int = 0  # the tool's output budget this result was fitted into
    tokens_before: int = 0  # what was to be shown (the payload, or its pointer and summary)
    tokens_after: int = 0  # what is shown, at most budget_tokens


OFFLOAD_BYTES = 2048


def envelope(outcome: ToolOutcome, counter: TokenCounter, max_tokens: int | None = None,
             store: ArtifactStore | None = None, offload_bytes: int = OFFLOAD_BYTES) -> ToolResultEnvelope:
    payload = outcome.result.model_dump() if outcome.result is not None else outcome.error
    fallback = outcome.fallback
    if fallback is not None:  # the model sees why the tool failed and what ran instead
        payload = {**(payload or {}), "fallback_result": fallback.result.model_dump()
                                    if fallback.ok and fallback.result is not None else fallback.error}
    raw = json.dumps(payload, ensure_ascii=False, indent=1)
    pointer = None
    shown = raw
    has_data = outcome.ok or (fallback is not None and fallback.ok)
    # A tool whose result is itself a slice of an artifact (`Tool.offload` False) is not
    # offloaded again: that would answer with a pointer to a pointer.
    if store is not None and has_data and outcome.offload and len(raw.encode()) > offload_bytes:
        pointer = store.put(raw)
        shown = json.dumps({"artifact": pointer, "bytes": len(raw.encode()), "summary": summarize(payload),
                            "more": f"read_artifact(pointer='{pointer}', fields=[...]) or a character range"},
                           ensure_ascii=False, indent=1)
    # `max_tokens` overrides the tool's own budget (tests, callers with less room).
    budget = outcome.output_budget if max_tokens is None else max_tokens
    fitted = fit_output(shown, counter, budget, full=raw if pointer else None)
    return ToolResultEnvelope(tool_call_id=outcome.call_id, tool=outcome.tool, ok=outcome.ok,
                              text=mark_data("tool_result", fitted.text, tool=outcome.tool, call=outcome.call_id),
                              full_bytes=len(raw.encode()), trimmed=fitted.trimmed, artifact=pointer,
                              budget_tokens=budget, tokens_before=fitted.tokens_before,
                              tokens_after=fitted.tokens_after)
