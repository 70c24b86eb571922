"""A plain tool-calling agent that answers a question from a folder of text files, and
uses briefroom's context protocol (`briefroom.context_protocol`) for everything its model
sees and everything it remembers. None of briefroom's roles, bus or graph is involved.

    python examples/facade_agent.py "How big is the 2026 cloud market?" --folder notes/ \
        --base-url http://localhost:8080/v1 --model qwen2.5-7b-instruct [--data-dir DIR] [--budget 4000]

The key comes from OPENAI_API_KEY (any value for a local server). Per step:
every prompt is built by `prepare_prompt` inside the budget; every tool result goes
through `handle_tool_result` (secrets redacted, large output offloaded to an artifact,
trimmed, sealed as data, instructions flagged); memory is read at the start and written
at the end, where the gate keeps only facts the agent read verbatim in a file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel, Field

from briefroom.context_protocol import (
    ContextItem,
    ContextProtocol,
    Goal,
    MemoryCandidate,
    MemoryWriteResult,
    PreparedPrompt,
    TaskState,
    ToolResultView,
)
from briefroom.protocol.tools import artifact_tool

INSTRUCTIONS = ("You answer questions from the files in one folder. Call list_files, then read_file for the files "
                "that matter; a large result is stored as an artifact: read_artifact reads part of it. Answer in a "
                "few sentences and quote figures exactly as the files write them.")
MAX_FILE_BYTES = 1_000_000


class ListFilesArgs(BaseModel):
    pass


class ReadFileArgs(BaseModel):
    path: str = Field(description="a path from list_files, relative to the folder")


def _definition(name: str, description: str, args: type[BaseModel]) -> dict[str, Any]:
    schema = args.model_json_schema()
    schema.pop("title", None)
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


TOOLS = [
    _definition("list_files", "List the text files in the folder, with their sizes.", ListFilesArgs),
    _definition("read_file", "Read one file of the folder.", ReadFileArgs),
]


class Folder:
    """The agent's own tools: a folder it may list and read, and nothing outside it."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self.read: dict[str, str] = {}  # path -> text, as read (what the memory check compares against)

    def list_files(self) -> str:
        files = sorted(p for p in self.root.rglob("*") if p.is_file())
        return "\n".join(f"{p.relative_to(self.root)} ({p.stat().st_size} bytes)" for p in files)

    def read_file(self, path: str) -> str:
        target = (self.root / path).resolve()
        if not target.is_relative_to(self.root) or not target.is_file():
            raise FileNotFoundError(f"no file {path!r} in the folder")
        if target.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"{path} is larger than {MAX_FILE_BYTES} bytes")
        text = target.read_text(encoding="utf-8", errors="replace")
        self.read[path] = text
        return text


