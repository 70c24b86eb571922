"""Structured output and tool calls on a llama.cpp server used as an endpoint, with
`--structured auto`: what briefroom detects and whether each form succeeds, per model.

    .venv/bin/python -m bench.endpoint_forms [FILE.gguf ...] [--tries 3]

Each GGUF file is served by llama.cpp's own server (the embedded engine's process) and
reached as a user's endpoint would be (OPENAI_BASE_URL), so detection runs for real.
Prints JSON: the detected profile, and per form the successes out of the tries.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage

from briefroom.agents.planner import Plan
from briefroom.config import Settings
from briefroom.llm import build_pool
from briefroom.models import embedded
from briefroom.models.embedded import EmbeddedServer

TOOLS = [{"type": "function", "function": {
    "name": "local_search", "description": "Search the user's documents; returns passages with source ids.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
    {"type": "function", "function": {
        "name": "read_source", "description": "Read one source by id.",
        "parameters": {"type": "object", "properties": {"source_id": {"type": "string"}},
                       "required": ["source_id"]}}}]
QUESTION = "How big is the 2026 public cloud market and who is growing fastest?"


def _structured(handle) -> bool:
    schema = Plan.model_json_schema()
    reply, _ = handle.invoke([SystemMessage("You are the Planner. Split the question into sub-questions. "
                                            "Reply with JSON only."), HumanMessage(QUESTION)],
                             schema=schema, schema_name="Plan")
    try:
        Plan.model_validate_json(str(reply.content))
        return True
    except ValueError:
        return False


def _tool(handle, force: bool) -> bool:
    reply, _ = handle.invoke([SystemMessage("You are the Searcher. Use the tools to find evidence."),
                              HumanMessage(f"Find evidence for: {QUESTION}")],
                             tools=TOOLS, force_tool="local_search" if force else None)
    return any(c["name"] == "local_search" and isinstance(c["args"].get("query"), str) for c in reply.tool_calls)


def measure(model: Path, tries: int) -> dict[str, object]:
    with EmbeddedServer(model_path=model, n_ctx=4096, slots=2) as server:
        settings = Settings(model=model.stem, base_url=server.base_url, structured="auto", idle_timeout=900)
        handle = build_pool(settings, ["planner"]).handles["planner"]
        profile = handle.profile
        started = time.perf_counter()
        results = {"structured_plan": sum(_structured(handle) for _ in range(tries)),
                   "forced_tool_call": sum(_tool(handle, True) for _ in range(tries)),
                   "auto_tool_call": sum(_tool(handle, False) for _ in range(tries))}
        seconds = time.perf_counter() - started
    return {"model": model.name, "detected": profile.kind if profile else None,
            "structured_mode": handle.structured_mode, "native_tools": profile.native_tools if profile else None,
            "tries": tries, "succeeded": results, "seconds": round(seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*", type=Path)
    parser.add_argument("--tries", type=int, default=3)
    args = parser.parse_args()
    models = args.models or [embedded.embedded_model_path()]
    for model in models:  # one line per model as it finishes: a slow model does not hide the others
        print(json.dumps(measure(model, args.tries)), flush=True)


if __name__ == "__main__":
    main()
