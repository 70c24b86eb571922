"""briefroom's research graph for the LangGraph API server (`langgraph dev`).

`langgraph.json` at the repository root names `make_graph`, a graph factory the
server calls whenever it needs the graph. What it returns is a small graph with one
node, `research`, whose input is the run's question and corpus and whose context
(`ServeContext`, sent by the client as the run's `context`) says which model, data
directory and budget to use. The node does what `briefroom research` does — charter,
corpus index, model pool, `RunContext`, a run directory with its log, report.md and
sources.json — and runs the research graph of `graph/builder.py` inside it as a
subgraph, handing it the `RunContext` as its LangGraph context. The server cannot pass
a `RunContext` itself (a run's context arrives as JSON), and a `RunContext` holds live
objects (index, model handles, log) that cannot be checkpointed, so it is built and
closed within the one node that uses it.

Because the research graph runs as a subgraph, a client streaming with
`subgraphs=True` sees every role's node update (`planner`, `searcher`, `critic`,
`writer`, `round_end`) as it happens; the run's progress lines arrive as `custom`
events. The final state holds the report, its citation map and the sources.

Runs served this way do not use long-term memory and cannot be resumed with
`briefroom resume` (their checkpoints are the server's); `briefroom inspect` and
`briefroom runs show` read their run directories as any other.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

GRAPH_ID = "research"


@dataclass
class ServeContext:
    """What a client may choose per run (the run's `context`). Unset fields come from
    the server's environment, as for the CLI (`BRIEFROOM_MODEL`, `BRIEFROOM_DATA_DIR`, ...)."""

    model: str | None = None  # 'test' (deterministic, no model), 'embedded', or a model name on the endpoint
    data_dir: str | None = None  # indexes (default BRIEFROOM_DATA_DIR or ~/.local/share/briefroom)
    runs_dir: str = "runs"  # where each run's directory is made, relative to the server's folder
    rounds: int = 3
    max_tokens: int | None = None
    parallel: int = 1
    roles_dirs: list[str] = field(default_factory=list)


class ResearchInput(TypedDict, total=False):
    question: str
    corpus: list[str]  # folders on the server's machine
    constraints: list[str]
    acceptance_criteria: list[str]


class ResearchOutput(TypedDict, total=False):
    report: str  # the report's Markdown, as in report.md
    accepted: bool  # the Critic accepted it
    cited: list[str]  # source id of [1], [2], ...
    sources: dict[str, dict[str, Any]]  # every source retrieved in the run, by id
    rounds: int
    tokens_used: int
    run_dir: str


class ServeState(ResearchInput, ResearchOutput):
    pass


class RunFailed(ValueError):
    """A run that stopped with one of briefroom's errors (a missing corpus folder, a dead
    endpoint, the token budget). The server shows a client the message of a ValueError,
    and only "An internal error occurred" for an exception type it does not know."""


def research(state: ServeState, runtime: Runtime[ServeContext]) -> ResearchOutput:
    """One research run: set up as `briefroom research` does, the research graph run as
    a subgraph with its `RunContext`, the report files written to the run directory."""
    from briefroom.errors import BriefroomError

    try:
        return _research(state, runtime)
    except BriefroomError as exc:  # its message is written for the user (and redacted)
        raise RunFailed(f"{type(exc).__name__}: {exc}") from exc


def _research(state: ServeState, runtime: Runtime[ServeContext]) -> ResearchOutput:
    # Imported here: the server loads this module at start, and these take seconds.
    from briefroom import runs
    from briefroom.agents.registry import bus_for, discover
    from briefroom.agents.run_context import Compaction, RunContext
    from briefroom.config import Settings
    from briefroom.errors import ConfigError
    from briefroom.graph.builder import build_graph
    from briefroom.graph.summary import SUMMARIZER
    from briefroom.memory.store import memory_tool
    from briefroom.protocol.artifacts import ArtifactStore
    from briefroom.protocol.budget import TokenCounter, encoding_for_model
    from briefroom.protocol.redaction import redact_text
    from briefroom.protocol.tools import artifact_tool, corpus_tools
    from briefroom.run import (
        TRANSCRIPT_FILE,
        Progress,
        ResearchRequest,
        _finish,
        _index_corpus,
        _model_pool,
        clean_question,
        default_run_dir,
        initial_state,
        make_charter,
        open_index,
    )
    from briefroom.runlog import RunLog

    options = runtime.context if isinstance(runtime.context, ServeContext) else ServeContext()
    question = clean_question(str(state.get("question") or ""))  # the same checks as a CLI run
    corpus = [Path(p).expanduser() for p in state.get("corpus") or []]
    if not corpus:
        raise ConfigError("no corpus: give 'corpus', a list of folders on the server's machine")
    for folder in corpus:
        if not folder.is_dir():
            raise ConfigError(f"corpus folder not found on the server: {folder}")
    settings = Settings.from_env(model=options.model, data_dir=options.data_dir, rounds=options.rounds,
                                 max_tokens=options.max_tokens, parallel=options.parallel, memory=False)
    request = ResearchRequest(question=question, corpus=corpus, constraints=list(state.get("constraints") or []),
                              acceptance_criteria=list(state.get("acceptance_criteria") or []),
                              roles_dirs=[Path(p) for p in options.roles_dirs])
    # the server's runs may start in the same second with the same question
    run_dir = Path(options.runs_dir) / f"{default_run_dir(question).name}-{uuid.uuid4().hex[:6]}"
    run_dir.mkdir(parents=True)
    request.out = run_dir
    roles = discover(request.roles_dirs)
    bus = bus_for(roles)
    record = runs.RunRecord(question=question, corpus=[str(p.resolve()) for p in corpus],
                            constraints=request.constraints, acceptance_criteria=request.acceptance_criteria,
                            roles_dirs=[str(p.resolve()) for p in request.roles_dirs],
                            settings=runs.settings_for_record(settings), thread_id=run_dir.name)
    runs.save(run_dir, record)
    write = get_stream_writer()
    ctx: RunContext | None = None
    clock = time.monotonic()

    def say(at_round: int, agent: str, step: str) -> None:
        write({"progress": asdict(Progress(at_round, agent, step, ctx.tokens_used if ctx else 0,
                                           settings.max_tokens,
                                           round(time.monotonic() - clock, 1)))})

    log: RunLog | None = None
    with contextlib.ExitStack() as stack:
        try:
            log = RunLog(run_dir / "run.jsonl")
            stack.callback(log.close)
            charter = make_charter(request, settings, roles)
            (run_dir / "charter.json").write_text(charter.model_dump_json(indent=2) + "\n", encoding="utf-8")
            started = time.perf_counter()
            index = open_index(settings)
            stack.callback(index.close)
            stats = _index_corpus(index, corpus, say)
            log.event("run_start", question=charter.goal, rounds=charter.max_rounds, roles=[r.name for r in roles],
                      corpus=[str(p) for p in corpus])
            log.event("index", documents=stats.documents, embedded_chunks=stats.embedded_chunks,
                      reused_documents=stats.reused_documents,
                      seconds=round(time.perf_counter() - started, 3),
                      skipped=[{"path": s.path, "reason": s.reason} for s in stats.skipped])
            pool = _model_pool(settings, request, [r.name for r in roles] + [SUMMARIZER.name], run_dir, stack,
                               log, say, None)
            store = ArtifactStore(run_dir / "artifacts")
            tools = {**corpus_tools(index), "read_artifact": artifact_tool(store),
                     "recall_memory": memory_tool(None, None, settings.memory_scope,  # type: ignore[arg-type]
                                                  settings.recall_threshold, settings.fact_threshold)}
            ctx = RunContext(bus=bus, models=pool, counter=TokenCounter(encoding_for_model(settings.model or "")),
                             log=log, tools=tools, artifacts=store, index=index, progress=say,
                             context_strategy=settings.context, max_tokens=settings.max_tokens,
                             shares=settings.context_shares, floors=settings.context_floors,
                             memory_threshold=settings.recall_threshold, parallel=settings.parallel,
                             compaction=Compaction(*settings.compact_at), transcript_path=run_dir / TRANSCRIPT_FILE)
            runs.update(run_dir, record, status="running")
            # Called inside this node, the compiled graph runs as its subgraph: the server's
            # checkpointer and stream (node updates with subgraphs=True) reach it.
            graph = build_graph(roles, bus, parallel=settings.parallel)
            final = graph.invoke(initial_state(charter, bus.address("plan"), log_seq=log.seq),
                                 config={"recursion_limit": 60 * settings.rounds,
                                         "max_concurrency": settings.parallel},
                                 context=ctx)
            result = _finish(run_dir, record, final, ctx, None, None, log, pool, request, settings, None)
            runs.update(run_dir, record, status="done", round=int(final.get("round", 1)))
        except BaseException as exc:
            if log is not None:
                log.event("error", kind=type(exc).__name__, message=str(exc)[:1000])
            runs.update(run_dir, record, status="failed", error=redact_text(f"{type(exc).__name__}: {exc}")[:1000])
            raise
    report = final["report"]
    return ResearchOutput(report=redact_text(report.markdown), accepted=report.accepted,
                          cited=list(report.cited_sources),
                          sources={sid: rec.model_dump(mode="json") for sid, rec in final.get("sources", {}).items()},
                          rounds=int(final.get("round", 1)), tokens_used=result.tokens_used,
                          run_dir=str(run_dir.resolve()))


def build_served_graph():
    graph = StateGraph(ServeState, context_schema=ServeContext, input_schema=ResearchInput,
                       output_schema=ResearchOutput)
    graph.add_node("research", research)
    graph.add_edge(START, "research")
    graph.add_edge("research", END)
    return graph.compile(name=GRAPH_ID)


def make_graph():
    """The graph factory `langgraph.json` names: cheap (no model, no index), so the
    server may call it for every request."""
    return build_served_graph()
