"""A run's parts, composed in the order their log lines come: the corpus index, memory,
the opening, the models, the tools and the run context, then the graph's input.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from briefroom.agents.run_context import Compaction, RunContext, RunMeter
from briefroom.corpus.index import CorpusIndex, SyncStats
from briefroom.corpus.tools import corpus_tools
from briefroom.errors import ConfigError
from briefroom.graph.summary import SUMMARIZER
from briefroom.llm import ModelPool
from briefroom.mcp.servers import McpServers
from briefroom.memory.reading import memory_tool
from briefroom.memory.zones import MemoryBackend
from briefroom.models.cassette import Cassette
from briefroom.protocol import injection
from briefroom.protocol.artifacts import ArtifactStore
from briefroom.protocol.bus import Bus
from briefroom.protocol.prompt_assembly import Item
from briefroom.protocol.tools import artifact_tool
from briefroom.records import Charter
from briefroom.report.spec import ReportSpec
from briefroom.review import Reviewer
from briefroom.run.launch import RunLaunch
from briefroom.run.model_pool import model_pool, token_counter
from briefroom.run.opening import begin, graph_input
from briefroom.run.request import Say, Watch
from briefroom.run.thread import Team, Thread
from briefroom.runlog import MovedAside, RunLog
from briefroom.stores import open_index
from briefroom.stores import open_memory as _memory_store
from briefroom.web.index import WebIndex
from briefroom.web.tools import build_web

TRANSCRIPT_FILE = "tool-outputs.jsonl"


@dataclass
class RunParts:
    """A run, composed: its graph and thread, and what finishes it."""

    launch: RunLaunch
    thread: Thread
    log: RunLog
    pool: ModelPool
    ctx: RunContext
    memory: MemoryBackend | None
    recorder: Cassette | None
    graph_input: Any  # None: the run goes on from its checkpoint
    reviewer: Reviewer | None


def compose(launch: RunLaunch, team: Team, thread: Thread, log: RunLog, moved: MovedAside, charter: Charter,
            stack: contextlib.ExitStack, watch: Watch) -> RunParts:
    """Stores, models and the run context, in the order their log lines come."""
    index, stats, seconds = _open_corpus(launch, stack, watch.say)
    memory = _open_memory(launch, index, stack)
    opening = begin(launch, thread, log, moved, charter, stats, seconds, memory, index)
    recorder = Cassette() if launch.request.record else None
    names = [r.name for r in thread.roles] + [SUMMARIZER.name]
    pool = model_pool(launch.settings, launch.request, names, launch.run_dir, stack, log, watch.say, recorder)
    store = ArtifactStore(launch.run_dir / "artifacts")
    tools = _tools(launch, index, store, memory, thread.mcp, stack, team.bus.roles)
    ctx = watch.ctx = _run_context(launch, team.bus, pool, log, tools, store, index, watch.say, opening.memory_items)
    start, reviewer = graph_input(launch, thread, ctx, charter, opening, team.bus)
    return RunParts(launch, thread, log, pool, ctx, memory, recorder, start, reviewer)


def _open_corpus(launch: RunLaunch, stack: contextlib.ExitStack, say: Say) -> tuple[CorpusIndex, SyncStats, float]:
    started = time.perf_counter()
    index = open_index(launch.settings)
    stack.callback(index.close)
    stats = _index_corpus(index, launch.request.corpus, say, web=launch.settings.web)
    return index, stats, round(time.perf_counter() - started, 3)


def _index_corpus(index: CorpusIndex, corpus: list[Path], say: Say, web: bool = False) -> SyncStats:
    """Index the run's folders; unreadable files are skipped with a line each, and a
    corpus with nothing readable stops the run (unless it may read the web)."""
    say(0, "index", "indexing corpus")
    stats = index.sync(corpus, progress=lambda line: say(0, "index", line))
    for skip in stats.skipped:  # one line each; the run goes on without them
        say(0, "index", f"skipped {skip.path}: {skip.reason}")
    if stats.documents == 0 and not web:
        also = f" ({len(stats.skipped)} file(s) skipped as unreadable)" if stats.skipped else ""
        raise ConfigError(f"no readable documents (md, txt, html, pdf) in {', '.join(map(str, corpus))}{also}")
    return stats


def _open_memory(launch: RunLaunch, index: CorpusIndex, stack: contextlib.ExitStack) -> MemoryBackend | None:
    if launch.namespace is None:
        return None
    memory = _memory_store(launch.settings, index.embedder)
    stack.callback(memory.close)
    # The gates' injection detector loads a 2 s model: load it while the run works.
    threading.Thread(target=injection.preload, name="preload-injection-detector", daemon=True).start()
    return memory


def _tools(launch: RunLaunch, index: CorpusIndex, store: ArtifactStore, memory: MemoryBackend | None,
           mcp: McpServers, stack: contextlib.ExitStack, roles: tuple[str, ...]) -> dict[str, Any]:
    """The run's tools by name: the corpus, artifacts, the web and MCP servers when the
    run has them, the caller's own, and memory recall (finding nothing with memory off).
    `roles`: the team's role names, which an MCP result may not address."""
    settings = launch.settings
    tools = {**corpus_tools(index), "read_artifact": artifact_tool(store)}
    if settings.web:
        assert isinstance(index, WebIndex)
        web = build_web(index, settings.data_dir, provider=settings.search_provider,
                        searxng_url=settings.searxng_url, allow_domains=settings.allow_domains,
                        deny_domains=settings.deny_domains, allow_addresses=settings.web_allow_addresses,
                        interval=settings.web_interval)
        stack.callback(web.close)
        tools.update(web.tools())
    tools.update(mcp.tools(index, roles))  # their results become sources in the index
    tools.update(launch.request.tools)
    tools["recall_memory"] = memory_tool(memory, launch.namespace, settings.memory_scope,  # type: ignore[arg-type]
                                         settings.recall_threshold, settings.fact_threshold)
    return tools


def _run_context(launch: RunLaunch, bus: Bus, pool: ModelPool, log: RunLog, tools: dict[str, Any],
                 store: ArtifactStore, index: CorpusIndex, say: Say, memory_items: list[Item]) -> RunContext:
    settings = launch.settings
    return RunContext(bus=bus, models=pool, counter=token_counter(settings, launch.request, pool), log=log,
                      tools=tools, artifacts=store, index=index, progress=say, context_strategy=settings.context,
                      max_tokens=settings.max_tokens, shares=settings.context_shares,
                      floors=settings.context_floors, memory_items=memory_items,
                      memory_threshold=settings.recall_threshold, fact_threshold=settings.fact_threshold,
                      parallel=settings.parallel, compaction=Compaction(*settings.compact_at),
                      report=ReportSpec(kind=settings.report_kind, words=settings.words, audience=settings.audience,
                                        quotes=settings.quotes),
                      meter=RunMeter(launch.run_dir / TRANSCRIPT_FILE))