@dataclass
class AgentRun:
    answer: str
    task: TaskState
    prompts: list[PreparedPrompt] = field(default_factory=list)
    views: list[ToolResultView] = field(default_factory=list)
    writes: list[tuple[MemoryCandidate, MemoryWriteResult]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {"answer": self.answer, "task": self.task.task_id, "steps": len(self.prompts),
                "prompt_tokens": [p.total_tokens for p in self.prompts],
                "budget": self.prompts[0].budget if self.prompts else 0,
                "dropped": sum(len(p.dropped) for p in self.prompts),
                "tool_results": [{"tool": v.tool, "call": v.call_id, "ok": v.ok, "bytes": v.full_bytes,
                                  "shown_tokens": v.shown_tokens, "artifact": v.artifact.ref if v.artifact else None,
                                  "redactions": v.redactions, "flagged": v.injection is not None}
                                 for v in self.views],
                "memory_writes": [{"text": c.text, "accepted": r.accepted, "reason": r.reason, "id": r.id}
                                  for c, r in self.writes]}


def run_agent(question: str, folder: Path, model: BaseChatModel, protocol: ContextProtocol, *,
              budget: int = 4000, max_steps: int = 8) -> AgentRun:
    """The loop: prepare the prompt, call the model, run its tool calls, hand each
    result to the protocol, until the model answers or the steps run out."""
    tools = Folder(folder)
    task = protocol.create_task(question)
    goal = Goal(goal=question, acceptance_criteria=("every figure is quoted from a file in the folder",),
                constraints=("use only the folder's files",))
    memory: list[ContextItem] = [hit.as_item() for hit in protocol.query_memory(question)]
    definitions = [*TOOLS, protocol.artifact_tool_definition()]  # its own tools, and the protocol's
    bound = model.bind_tools(definitions)
    exchange: list[BaseMessage] = []
    run = AgentRun(answer="", task=task)
    for _ in range(max_steps):
        prompt = protocol.prepare_prompt(question, budget=budget, goal=goal, items=memory, instructions=INSTRUCTIONS,
                                         tools=definitions, exchange=exchange)
        run.prompts.append(prompt)
        reply = bound.invoke(prompt.messages)
        if not isinstance(reply, AIMessage) or not reply.tool_calls:
            run.answer = str(reply.content).strip()
            break
        reply = protocol.pair_calls(reply, exchange)  # every call gets its own id, so results pair up
        exchange.append(reply)
        for call in reply.tool_calls:
            call_id = str(call["id"])
            sub = protocol.create_subtask(task.task_id, f"{call['name']}({json.dumps(call['args'])})")
            if call["name"] == "read_artifact":  # the protocol's tool: bad arguments come back as an error
                view = protocol.call_tool(artifact_tool(protocol.artifacts), call_id, call["args"])
            else:
                try:
                    if call["name"] == "list_files":
                        output: object = tools.list_files()
                    elif call["name"] == "read_file":
                        output = tools.read_file(ReadFileArgs.model_validate(call["args"]).path)
                    else:
                        raise LookupError(f"no tool {call['name']!r}")
                except Exception as exc:  # the model reads the error, as data
                    output = exc
                view = protocol.handle_tool_result(call["name"], call_id, output)
            run.views.append(view)
            exchange.append(view.message())
            if view.artifact is not None:
                protocol.attach_artifacts(sub.task_id, [view.artifact])
                protocol.attach_artifacts(task.task_id, [view.artifact])
            protocol.record_result(sub.task_id, f"ok={view.ok}, {view.full_bytes} bytes, {view.shown_tokens} shown")
    else:
        run.answer = "(no answer within the step limit)"
    protocol.record_result(task.task_id, run.answer)
    candidates = protocol.fact_candidates(run.answer, tools.read)
    run.writes = list(zip(candidates, protocol.persist_memories(candidates, task_id=task.task_id)))
    run.task = protocol.task_state(task.task_id)
    return run


def main(argv: list[str] | None = None, model: BaseChatModel | None = None) -> int:
    """Command line; `model` replaces the endpoint (tests pass a scripted model)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question")
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--model", dest="model_name", default=os.environ.get("BRIEFROOM_MODEL", ""))
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get(
        "BRIEFROOM_DATA_DIR", Path.home() / ".local" / "share" / "briefroom")))
    parser.add_argument("--budget", type=int, default=4000, help="prompt token budget per call")
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--session", default="facade-agent")
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead of the answer")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        parser.error(f"--folder {args.folder} is not a folder")
    if model is None:
        if not args.base_url or not args.model_name:
            parser.error("give --base-url and --model (an OpenAI-compatible endpoint)")
        from langchain_openai import ChatOpenAI
        from pydantic import SecretStr

        model = ChatOpenAI(model=args.model_name, base_url=args.base_url, temperature=0,
                           api_key=SecretStr(os.environ.get("OPENAI_API_KEY") or "none"))
    with ContextProtocol(args.data_dir, session=args.session) as protocol:
        run = run_agent(args.question, args.folder, model, protocol, budget=args.budget, max_steps=args.max_steps)
    if args.json:
        print(json.dumps(run.summary(), ensure_ascii=False, indent=1))
    else:
        print(run.answer)
        for candidate, result in run.writes:
            verdict = "remembered" if result.accepted else "not remembered"
            print(f"[{verdict}] {candidate.text} ({result.reason})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
