"""Parallel tool calls: every result goes back with its own call, exactly once.

A model may ask for several tools in one reply. They run concurrently and finish in
any order; the results are put back in the order of the calls, each carrying its
call's id, so the transcript pairs every call with one result (no orphans, no
duplicates) and replays are deterministic. Models sometimes omit call ids or repeat
one; ids are made unique before anything runs, so the pairing cannot be ambiguous.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # tools imports the corpus index; the model seam needs only check_pairing
    from briefroom.protocol.tools import ToolOutcome

MAX_PARALLEL_TOOLS = 4


def normalize_calls(calls: list[dict], prefix: str, used: set[str] | None = None) -> list[dict]:
    """The calls with a unique, non-empty id each (first occurrence keeps its id).

    `used`: ids already in the conversation (updated in place). Some servers number
    calls per reply (`call_0` every time); a repeat would pair a result with two calls.
    """
    used = set() if used is None else used
    out = []
    for i, call in enumerate(calls):
        call_id = str(call.get("id") or "")
        if not call_id or call_id in used:
            call_id = f"{prefix}_{i}"
            while call_id in used:
                call_id += "x"
        used.add(call_id)
        out.append({**call, "id": call_id})
    return out


def run_calls(calls: list[dict], execute: Callable[[dict], "ToolOutcome"],
              max_workers: int = MAX_PARALLEL_TOOLS) -> list["ToolOutcome"]:
    """Run normalized calls concurrently; outcome i belongs to call i, whatever finished first."""
    from briefroom.protocol.tools import ToolOutcome

    if not calls:
        return []
    ids = [c["id"] for c in calls]
    if len(set(ids)) != len(ids):
        raise ValueError("tool call ids must be unique; normalize_calls first")
    done: dict[str, "ToolOutcome"] = {}
    with ThreadPoolExecutor(max_workers=min(max_workers, len(calls)), thread_name_prefix="tool-call") as pool:
        futures = {pool.submit(execute, call): call for call in calls}
        for future in as_completed(futures):
            call = futures[future]
            try:
                outcome = future.result()
            except Exception as exc:  # `execute` should not raise; if it does, the call still gets an answer
                outcome = ToolOutcome(call["id"], call.get("name", "?"), dict(call.get("args") or {}), None,
                                      {"error": "engineering_failure", "tool": call.get("name"),
                                       "message": f"{type(exc).__name__}: {exc}"})
            if outcome.call_id != call["id"]:
                raise ValueError(f"result for {outcome.call_id} came back for call {call['id']}")
            done[call["id"]] = outcome
    return [done[i] for i in ids]


class PairingError(ValueError):
    """A transcript where a tool result has no call, or a call has no (or two) results."""


def check_pairing(messages: list) -> None:
    """Every tool result follows its own call, once; every call is answered before the
    conversation moves on. Run on every prompt before it is sent: providers reject
    broken pairs, and a result shown without its call is a result without meaning."""
    from langchain_core.messages import AIMessage, ToolMessage

    open_calls: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            call_id = message.tool_call_id
            if call_id in answered:
                raise PairingError(f"tool result {call_id!r} appears twice")
            if call_id not in open_calls:
                raise PairingError(f"tool result {call_id!r} has no preceding call")
            open_calls.discard(call_id)
            answered.add(call_id)
            continue
        if open_calls:
            raise PairingError(f"tool call(s) {', '.join(sorted(open_calls))} were not answered")
        if isinstance(message, AIMessage):
            open_calls = {c["id"] for c in message.tool_calls if c["id"]}
    if open_calls:
        raise PairingError(f"tool call(s) {', '.join(sorted(open_calls))} were not answered")
