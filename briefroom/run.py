"""One research run, start to finish, and its resumption: the library entry points.

`execute_run` is the one composition root: the CLI, the job worker, replays and the
served graph all build and finish their runs through it, in named steps (team ->
checkpointed thread -> log and charter -> corpus index -> memory -> models -> run
context -> graph -> finish).
Whatever happens, the run directory keeps what was done: `run.json` says how the run
stands, the run log is flushed per line, and the LangGraph checkpoint (durability
"sync") holds the state after every node, with the ledger of what the run did outside
it (log lines, tokens, model replies). `resume_research` continues from there; work
after the graph (report files, memory gates) is idempotent, so it may run twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from langgraph.types import Command, StateSnapshot

from briefroom import runs
from briefroom.agents.base import Role
from briefroom.agents.registry import bus_for, discover
from briefroom.agents.run_context import Compaction, RunContext
from briefroom.config import Settings
from briefroom.corpus.index import CorpusIndex, SyncStats
from briefroom.corpus.tools import corpus_tools
from briefroom.errors import BriefroomError, ConfigError
from briefroom.events import Event, ResumedAfter, RunResume
from briefroom.files import write_atomic
from briefroom.graph.builder import build_graph
from briefroom.graph.routing import ROUND_END
from briefroom.graph.summary import SUMMARIZER
from briefroom.llm import ModelPool, build_pool, embedded_model_file, embedded_slots, needs_embedded_server
from briefroom.mcp.servers import McpServers, open_servers
from briefroom.memory.gates import TeamRoles, apply_gates
from briefroom.memory.namespace import Namespace, default_user
from briefroom.memory.reading import memory_tool, read_memory, remembered_facts
from briefroom.memory.zones import MemoryBackend, Recalled
from briefroom.models.cassette import Cassette
from briefroom.models.embedded import EmbeddedServer
from briefroom.models.served_tokens import COUNTS_FILE, RecordedTokenCounter, ServedTokenCounter
from briefroom.protocol import injection
from briefroom.protocol.artifacts import ArtifactStore
from briefroom.protocol.budget import TokenCounter, encoding_for_model
from briefroom.protocol.bus import Bus
from briefroom.protocol.messages import MsgType, Priority, make_message
from briefroom.protocol.payloads import Instruction
from briefroom.protocol.prompt_assembly import Item
from briefroom.protocol.redaction import redact_text
from briefroom.protocol.tools import artifact_tool
from briefroom.records import DEFAULT_CRITERIA, Charter, Fact, SourceRecord
from briefroom.report.evidence import sources_extras
from briefroom.report.language import language_of
from briefroom.report.spec import ReportSpec
from briefroom.review import (
    ClarifyRequest,
    PlanReviewRequest,
    RecordedAnswers,
    Reviewer,
    ReviewOptions,
    load_recorded_review,
    pending_request,
    save_recorded_review,
)
from briefroom.runlog import MovedAside, RunLog
from briefroom.state.schema import AgentState
from briefroom.stores import open_checkpoints, open_index
from briefroom.stores import open_memory as _memory_store
from briefroom.web.index import WebIndex
from briefroom.web.tools import build_web, cite_web

# A question is a question: its words go into every role's prompt (P0, never cut).
MAX_QUESTION_CHARS = 2000
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


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
    scenario: Path | None = None  # replays: the scenario folder (kept in run.json so a replay can resume)
    thread_id: str | None = None  # the graph's thread; a queued job's is `job-<id>` (default: the run's name)
    review: ReviewOptions = field(default_factory=ReviewOptions)  # what the run asks its user (review.py)
    reviewer: Reviewer | None = None  # who answers; None: a run that asks stays paused at the question


@dataclass
class RunResult:
    run_dir: Path
    report: str | None  # None when the run was paused on purpose (`stop_after_round`)
    state: AgentState
    labels: set[str]
    events: list[Event]
    status: runs.Status = "done"
    tokens_used: int = 0
    budget: int | None = None
    waiting_for: PlanReviewRequest | ClarifyRequest | None = None  # paused at a question for its user

    @property
    def over_budget(self) -> int:
        """Tokens spent past the run budget: a model call's size is known only once it returns."""
        return max(0, self.tokens_used - self.budget) if self.budget else 0


@dataclass
class Progress:
    """What a live progress line shows: where the run is and what it has spent."""

    round: int
    agent: str
    step: str
    tokens_used: int
    max_tokens: int | None
    elapsed_s: float


def slugify(text: str, limit: int = 40) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-") or "run"


def default_run_dir(question: str) -> Path:
    return Path("runs") / f"{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}-{slugify(question)}"


