"""One research run, start to finish: the library entry point the CLI calls.

settings -> charter -> corpus index -> models -> graph.invoke -> run directory.
Whatever happens, the run directory keeps what was done: the run log is flushed per
line and the LangGraph checkpoint holds the state after every node.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from briefroom.agents.base import Role
from briefroom.agents.context import RunContext
from briefroom.agents.registry import bus_for, discover
from briefroom.config import Settings
from briefroom.corpus.embeddings import make_embedder
from briefroom.corpus.index import CorpusIndex
from briefroom.errors import BriefroomError, ConfigError
from briefroom.graph.builder import build_graph
from briefroom.graph.checkpoint import open_checkpointer
from briefroom.graph.state import DEFAULT_CRITERIA, AgentState, Charter, Fact, SourceRecord
from briefroom.graph.summary import SUMMARIZER
from briefroom.llm import ModelPool, build_pool, needs_embedded_server
from briefroom.memory.gates import apply_gates
from briefroom.memory.namespace import Namespace, default_user
from briefroom.memory.reading import read_memory, remembered_facts
from briefroom.memory.store import MemoryStore, memory_tool
from briefroom.memory.zones import Recalled
from briefroom.models.cassette import Cassette
from briefroom.models.embedded import EmbeddedServer
from briefroom.protocol.artifacts import ArtifactStore
from briefroom.protocol.budget import TokenCounter, encoding_for_model
from briefroom.protocol.context import Item
from briefroom.protocol.messages import MsgType, Priority, make_message
from briefroom.protocol.redaction import redact_text
from briefroom.protocol.tools import artifact_tool, corpus_tools
from briefroom.runlog import RunLog


@dataclass
class ResearchRequest:
    question: str
    corpus: list[Path]
    out: Path | None = None
    constraints: list[str] = field(default_factory=list)
    acceptance_criteria: list[str] = field(default_factory=list)
    roles_dirs: list[Path] = field(default_factory=list)
    record: Path | None = None
    cassette: Cassette | None = None
    replay_handles: dict[str, Any] | None = None  # scenario.RecordedHandle per role
    models: ModelPool | None = None  # bring your own LangChain chat models (tests, library use)
    tools: dict[str, Any] = field(default_factory=dict)  # replace or add tools by name (protocol.tools.Tool)


@dataclass
class RunResult:
    run_dir: Path
    report: str
    state: AgentState
    labels: set[str]
    events: list[dict[str, Any]]


def slugify(text: str, limit: int = 40) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-") or "run"


def default_run_dir(question: str) -> Path:
    return Path("runs") / f"{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}-{slugify(question)}"


def make_charter(request: ResearchRequest, settings: Settings, roles: list[Role]) -> Charter:
    return Charter(goal=redact_text(" ".join(request.question.split())),
                   acceptance_criteria=tuple(DEFAULT_CRITERIA) + tuple(request.acceptance_criteria),
                   constraints=tuple(request.constraints), roles=tuple(r.name for r in roles),
                   max_rounds=settings.rounds, max_revisions=settings.max_revisions)


def initial_state(charter: Charter, facts: list[Fact] | None = None,
                  sources: dict[str, SourceRecord] | None = None) -> AgentState:
    ask = make_message(sender="user", msg_type=MsgType.INSTRUCTION, receiver="planner", content=charter.goal,
                       round=1, seq=0, priority=Priority.P0, ttl_rounds=charter.max_rounds)
    return AgentState(charter=charter, round=1, whiteboard=[ask], revisions=0, done=False, report=None,
                      facts=list(facts or []), sources=dict(sources or {}))


def run_research(request: ResearchRequest, settings: Settings,
                 progress: Callable[[int, str, str], None] | None = None) -> RunResult:
    if not request.question.strip():
        raise ConfigError("the question is empty")
    if not request.corpus:
        raise ConfigError("no corpus: pass --corpus DIR (a folder of md, txt, html or pdf files)")
    run_dir = request.out or default_run_dir(request.question)
    if (run_dir / "report.md").exists() or (run_dir / "run.jsonl").exists():
        raise ConfigError(f"{run_dir} already holds a run; choose another --out")
    run_dir.mkdir(parents=True, exist_ok=True)

    roles = discover(request.roles_dirs)
    bus = bus_for(roles)
    charter = make_charter(request, settings, roles)
    # Replays and recordings must not depend on what this machine remembers.
    use_memory = settings.memory and request.cassette is None and request.record is None
    namespace = Namespace(settings.user or default_user(), settings.session, slugify(run_dir.resolve().name, 64)) \
        if use_memory else None
    (run_dir / "charter.json").write_text(charter.model_dump_json(indent=2) + "\n", encoding="utf-8")
    log = RunLog(run_dir / "run.jsonl")
    recorder = Cassette() if request.record else None
    index: CorpusIndex | None = None
    memory: MemoryStore | None = None
    try:
        log.event("run_start", question=charter.goal, rounds=charter.max_rounds, roles=[r.name for r in roles],
                  corpus=[str(p) for p in request.corpus])
        if progress:
            progress(0, "index", "indexing corpus")
        started = time.perf_counter()
        embedder = make_embedder(settings.embedder)
        index = CorpusIndex(settings.data_dir, embedder)
        stats = index.sync(request.corpus)
        log.event("index", documents=stats.documents, embedded_chunks=stats.embedded_chunks,
                  reused_documents=stats.reused_documents, seconds=round(time.perf_counter() - started, 3))
        if stats.documents == 0:
            raise ConfigError(f"no readable documents (md, txt, html, pdf) in {', '.join(map(str, request.corpus))}")
        memory_items: list[Item] = []
        used_skills: list[str] = []
        recalled: list[Recalled] = []
        if namespace is not None:
            memory = MemoryStore(settings.data_dir, embedder)
            memory_items, used_skills, recalled = read_memory(memory, namespace, settings, charter.goal, log)
        known_facts, known_sources = remembered_facts(recalled, index)
        names = [r.name for r in roles] + [SUMMARIZER.name]
        with contextlib.ExitStack() as stack:
            embedded_url = None
            if request.models is None and request.cassette is None and needs_embedded_server(settings, names):
                if progress:
                    progress(0, "model", "starting the embedded llama.cpp server")
                server = stack.enter_context(EmbeddedServer(log_path=run_dir / "llama-server.log"))
                embedded_url = server.base_url
                log.event("model_server", base_url=embedded_url, model_path=server.model_path.name)
            pool = request.models or build_pool(settings, names, embedded_base_url=embedded_url,
                                                cassette=request.cassette, recorder=recorder)
            for role, recorded in (request.replay_handles or {}).items():
                if role in pool.handles:
                    handle = pool.handles[role]
                    handle.label, handle.tool_mode = recorded.label, recorded.tool_mode
                    handle.structured_mode, handle.context_window = recorded.structured_mode, recorded.context_window
            log.event("models", handles={n: {"provider": h.provider, "model": h.model_name, "label": h.label}
                                         for n, h in pool.handles.items()})
            store = ArtifactStore(run_dir / "artifacts")
            tools = {**corpus_tools(index), "read_artifact": artifact_tool(store), **request.tools}
            # for roles that declare it; with memory off it finds nothing
            tools["recall_memory"] = memory_tool(memory, namespace, settings.memory_scope,  # type: ignore[arg-type]
                                                 settings.memory_threshold, settings.fact_threshold)
            counter = TokenCounter(encoding_for_model(settings.model or ""))
            ctx = RunContext(bus=bus, models=pool, counter=counter, log=log, tools=tools, artifacts=store,
                             index=index, progress=progress or (lambda *_: None),
                             context_strategy=settings.context, max_tokens=settings.max_tokens,
                             shares=settings.context_shares, floors=settings.context_floors,
                             memory_items=memory_items, memory_threshold=settings.memory_threshold)
            saver = open_checkpointer(run_dir / "checkpoints.sqlite")
            stack.callback(saver.conn.close)
            graph = build_graph(roles, bus, checkpointer=saver)
            config = {"configurable": {"thread_id": run_dir.name}, "recursion_limit": 60 * charter.max_rounds}
            state = graph.invoke(initial_state(charter, known_facts, known_sources), config=config, context=ctx)
        report = state.get("report")
        if report is None:
            raise BriefroomError("the run ended without a report (see run.jsonl)")
        (run_dir / "report.md").write_text(redact_text(report.markdown), encoding="utf-8")
        all_sources = {sid: rec.model_dump(mode="json") for sid, rec in state.get("sources", {}).items()}
        (run_dir / "sources.json").write_text(json.dumps({"cited": list(report.cited_sources), "sources": all_sources},
                                                         indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if memory is not None and namespace is not None:
            started = time.perf_counter()
            decisions = apply_gates(memory, namespace, run_dir.name, state, [t for _, t in ctx.transcript],
                                    used_skills, log)
            log.event("memory_gates", seconds=round(time.perf_counter() - started, 4),
                      written=sum(d["accepted"] for d in decisions), rejected=sum(not d["accepted"] for d in decisions))
        log.event("run_end", accepted=report.accepted, repairs=len(report.repairs), rounds=state.get("round"),
                  cited=list(report.cited_sources))
        if recorder is not None and request.record is not None:
            from briefroom.scenario import RecordedHandle, write_scenario

            handles = {role: RecordedHandle(label=h.label, tool_mode=h.tool_mode, structured_mode=h.structured_mode,
                                            context_window=h.context_window) for role, h in pool.handles.items()}
            write_scenario(request.record, request, settings, charter, recorder, report.markdown,
                           label=" / ".join(sorted(pool.labels)), handles=handles)
        return RunResult(run_dir, report.markdown, state, pool.labels, log.events)
    except BaseException as exc:
        log.event("error", kind=type(exc).__name__, message=str(exc)[:1000],
                  traceback=traceback.format_exc(limit=12)[-4000:])
        raise
    finally:
        log.close()
        if memory is not None:
            memory.close()
        if index is not None:
            index.close()
