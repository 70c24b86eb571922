"""`ContextProtocol`: the four parts (prompts, tool results, memory, task state) behind one object."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from briefroom.context_protocol import memory, tool_results
from briefroom.context_protocol.memory import MemoryCandidate, MemoryHit, MemoryWriteResult
from briefroom.context_protocol.prompts import (
    INSTRUCTIONS,
    SHARES,
    ContextItem,
    Goal,
    PreparedPrompt,
    message_tokens,
    prepare_prompt,
)
from briefroom.context_protocol.tasks import TaskBook, TaskState
from briefroom.context_protocol.tool_results import ToolResultView
from briefroom.memory.namespace import Namespace, Scope, default_user
from briefroom.protocol.artifacts import ArtifactStore
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.envelope import OFFLOAD_BYTES
from briefroom.protocol.payloads import ArtifactRef
from briefroom.protocol.prompt_assembly import DEFAULT_FLOORS
from briefroom.protocol.tools import Tool, ToolOutcome, artifact_tool, run_tool


class ContextProtocol:
    """briefroom's context engineering behind one object, for agents that are not briefroom.

    Files live under `<data_dir>/context-protocol/<user>/<session>/` (artifacts,
    `tasks.json`, `protocol.jsonl` with every memory-gate decision); long-term memory in
    `<data_dir>/memory/`, the same store `briefroom memory list|show|forget` reads.
    """

    def __init__(self, data_dir: Path | str, *, user: str | None = None, session: str = "default",
                 encoding: str = "cl100k_base", embedder: Any = None, memory: bool = True,
                 tool_tokens: int = 1200, offload_bytes: int = OFFLOAD_BYTES, detector: bool = True,
                 shares: Mapping[str, float] | None = None, floors: Mapping[str, int] | None = None,
                 agents: Sequence[str] = ()) -> None:
        """`embedder`: a `briefroom.corpus.embeddings.Embedder` (default: the local MiniLM,
        loaded at the first memory call). `detector`: also run the learned injection
        detector on tool results (about 2 s to load once), not only the rule list.
        `agents`: the names your agents go by; text addressing one of them ("writer: ...",
        "as the writer") reads like an order, in tool results and memory candidates."""
        self.namespace = Namespace(user or default_user(), session)
        self.data_dir = Path(data_dir)
        self.root = self.data_dir / "context-protocol" / self.namespace.user / self.namespace.session
        self.root.mkdir(parents=True, exist_ok=True)
        self.counter = TokenCounter(encoding)
        self.artifacts = ArtifactStore(self.root / "artifacts")
        self.tool_tokens = tool_tokens
        self.offload_bytes = offload_bytes
        self.detector = detector
        self.agents = tuple(agents)
        self.memory_enabled = memory
        self.shares = {**SHARES, **(shares or {})}
        self.floors = {**DEFAULT_FLOORS, **(floors or {})}
        self._embedder = embedder
        self._store: Any = None  # MemoryStore, opened at the first memory call (chromadb is slow to import)
        self._log: Any = None  # RunLog, opened at the first memory write
        self._lock = threading.RLock()
        self._tasks = TaskBook(self.root, self._lock)

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
            if self._log is not None:
                self._log.close()
                self._log = None

    def __enter__(self) -> ContextProtocol:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- 1. prompts (prompts.py) ------------------------------------------------------
    def prepare_prompt(self, task: str, *, budget: int, goal: Goal | str | None = None,
                       items: Sequence[ContextItem] = (), instructions: str = INSTRUCTIONS,
                       tools: Sequence[Mapping[str, Any]] = (),
                       exchange: Sequence[BaseMessage] = ()) -> PreparedPrompt:
        """Compile a prompt: a stable prefix (instructions, goal, tool definitions: the
        same bytes on every call, so provider caches hit), the items in sections, the
        task last; then the tool conversation in progress.

        `exchange` is what followed the prompt in the current tool loop (AIMessages with
        tool calls, their ToolMessages). The newest round is kept verbatim, because a
        provider needs each result right after its call; older rounds become items of
        the "tool_results" section and compete for the budget like everything else.

        Raises FatalBreaker when what must be kept (P0 items, the task, the newest
        round) does not fit `budget`, or if a secret survived redaction."""
        return prepare_prompt(self.counter, self.shares, self.floors, task, budget=budget, goal=goal, items=items,
                              instructions=instructions, tools=tools, exchange=exchange)

    def count_tokens(self, messages: Sequence[BaseMessage]) -> int:
        """Tokens of messages as `prepare_prompt` counts them (text, tool names and arguments)."""
        return sum(message_tokens(self.counter, m) for m in messages)

    # --- 2. tool results (tool_results.py) --------------------------------------------
    @staticmethod
    def pair_calls(reply: AIMessage, exchange: Sequence[BaseMessage] = ()) -> AIMessage:
        """`reply` with a unique, non-empty id on every tool call. Some servers omit ids
        or number calls per reply (`call_0` every time); a repeat would pair one result
        with two calls (`protocol/calls.normalize_calls`)."""
        return tool_results.pair_calls(reply, exchange)

    def handle_tool_result(self, tool: str, call_id: str, output: object, *,
                           max_tokens: int | None = None) -> ToolResultView:
        """A foreign tool's raw output (text, a JSON-like object, a pydantic model, or the
        exception it raised) -> what the model may see. Redaction runs on the whole
        output before anything is trimmed, stored or shown."""
        return self._view(tool_results.raw_outcome(tool, call_id, output), max_tokens)

    def call_tool(self, tool: Tool, call_id: str, args: Mapping[str, Any] | str, *,
                  tools: Mapping[str, Tool] | None = None, task: str = "",
                  max_tokens: int | None = None) -> ToolResultView:
        """Run a briefroom-typed `Tool` (arguments validated, retries, timeout, fallback,
        redaction, as in a run) and return what the model may see."""
        outcome = run_tool(tool, call_id, dict(args) if isinstance(args, Mapping) else args, tools=tools, task=task)
        return self._view(outcome, max_tokens)

    def read_artifact(self, pointer: str, call_id: str, *, fields: Sequence[str] = (), start: int = 0,
                      end: int | None = None, max_tokens: int | None = None) -> ToolResultView:
        """Drill into an offloaded result: chosen JSON fields or a character range. The
        slice is trimmed but not offloaded again (it would only point at another artifact)."""
        args: dict[str, Any] = {"pointer": pointer, "fields": list(fields), "start": start}
        if end is not None:
            args["end"] = end
        outcome = run_tool(artifact_tool(self.artifacts), call_id, args)  # its Tool says: not offloaded again
        return self._view(outcome, max_tokens)

    def artifact_tool_definition(self) -> dict[str, Any]:
        """The OpenAI function definition of `read_artifact`, for `bind_tools`."""
        return artifact_tool(self.artifacts).definition()

    def _view(self, outcome: ToolOutcome, max_tokens: int | None) -> ToolResultView:
        return tool_results.view(outcome, self.counter, self.artifacts, max_tokens or self.tool_tokens,
                                 offload_bytes=self.offload_bytes, detector=self.detector, addressees=self.agents)

    # --- 3. and 4. memory (memory.py) -------------------------------------------------
    @property
    def memory_store(self) -> Any:
        """The long-term `MemoryStore` (opened on first use), or None when memory is off."""
        if not self.memory_enabled:
            return None
        with self._lock:
            if self._store is None:
                self._store, self._embedder = memory.open_store(self.data_dir, self._embedder)
            return self._store

    def query_memory(self, query: str, *, k: int = 5, scope: Scope = "user", threshold: float | None = None,
                     fact_threshold: float | None = None, skills: bool = True) -> list[MemoryHit]:
        """Memories similar to `query`, facts holding its words and numbers, and skills
        for it, within this user's (or session's) namespace, best first. Empty with memory off."""
        store = self.memory_store
        if store is None:
            return []
        return memory.query(store, self.namespace, query, k=k, scope=scope, threshold=threshold,
                            fact_threshold=fact_threshold, skills=skills)

    def persist_memory(self, candidate: MemoryCandidate, *, task_id: str | None = None) -> MemoryWriteResult:
        """Offer one candidate to the write gate; see `persist_memories`."""
        return self.persist_memories([candidate], task_id=task_id)[0]

    def persist_memories(self, candidates: Sequence[MemoryCandidate], *,
                         task_id: str | None = None) -> list[MemoryWriteResult]:
        """Judge every candidate with briefroom's write gates (one detector call for all),
        write what passes in one transaction, and return every decision with its reason;
        each is also logged to `protocol.jsonl` as a `memory_write` event."""
        if not candidates:
            return []
        store = self.memory_store
        if store is None:
            return [MemoryWriteResult(accepted=False, reason="memory is off") for _ in candidates]
        results = memory.persist(store, self.namespace, candidates, task_id, self._lock, self.agents)
        memory.log_decisions(self._memory_log(), candidates, results)
        return results

    @staticmethod
    def fact_candidates(answer: str, sources: Mapping[str, str]) -> list[MemoryCandidate]:
        """The check a plain agent can make in code before it remembers anything: every
        sentence of `answer` that carries a number becomes a fact candidate, backed by
        the source (`sources`: id -> text the agent read) that holds it verbatim and by
        the answer that used it. A sentence no source holds is backed by the answer
        alone, and the gate refuses it as unverified."""
        return memory.fact_candidates(answer, sources)

    def _memory_log(self) -> Any:
        if self._log is None:
            from briefroom.runlog import RunLog

            self._log = RunLog(self.root / "protocol.jsonl")
        return self._log

    # --- 5. task state (tasks.py) -----------------------------------------------------
    def create_task(self, task: str, *, artifacts: Sequence[ArtifactRef] = ()) -> TaskState:
        """A root task (the user's goal): id `t<n>`, version 1, no lineage."""
        return self._tasks.create_task(task, artifacts=artifacts)

    def create_subtask(self, parent_id: str, task: str, *, artifacts: Sequence[ArtifactRef] = ()) -> TaskState:
        """A child of `parent_id`: id `<parent>.<n>`, version 1, lineage = parent first, up to the root."""
        return self._tasks.create_subtask(parent_id, task, artifacts=artifacts)

    def reissue(self, task_id: str, task: str | None = None) -> TaskState:
        """Hand the same task out again (optionally reworded): version + 1; results of
        earlier versions stay, marked with their version."""
        return self._tasks.reissue(task_id, task)

    def attach_artifacts(self, task_id: str, refs: Sequence[ArtifactRef]) -> TaskState:
        """Add references (sources, facts, offloaded results) to a task's envelope; the
        envelope carries references, never content. Same version: the task did not change."""
        return self._tasks.attach_artifacts(task_id, refs)

    def record_result(self, task_id: str, text: str, *, artifacts: Sequence[ArtifactRef] = ()) -> TaskState:
        """Record a result against the task's current version (redacted)."""
        return self._tasks.record_result(task_id, text, artifacts=artifacts)

    def task_state(self, task_id: str) -> TaskState:
        """The task's envelope, text, sub-tasks and results."""
        return self._tasks.task_state(task_id)

    def tasks(self) -> list[TaskState]:
        return self._tasks.tasks()