def make_charter(request: ResearchRequest, settings: Settings, roles: list[Role]) -> Charter:
    return Charter(goal=redact_text(" ".join(request.question.split())),
                   acceptance_criteria=tuple(DEFAULT_CRITERIA) + tuple(request.acceptance_criteria),
                   constraints=tuple(request.constraints), roles=tuple(r.name for r in roles),
                   max_rounds=settings.rounds, max_revisions=settings.max_revisions,
                   language=settings.language or language_of(request.question))


def initial_state(charter: Charter, planner: str, facts: list[Fact] | None = None,
                  sources: dict[str, SourceRecord] | None = None, log_seq: int = 0,
                  review: ReviewOptions | None = None) -> AgentState:
    """The state a run starts from: the user's goal, addressed to `planner` (the role
    with the capability "plan")."""
    # The user's goal is the root task, t0: every sub-task's lineage ends in it.
    ask = make_message(sender="user", msg_type=MsgType.INSTRUCTION, receiver=planner, content=charter.goal,
                       round=1, seq=0, priority=Priority.P0, ttl_rounds=charter.max_rounds,
                       payload=Instruction(task_id="t0"))
    state = AgentState(charter=charter, round=1, whiteboard=[ask], revisions=0, done=False, report=None,
                       facts=list(facts or []), sources=dict(sources or {}),
                       ledger={"log_seq": log_seq, "tokens_used": 0, "model_calls": {}})
    if review is not None and review.any:  # only then: a run that asks nothing checkpoints as before
        state["review"] = {"plan": review.plan, "clarify": review.clarify}
    return state


ProgressFn = Callable[[Progress], None]
UpdateFn = Callable[[dict[str, Any]], None]  # a node's update, as the graph streams it
TRANSCRIPT_FILE = "tool-outputs.jsonl"


def clean_question(question: str) -> str:
    """The question as a run uses it, one line of text, or a ConfigError saying why not."""
    if not question.strip():
        raise ConfigError("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:  # it goes into every prompt, and memory matches it
        raise ConfigError(f"the question is {len(question):,} characters; at most {MAX_QUESTION_CHARS:,} "
                          "(put long material in a document of the corpus instead)")
    if any(ch in question for ch in "\x00\ufffd"):
        raise ConfigError("the question holds NUL or replacement characters (a binary or mis-decoded paste?)")
    # ESC, BEL and other controls would reach the terminal and report.md raw: a question is one line of text
    return " ".join(_CONTROL.sub(" ", question).split())


def run_research(request: ResearchRequest, settings: Settings, progress: ProgressFn | None = None,
                 stop_after_round: int | None = None, *, on_update: UpdateFn | None = None) -> RunResult:
    """A new run in a new run directory. `stop_after_round=K` pauses it, checkpointed,
    once round K has ended (`replay --until-round`); `resume_research` goes on from there."""
    return execute_run(new_run(request, settings), RunHooks(progress, on_update), stop_after_round)


def new_run(request: ResearchRequest, settings: Settings) -> RunLaunch:
    """A new run's directory and run.json, after the checks that need no run directory."""
    request = replace(request, question=clean_question(request.question))
    if not request.corpus and not settings.web:
        raise ConfigError("no corpus: pass --corpus DIR (a folder of md, txt, html or pdf files), or --web")
    for folder in request.corpus:  # before a run directory exists for a run that cannot start
        if not Path(folder).is_dir():
            raise ConfigError(f"corpus folder not found: {folder}")
    run_dir = request.out or default_run_dir(request.question)
    if (run_dir / "report.md").exists() or (run_dir / "run.jsonl").exists() or (run_dir / runs.RECORD_FILE).exists():
        raise ConfigError(f"{run_dir} already holds a run; choose another --out (or: briefroom resume {run_dir})")
    run_dir.mkdir(parents=True, exist_ok=True)
    # Replays and recordings must not depend on what this machine remembers.
    use_memory = settings.memory and request.cassette is None and request.record is None
    namespace = Namespace(settings.user or default_user(), settings.session, slugify(run_dir.resolve().name, 64)) \
        if use_memory else None
    # absolute paths: `briefroom resume` may run from another folder
    record = runs.RunRecord(question=request.question, corpus=[str(p.resolve()) for p in request.corpus],
                            constraints=list(request.constraints),
                            acceptance_criteria=list(request.acceptance_criteria),
                            roles_dirs=[str(p.resolve()) for p in request.roles_dirs],
                            settings=runs.settings_for_record(settings),
                            scenario=str(request.scenario) if request.scenario else None,
                            recording=request.record is not None, thread_id=_thread_id(request, run_dir, settings),
                            namespace=asdict(namespace) if namespace else None)
    runs.save(run_dir, record)
    return RunLaunch(run_dir, record, settings, request)


def _thread_id(request: ResearchRequest, run_dir: Path, settings: Settings) -> str:
    """The run's folder name names its thread in its own checkpoints.sqlite; a database
    shared by many machines gets a suffix so two runs named alike stay apart."""
    if request.thread_id:
        return request.thread_id
    return f"{run_dir.name}-{secrets.token_hex(4)}" if settings.database_url else run_dir.name


def resume_research(run_dir: Path, overrides: dict[str, Any] | None = None, progress: ProgressFn | None = None,
                    *, live: bool = False, models: ModelPool | None = None, tools: dict[str, Any] | None = None,
                    stop_after_round: int | None = None, reviewer: Reviewer | None = None,
                    on_update: UpdateFn | None = None) -> RunResult:
    """Continue a run from its last checkpoint, after a crash, Ctrl-C, a dead endpoint or
    a FatalBreaker whose cause was fixed (`overrides`, e.g. {"max_tokens": 60000}).
    A replay continues with its cassette, or with a live model when `live` is set.
    A run paused at a question for its user is asked again, through `reviewer`."""
    launch = resumed_run(run_dir, overrides, live=live, models=models, tools=tools, reviewer=reviewer)
    return execute_run(launch, RunHooks(progress, on_update), stop_after_round)


def resumed_run(run_dir: Path, overrides: dict[str, Any] | None = None, *, live: bool = False,
                models: ModelPool | None = None, tools: dict[str, Any] | None = None,
                reviewer: Reviewer | None = None) -> RunLaunch:
    """A run directory's run, as run.json says it was asked, with the settings changed
    where `overrides` says."""
    record = runs.load(run_dir)
    if record.recording:
        raise ConfigError("a recording cannot be resumed (its cassette would have a hole); record it again")
    settings = record.settings_with(**(overrides or {}))
    cassette = replay_handles = None
    scenario = Path(record.scenario) if record.scenario else None
    if scenario is not None and live:
        record.scenario = None  # from here on a live model answers; run.json says so
        scenario = None
    if scenario is not None:
        from briefroom.scenario import Scenario

        cassette, replay_handles = Cassette.load(scenario), Scenario.load(scenario).handles
    request = ResearchRequest(question=record.question, corpus=[Path(p) for p in record.corpus], out=run_dir,
                              constraints=list(record.constraints),
                              acceptance_criteria=list(record.acceptance_criteria),
                              roles_dirs=[Path(p) for p in record.roles_dirs], cassette=cassette,
                              replay_handles=replay_handles, models=models, tools=dict(tools or {}),
                              scenario=scenario, reviewer=reviewer)
    record.settings = runs.settings_for_record(settings)
    return RunLaunch(run_dir, record, settings, request)


def execute_run(launch: RunLaunch, hooks: RunHooks | None = None, stop_after_round: int | None = None) -> RunResult:
    """The one composition root: every run (`briefroom research` and `resume`, a queued
    job, a served run) is built and finished here, in named steps: the team; its
    checkpointed thread; the log and charter; the stores (corpus index, memory); the
    models; the run context and the graph's input; then the graph runs, and the run is
    paused or finished. However the run ends, run.json and the log say how
    (`_record_ending`)."""
    hooks = hooks or RunHooks()
    run_dir, record = launch.run_dir, launch.record
    watch = _Watch(launch.settings, hooks.progress)
    team = _team(launch.request, launch.settings)
    with contextlib.ExitStack() as stack:
        stack.enter_context(_exclusive(run_dir))  # (outside the try: run.json may be another process's)
        try:  # a database that refuses the run ends it here, recorded as failed, never left `running`
            thread = _open_thread(launch, team, stack)
        except BaseException as exc:
            _record_ending(run_dir, record, None, exc)
            raise
        log: RunLog | None = None
        try:
            runs.update(run_dir, record, status="running", error=None, resumable=True)
            log, moved = _reopen_log(launch, thread)
            charter = _charter(launch, thread, log, moved, watch.say)
            parts = _compose(launch, team, thread, log, moved, charter, stack, watch)
            return _drive(parts, hooks, stop_after_round)
        except BaseException as exc:
            _record_ending(run_dir, record, log, exc)
            raise
        finally:
            if log is not None:
                log.close()


@dataclass(frozen=True)
class RunHooks:
    """How a caller follows a run as it goes: its progress lines, and each node's update
    as the graph streams it (the served graph passes both on to its client)."""

    progress: ProgressFn | None = None
    on_update: UpdateFn | None = None


@dataclass(frozen=True)
class RunLaunch:
    """A run about to be built: its directory, its record (run.json), the settings it
    runs with and what it was asked. `new_run` makes one for a new run, `resumed_run`
    from a run directory; `execute_run` builds and finishes either."""

    run_dir: Path
    record: runs.RunRecord
    settings: Settings
    request: ResearchRequest

    @property
    def namespace(self) -> Namespace | None:
        """Where the run reads and writes long-term memory; None: it uses none."""
        return Namespace(**self.record.namespace) if self.record.namespace else None


class _Watch:
    """The progress line: the run's clock, and the tokens spent once a run context counts them."""

    def __init__(self, settings: Settings, progress: ProgressFn | None):
        self.max_tokens, self.progress = settings.max_tokens, progress
        self.clock = time.monotonic()
        self.ctx: RunContext | None = None

    def say(self, at_round: int, agent: str, step: str) -> None:
        if self.progress:
            self.progress(Progress(at_round, agent, step, self.ctx.tokens_used if self.ctx else 0, self.max_tokens,
                                   round(time.monotonic() - self.clock, 1)))


@dataclass(frozen=True)
class Team:
    roles: list[Role]
    bus: Bus


def _team(request: ResearchRequest, settings: Settings) -> Team:
    roles = discover(request.roles_dirs)
    unknown = sorted(set(settings.role_models) - {r.name for r in roles} - {SUMMARIZER.name})
    if unknown:  # a typo would otherwise run every role on the default model without a word
        raise ConfigError(f"--role-model names no role of this team: {', '.join(unknown)} (roles: "
                          f"{', '.join([r.name for r in roles] + [SUMMARIZER.name])})")
    return Team(roles, bus_for(roles))


@dataclass(frozen=True)
class Thread:
    """The run's graph on its checkpointed thread, and the checkpoint the run begins from."""

    roles: list[Role]  # the team, offered the tools of the run's MCP servers
    graph: Any
    config: dict[str, Any]
    start: StateSnapshot
    had_checkpoints: bool
    mcp: McpServers

    @property
    def resumed(self) -> bool:
        return "charter" in self.start.values


def _open_thread(launch: RunLaunch, team: Team, stack: contextlib.ExitStack) -> Thread:
    settings, run_dir, thread_id = launch.settings, launch.run_dir, launch.record.thread_id
    if not settings.database_url:  # the server backend keeps no store in the data directory
        stack.enter_context(data_dir_in_use(settings.data_dir))
    # Checkpoints in the run directory, or in PostgreSQL with --database-url, where a
    # worker on another machine can resume the run (briefroom/server/checkpoint_pg.py).
    had_checkpoints = bool(settings.database_url) or (run_dir / "checkpoints.sqlite").is_file()
    saver = open_checkpoints(settings.database_url or run_dir / "checkpoints.sqlite")
    stack.callback(saver.conn.close)
    # MCP servers start before the graph: the roles they serve are offered their tools
    mcp = stack.enter_context(open_servers(settings.mcp_config))
    roles = mcp.offer_to(team.roles)
    graph = build_graph(roles, team.bus, checkpointer=saver, parallel=settings.parallel)
    config = {"configurable": {"thread_id": thread_id}, "recursion_limit": 60 * settings.rounds,
              "max_concurrency": settings.parallel}
    start = graph.get_state(config)
    if "charter" not in start.values:
        # The first checkpoint holds only the pending input: a run killed there has not
        # started; it starts over in place, on a clean thread.
        saver.delete_thread(thread_id)
    return Thread(roles, graph, config, start, had_checkpoints, mcp)


def _reopen_log(launch: RunLaunch, thread: Thread) -> tuple[RunLog, MovedAside]:
    """The run log as far as the checkpoint wrote it; what came after goes aside."""
    keep = int(thread.start.values.get("ledger", {}).get("log_seq", 0)) if thread.resumed else 0
    return RunLog.reopen(launch.run_dir / "run.jsonl", keep)


def _charter(launch: RunLaunch, thread: Thread, log: RunLog, moved: MovedAside,
             say: Callable[[int, str, str], None]) -> Charter:
    """A resumed run's charter is its checkpoint's; a new run (or one that stopped
    before its first checkpoint, starting over in place) makes one."""
    if thread.resumed:
        return thread.start.values["charter"]
    if moved.lines and not thread.had_checkpoints:  # work was logged, its checkpoints are gone: say so
        # (killed before the first step's checkpoint, a run has not started: it starts over quietly)
        notice = (f"starting over (checkpoints.sqlite is missing); the earlier log ({moved.lines} events) "
                  "is in run.interrupted.jsonl")
        say(0, "resume", notice)
        log.event("run_restart", reason=notice, moved_lines=moved.lines)
    charter = make_charter(launch.request, launch.settings, thread.roles)
    (launch.run_dir / "charter.json").write_text(charter.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return charter


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


def _compose(launch: RunLaunch, team: Team, thread: Thread, log: RunLog, moved: MovedAside, charter: Charter,
             stack: contextlib.ExitStack, watch: _Watch) -> RunParts:
    """Stores, models and the run context, in the order their log lines come."""
    index, stats, seconds = _open_corpus(launch, stack, watch.say)
    memory = _open_memory(launch, index, stack)
    opening = _begin(launch, thread, log, moved, charter, stats, seconds, memory, index)
    recorder = Cassette() if launch.request.record else None
    names = [r.name for r in thread.roles] + [SUMMARIZER.name]
    pool = _model_pool(launch.settings, launch.request, names, launch.run_dir, stack, log, watch.say, recorder)
    store = ArtifactStore(launch.run_dir / "artifacts")
    tools = _tools(launch, index, store, memory, thread.mcp, stack, team.bus.roles)
    ctx = watch.ctx = _run_context(launch, team.bus, pool, log, tools, store, index, watch.say, opening.memory_items)
    graph_input, reviewer = _graph_input(launch, thread, ctx, charter, opening, team.bus)
    return RunParts(launch, thread, log, pool, ctx, memory, recorder, graph_input, reviewer)


def _open_corpus(launch: RunLaunch, stack: contextlib.ExitStack,
                 say: Callable[[int, str, str], None]) -> tuple[CorpusIndex, SyncStats, float]:
    started = time.perf_counter()
    index = open_index(launch.settings)
    stack.callback(index.close)
    stats = _index_corpus(index, launch.request.corpus, say, web=launch.settings.web)
    return index, stats, round(time.perf_counter() - started, 3)


def _open_memory(launch: RunLaunch, index: CorpusIndex, stack: contextlib.ExitStack) -> MemoryBackend | None:
    if launch.namespace is None:
        return None
    memory = _memory_store(launch.settings, index.embedder)
    stack.callback(memory.close)
    # The gates' injection detector loads a 2 s model: load it while the run works.
    threading.Thread(target=injection.preload, name="preload-injection-detector", daemon=True).start()
    return memory


@dataclass(frozen=True)
class Opening:
    """What a run starts with besides its charter: the memory items its Planner is
    given, and (a new run) the verified facts memory holds, with their sources."""

    memory_items: list[Item]
    facts: list[Fact] = field(default_factory=list)
    sources: dict[str, SourceRecord] = field(default_factory=dict)


def _begin(launch: RunLaunch, thread: Thread, log: RunLog, moved: MovedAside, charter: Charter, stats: SyncStats,
           index_seconds: float, memory: MemoryBackend | None, index: CorpusIndex) -> Opening:
    """The log's first lines and what memory gives the run. A resumed run reads its
    memory items from its run directory, not the store (which may have changed since),
    so its prompts are the ones it would have had."""
    run_dir, record = launch.run_dir, launch.record
    if thread.resumed:
        # How the previous attempt ended, in one line; its events are in run.interrupted.jsonl.
        log.write(RunResume(round=thread.start.values.get("round"), next=list(thread.start.next),
                            moved_lines=moved.lines, after=moved.stop or ResumedAfter(event="killed"),
                            documents=stats.documents, settings=record.settings))
        return Opening(_load_memory_items(run_dir))
    log.event("run_start", question=charter.goal, rounds=charter.max_rounds, roles=[r.name for r in thread.roles],
              corpus=[str(p) for p in launch.request.corpus])
    log.event("index", documents=stats.documents, embedded_chunks=stats.embedded_chunks,
              reused_documents=stats.reused_documents, seconds=index_seconds,
              skipped=[{"path": s.path, "reason": s.reason} for s in stats.skipped])
    items: list[Item] = []
    used_skills: list[str] = []
    recalled: list[Recalled] = []
    namespace = launch.namespace
    if memory is not None and namespace is not None:
        readers = ", ".join(r.name for r in thread.roles if r.reads_memory)
        items, used_skills, recalled = read_memory(memory, namespace, launch.settings, charter.goal, log, readers)
    _save_memory_items(run_dir, items)
    runs.update(run_dir, record, used_skills=used_skills)
    facts, sources = remembered_facts(recalled, index)
    return Opening(items, facts, sources)


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
                 store: ArtifactStore, index: CorpusIndex, say: Callable[[int, str, str], None],
                 memory_items: list[Item]) -> RunContext:
    settings = launch.settings
    return RunContext(bus=bus, models=pool, counter=_token_counter(settings, launch.request, pool), log=log,
                      tools=tools, artifacts=store, index=index, progress=say, context_strategy=settings.context,
                      max_tokens=settings.max_tokens, shares=settings.context_shares,
                      floors=settings.context_floors, memory_items=memory_items,
                      memory_threshold=settings.recall_threshold, fact_threshold=settings.fact_threshold,
                      parallel=settings.parallel, compaction=Compaction(*settings.compact_at),
                      report=ReportSpec(kind=settings.report_kind, words=settings.words, audience=settings.audience),
                      transcript_path=launch.run_dir / TRANSCRIPT_FILE)


def _graph_input(launch: RunLaunch, thread: Thread, ctx: RunContext, charter: Charter, opening: Opening,
                 bus: Bus) -> tuple[Any, Reviewer | None]:
    """The graph's input and who answers the run's questions: a new run's initial
    state; for a resumed one none, with its counters restored from the checkpoint's
    ledger (and a replay's cassette wound to the same place)."""
    review, reviewer = _review_of(launch.request, thread.start.values.get("review") if thread.resumed else None)
    if thread.resumed:
        ctx.restore(thread.start.values.get("ledger", {}))
        if launch.request.cassette is not None:
            launch.request.cassette.seek(ctx.ledger()["model_calls"])
        return None, reviewer
    return initial_state(charter, bus.address("plan"), opening.facts, opening.sources, log_seq=ctx.log.seq,
                         review=review), reviewer


def _drive(parts: RunParts, hooks: RunHooks, stop_after_round: int | None) -> RunResult:
    """Run the graph, then pause the run (on purpose, or for its user) or finish it."""
    launch = parts.launch
    run_dir, record = launch.run_dir, launch.record
    snapshot = _stream(parts.thread.graph, parts.graph_input, parts.thread.config, parts.ctx, run_dir, record,
                       stop_after_round, parts.reviewer, hooks.on_update)
    state: AgentState = snapshot.values  # type: ignore[assignment]
    if snapshot.next:  # the checkpoint holds everything
        asked = pending_request(snapshot)
        parts.log.event("run_paused", round=record.round, next=list(snapshot.next),
                        **({"waiting_for": asked.kind} if asked else {}))
        runs.update(run_dir, record, status="paused")
        return RunResult(run_dir, None, state, parts.pool.labels, parts.log.events, status="paused",
                         waiting_for=asked)
    result = _finish(parts, state)
    runs.update(run_dir, record, status="done", round=int(state.get("round", record.round)))
    return result


def _record_ending(run_dir: Path, record: runs.RunRecord, log: RunLog | None, exc: BaseException) -> None:
    """Write how the run ended (run.log, then run.json) before `exc` goes on: every way
    out (an error, Ctrl-C, a cancel, a lost database) leaves a final status and its reason."""
    status, reason, resumable = runs.ending_of(exc)
    if log is not None:
        with contextlib.suppress(Exception):  # a full disk must not hide the status below
            if status == "interrupted":
                log.event("interrupted", round=record.round, resume=runs.resume_command(run_dir))
            else:
                log.event("error", kind=type(exc).__name__, message=str(exc)[:1000],
                          traceback=traceback.format_exc(limit=12)[-4000:])
    runs.update(run_dir, record, status=status, error=redact_text(reason), resumable=resumable)


def _index_corpus(index: CorpusIndex, corpus: list[Path], say: Callable[[int, str, str], None],
                  web: bool = False) -> SyncStats:
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


def _token_counter(settings: Settings, request: ResearchRequest, pool: ModelPool) -> TokenCounter:
    """Counts in the tokens of the model that reads the prompts: a llama.cpp server's own
    tokenizer when one serves the run, the counts a recording kept when it is replayed,
    and the local encoding for OpenAI's models (theirs) and servers that cannot tell."""
    recorded = request.scenario / COUNTS_FILE if request.scenario is not None else None
    if request.cassette is not None and recorded is not None and recorded.is_file():
        return RecordedTokenCounter(recorded)
    served = [h for h in pool.handles.values()
              if h.provider in ("embedded", "openai") and h.profile is not None and h.profile.kind == "llama.cpp"]
    models = {h.model_name for h in served}
    if served and len(models) == 1 and len({h.profile.root for h in served if h.profile}) == 1:
        return ServedTokenCounter(served[0].profile.root, models.pop())  # type: ignore[union-attr]
    return TokenCounter(encoding_for_model(settings.model or ""))


def _model_pool(settings: Settings, request: ResearchRequest, names: list[str], run_dir: Path,
                stack: contextlib.ExitStack, log: RunLog, say: Callable[[int, str, str], None],
                recorder: Cassette | None) -> ModelPool:
    """One handle per role: the caller's, a recording's, or built from the settings
    (starting the embedded server, closed with the run, when a role needs it)."""
    embedded_url, slots, profile = None, 0, None
    if request.models is None and request.cassette is None and needs_embedded_server(settings, names):
        say(0, "model", "starting the embedded llama.cpp server")
        server = stack.enter_context(EmbeddedServer(model_path=embedded_model_file(settings, names),
                                                    log_path=run_dir / "llama-server.log", threads=settings.threads,
                                                    slots=embedded_slots(names, settings.parallel)))
        embedded_url, slots, profile = server.base_url, server.slots, server.profile
        log.event("model_server", base_url=embedded_url, model_path=server.model_path.name, threads=server.threads,
                  batch_threads=server.batch_threads, free_cores=server.free_cores, slots=server.slots)
        say(0, "model", f"llama.cpp: {server.threads} thread(s) generating, {server.batch_threads} reading prompts"
            + (f" ({server.free_cores:.1f} core(s) free)" if server.free_cores is not None else "")
            + f", {server.slots} slot(s)")
    pool = request.models or build_pool(settings, names, embedded_base_url=embedded_url, embedded_slots=slots,
                                        embedded_profile=profile, cassette=request.cassette, recorder=recorder)
    for role, recorded in (request.replay_handles or {}).items():  # a replay answers as the recording did
        if role in pool.handles:
            handle = pool.handles[role]
            handle.label, handle.tool_mode = recorded.label, recorded.tool_mode
            handle.structured_mode, handle.context_window = recorded.structured_mode, recorded.context_window
    log.event("models", handles={n: {"provider": h.provider, "model": h.model_name, "label": h.label}
                                 for n, h in pool.handles.items()})
    return pool


def _review_of(request: ResearchRequest, state_review: Any) -> tuple[ReviewOptions, Reviewer | None]:
    """What the run asks its user, and who answers: a replay answers as its recording
    did (after the answers its checkpoint already holds), any other run its caller."""
    recorded = load_recorded_review(request.scenario) \
        if request.cassette is not None and request.scenario is not None else None
    if recorded is None:
        return request.review, request.reviewer
    return recorded.options, RecordedAnswers(recorded.answers[len((state_review or {}).get("answers", [])):])


def _stream(graph: Any, graph_input: Any, config: dict[str, Any], ctx: RunContext, run_dir: Path,
            record: runs.RunRecord, stop_after_round: int | None, reviewer: Reviewer | None = None,
            on_update: UpdateFn | None = None) -> Any:
    """Run the graph to its end (or to the end of round `stop_after_round`), saving the
    round reached in run.json as rounds end; returns the last snapshot. A question for
    the user (an interrupt, `review.py`) goes to `reviewer`; the run goes on with its
    answer, or stays paused at the question when there is none."""
    pause = [ROUND_END] if stop_after_round is not None else None
    while True:
        if graph_input is None:  # resuming: the checkpoint may be waiting on a question
            asked = pending_request(graph.get_state(config))
            if asked is not None:
                answer = reviewer(asked) if reviewer is not None else None
                if answer is None:
                    return graph.get_state(config)
                graph_input = Command(resume=answer)
        for update in graph.stream(graph_input, config=config, context=ctx, durability="sync",
                                   stream_mode="updates", interrupt_after=pause):
            if on_update is not None:
                on_update(update)
            if isinstance(update, dict) and update.get(ROUND_END):
                values = graph.get_state(config).values
                record.round = int(values["round"]) - (0 if values.get("done") else 1)
                runs.save(run_dir, record)
        snapshot = graph.get_state(config)
        _save_charter(run_dir, snapshot.values.get("charter"))
        if pending_request(snapshot) is not None:
            graph_input = None  # the user is asked at the top of the loop
            continue
        if not snapshot.next or stop_after_round is None or record.round >= stop_after_round:
            return snapshot
        graph_input = None  # a round ended before the one to pause after: go on


def _save_charter(run_dir: Path, charter: Charter | None) -> None:
    """charter.json as the run now holds it: the user's answers add constraints."""
    path = run_dir / "charter.json"
    text = charter.model_dump_json(indent=2) + "\n" if charter is not None else None
    if text is not None and (not path.is_file() or path.read_text(encoding="utf-8") != text):
        write_atomic(path, text)


def _finish(parts: RunParts, state: AgentState) -> RunResult:
    """After the graph: report files, memory gates, the scenario of a recording. Each
    step gives the same result if it runs again (a resume after a crash in here)."""
    launch, ctx, log, pool, memory = parts.launch, parts.ctx, parts.log, parts.pool, parts.memory
    run_dir, record, settings, request = launch.run_dir, launch.record, launch.settings, launch.request
    namespace, recorder = launch.namespace, parts.recorder
    report = state.get("report")
    if report is None:
        raise BriefroomError("the run ended without a report (see run.jsonl)")
    markdown, web = report.markdown, dict[str, dict[str, str]]()
    if settings.web:  # web sources: cited by URL, with the time each page was retrieved
        markdown, web = cite_web(settings.data_dir, markdown, list(state.get("sources", {})))
    write_atomic(run_dir / "report.md", redact_text(markdown))
    all_sources = {sid: rec.model_dump(mode="json") for sid, rec in state.get("sources", {}).items()}
    # claims (each cited sentence -> source -> passage span) and kinds (each source's kind and date)
    extras = sources_extras(markdown, state.get("sources", {}), list(report.cited_sources))
    write_atomic(run_dir / "sources.json", json.dumps({"cited": list(report.cited_sources), "sources": all_sources,
                                                       **({"web": web} if web else {}), **extras},
                                                       indent=2, ensure_ascii=False) + "\n")
    if memory is not None and namespace is not None:
        started = time.perf_counter()
        decisions = apply_gates(memory, namespace, run_dir.name, state, [t for _, t in ctx.transcript],
                                record.used_skills, log, TeamRoles.of(ctx.bus))
        log.event("memory_gates", seconds=round(time.perf_counter() - started, 4),
                  written=sum(d.accepted for d in decisions), rejected=sum(not d.accepted for d in decisions))
    log.event("run_end", accepted=report.accepted, repairs=len(report.repairs), rounds=state.get("round"),
              cited=list(report.cited_sources), tokens_used=ctx.tokens_used, budget=settings.max_tokens)
    if recorder is not None and request.record is not None:
        from briefroom.scenario import RecordedHandle, write_scenario

        handles = {role: RecordedHandle(label=h.label, tool_mode=h.tool_mode, structured_mode=h.structured_mode,
                                        context_window=h.context_window) for role, h in pool.handles.items()}
        # The scenario keeps the charter the run started from; the user's answers, which
        # added to it, are kept apart (review.json), and its replay gives them again.
        started_with = state["charter"].model_copy(update={"constraints": tuple(request.constraints)})
        write_scenario(request.record, request, settings, started_with, recorder, report.markdown,
                       label=" / ".join(sorted(pool.labels)), handles=handles)
        review = state.get("review") or {}
        save_recorded_review(request.record, ReviewOptions(plan=bool(review.get("plan")),
                                                           clarify=bool(review.get("clarify"))),
                             review.get("answers", []))
        if isinstance(ctx.counter, ServedTokenCounter):  # its replay builds the prompts with these counts
            ctx.counter.save(request.record)
    return RunResult(run_dir, markdown, state, pool.labels, log.events, tokens_used=ctx.tokens_used,
                     budget=settings.max_tokens)


@contextlib.contextmanager
def _exclusive(run_dir: Path):
    """One process per run directory: a second `resume` of a run still going fails at
    once instead of writing into the same log and checkpoint."""
    import fcntl

    with open(run_dir / "run.lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"{run_dir} is in use by another briefroom process") from None
        yield


DATA_DIR_LOCK = "briefroom.lock"


@dataclass
class _Hold:
    lock: threading.Lock = field(default_factory=threading.Lock)
    count: int = 0
    release: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)


_HOLDS: dict[Path, _Hold] = {}
_HOLDS_LOCK = threading.Lock()


@contextlib.contextmanager
def data_dir_in_use(data_dir: Path, *, wait: float | None = None) -> Iterator[None]:
    """One process at a time on a data directory: chromadb's embedded client and the
    SQLite memory are not safe across processes (measured: a fresh reader missed 26% of
    another process's rows, and once hung). A second process waits up to `wait` seconds
    (BRIEFROOM_DATA_DIR_WAIT, default 60) for the first to finish, then stops with an
    error naming the holder; the server backend has no such limit.

    Runs within one process share the hold (the LangGraph server runs served runs side
    by side): in-process, chromadb's client is one per folder, and SQLite's busy timeout
    orders the writers. The file lock goes when the last of them ends."""
    with _HOLDS_LOCK:
        hold = _HOLDS.setdefault(data_dir.resolve(), _Hold())
    with hold.lock:
        if hold.count == 0:
            hold.release.enter_context(_data_dir_lock(data_dir, wait))
        hold.count += 1
    try:
        yield
    finally:
        with hold.lock:
            hold.count -= 1
            if hold.count == 0:
                hold.release.close()


@contextlib.contextmanager
def _data_dir_lock(data_dir: Path, wait: float | None) -> Iterator[None]:
    import fcntl
    import time as clock

    wait = float(os.environ.get("BRIEFROOM_DATA_DIR_WAIT", 60)) if wait is None else wait
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / DATA_DIR_LOCK, "a+") as fh:
        deadline = clock.monotonic() + wait
        told = False
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip() or "another process"
                if clock.monotonic() >= deadline:
                    raise ConfigError(f"data directory {data_dir} is in use by {holder}; wait for it to finish or "
                                      "use another --data-dir (the embedded stores are one process at a time)"
                                      ) from None
                if not told:  # said once, on stderr, where progress goes
                    sys.stderr.write(f"waiting for {holder} to release the data directory {data_dir}\n")
                    told = True
                clock.sleep(0.2)
        fh.seek(0)
        fh.truncate()
        fh.write(f"briefroom pid {os.getpid()}")
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()


MEMORY_ITEMS_FILE = "memory.json"


def _save_memory_items(run_dir: Path, items: list[Item]) -> None:
    """What the Planner was given from memory at the start: a resumed run reads it from
    here, not from the store (which may have changed), so its prompts are the same."""
    write_atomic(run_dir / MEMORY_ITEMS_FILE, json.dumps([{**asdict(i), "priority": i.priority.value} for i in items],
                                                          ensure_ascii=False, indent=1) + "\n")


def _load_memory_items(run_dir: Path) -> list[Item]:
    path = run_dir / MEMORY_ITEMS_FILE
    if not path.is_file():
        return []
    return [Item(**{**raw, "priority": Priority(raw["priority"])}) for raw in json.loads(path.read_text("utf-8"))]
