"""briefroom's research graph for the LangGraph API server (`langgraph dev`).

`langgraph.json` at the repository root names `make_graph`, a graph factory the
server calls whenever it needs the graph. What it returns is a small graph with one
node, `research`, whose input is the run's question and corpus and whose context
(`ServeContext`, sent by the client as the run's `context`) says which model and budget
to use, or which served run to `resume`. The node checks both, then hands the run to
briefroom.run's `execute_run`, which builds and finishes every run: a served run has what a
`briefroom research` run has (run directory, long-term memory, checkpoints on its own
thread) and can be resumed like one. The server cannot pass a `RunContext` itself (a
run's context arrives as JSON), and a `RunContext` holds live objects (index, model
handles, log) that cannot be checkpointed, so it is built and closed within the node.

The server is a network service, so every field a client sends is hostile input. The
server, not the client, decides what a run may touch; its operator says so in the
environment `langgraph dev` starts with (read once, when the server imports this
module; `ServePolicy`):

- `BRIEFROOM_SERVE_CORPORA`: folders under which a client's corpus may lie, separated by
  `os.pathsep` (":"). Unset, the server reads no corpus and refuses every run. A client's
  folder is normalised (`..`) before anything on disk is touched, then resolved
  (symlinks) and checked again; a relative folder is taken under the first of them; a
  link inside the corpus leading out of them stops the run.
- `BRIEFROOM_SERVE_RUNS_DIR`: where run directories are made (default `runs` under the
  server's working folder). The server names each one: its time, the question's slug
  and a random suffix.
- `BRIEFROOM_SERVE_ROLES_DIRS`: folders of extra role files loaded for every served run
  (default none: the built-in roles). Role files are Python, so no client names them.
- `BRIEFROOM_MCP_CONFIG`: the MCP servers file (`--mcp-config`'s) whose tools every
  served run offers its roles; checked at start. MCP servers are processes and URLs the
  server starts or calls, so only its operator names them, never a client.
- `BRIEFROOM_DATA_DIR`, `BRIEFROOM_MODEL`, `OPENAI_BASE_URL`, ...: as for the CLI.

A client chooses only the model by name (`test`, `embedded`, or a model on the
endpoint; never a `.gguf` file), the rounds, the token budget, the parallel searchers,
and whether the run asks it first (`review_plan`, `clarify`: the run pauses with an
interrupt the client answers with `Command(resume=...)`, `server/review_node.py`).
Setting `runs_dir`, `roles_dirs`, `data_dir` or `mcp_config` in the context is refused
with a message naming the server's setting. Inputs are checked by `run_request.RunInput`,
the CLI's checks; a refusal is one line.

Browsers: `langgraph.json` turns CORS off (`http.cors.allow_origins` is empty), so a
web page open while the server runs cannot read its answers; and `http_app`, mounted
there as `http.app`, refuses (403) any request a browser sends from another origin, so
such a page cannot start runs blind either (a form or a `text/plain` POST needs no CORS
preflight). To let LangGraph Studio in, start the server with
`BRIEFROOM_SERVE_ORIGINS=https://smith.langchain.com` (origins, comma-separated) and
`CORS_CONFIG='{"allow_origins": ["https://smith.langchain.com"]}'`.

A client streaming with `subgraphs=True` sees every role's node update (`planner`,
`searcher`, `critic`, `writer`, `round_end`) as it happens, as a subgraph's; the run's
progress lines arrive as `custom` events. The final state holds the report, its
citation map and the sources. A run that fails ends with an `error` event in its
run.jsonl, `failed` in run.json, and its reason in the client's error (`RunFailed`).

Served runs use the long-term memory of the server's data directory, in the namespace
of the server's environment (`BRIEFROOM_USER`, `BRIEFROOM_SESSION`), which no client
chooses. One that stopped goes on from its last checkpoint with `briefroom resume
<run_dir>`, or when a client sends `context={"resume": "<run name>"}` (a name under
the runs folder, never a path; its corpus and role folders must still be allowed; the
context may change its model and token budget). `briefroom inspect` and `briefroom
runs show` read served run directories as any other.
"""

from __future__ import annotations

import functools
import os
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Protocol, TypedDict

from langgraph.config import get_stream_writer
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError

from briefroom.errors import BriefroomError, ConfigError
from briefroom.review import GivenAnswer, ReviewOptions
from briefroom.run_request import RunInput, one_line

# re-exported: the server, the docs and the tests name them here
from briefroom.server.origins import ORIGINS_ENV as ORIGINS_ENV
from briefroom.server.origins import SameOriginOnly as SameOriginOnly
from briefroom.server.origins import _http_app
from briefroom.server.review_node import (
    REVIEW_NODE,
    ReviewFields,
    answered,
    given_answer,
    next_after_research,
    paused_at,
    review,
)

GRAPH_ID = "research"
CORPORA_ENV = "BRIEFROOM_SERVE_CORPORA"
RUNS_DIR_ENV = "BRIEFROOM_SERVE_RUNS_DIR"
ROLES_DIRS_ENV = "BRIEFROOM_SERVE_ROLES_DIRS"
MCP_CONFIG_ENV = "BRIEFROOM_MCP_CONFIG"
MAX_ERROR_CHARS = 1000


class ServeContext(TypedDict, total=False):
    """What a client may send as a run's `context` (the server's JSON schema of it).
    `ServeOptions` checks it; the last four are listed only so that a client setting
    them is told they are the server's, rather than having them dropped in silence."""

    model: str  # 'test' (deterministic, no model), 'embedded', or a model name on the endpoint
    rounds: int
    max_tokens: int
    parallel: int
    resume: str  # a served run to go on with, by its run directory's name (the input is then not read)
    review_plan: bool  # pause at the plan for the client's review (an interrupt)
    clarify: bool  # let the Planner first ask up to 3 clarifying questions (an interrupt)
    runs_dir: str  # refused: BRIEFROOM_SERVE_RUNS_DIR
    roles_dirs: list[str]  # refused: BRIEFROOM_SERVE_ROLES_DIRS
    data_dir: str  # refused: BRIEFROOM_DATA_DIR
    mcp_config: str  # refused: BRIEFROOM_MCP_CONFIG


def _refused(setting: str) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if value not in (None, [], ""):
            raise ValueError(f"the server decides this (its operator sets {setting}); a client cannot")
        return None
    return check


def _model_name(value: Any) -> Any:
    # A `.gguf` name is a file the embedded server would load from the server's disk.
    if isinstance(value, str) and (value.lower().endswith(".gguf") or not _MODEL_NAME.fullmatch(value)):
        raise ValueError("a model name ('test', 'embedded' or a model on the endpoint), not a path or file")
    return value


_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}")


def _run_name(value: Any) -> Any:
    # A name, never a path: the run directory is looked up under the server's runs dir.
    if isinstance(value, str) and (not _RUN_NAME.fullmatch(value) or ".." in value):
        raise ValueError("the name of a served run (the last part of its run_dir), not a path")
    return value


_RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


class ServeOptions(BaseModel):
    """A run's context, checked. Keys the server mirrors into it (thread_id, ...) are
    ignored; the server itself drops keys `ServeContext` does not list."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    model: Annotated[str | None, Strict(), BeforeValidator(_model_name)] = None
    rounds: Annotated[int, Strict(), Field(ge=1, le=20)] = 3  # the CLI's bounds
    max_tokens: Annotated[int | None, Strict(), Field(ge=1000)] = None
    parallel: Annotated[int, Strict(), Field(ge=1, le=8)] = 1
    resume: Annotated[str | None, Strict(), BeforeValidator(_run_name)] = None
    review_plan: Annotated[bool, Strict()] = False
    clarify: Annotated[bool, Strict()] = False
    runs_dir: Annotated[None, BeforeValidator(_refused(RUNS_DIR_ENV))] = None
    roles_dirs: Annotated[None, BeforeValidator(_refused(ROLES_DIRS_ENV))] = None
    data_dir: Annotated[None, BeforeValidator(_refused("BRIEFROOM_DATA_DIR"))] = None
    mcp_config: Annotated[None, BeforeValidator(_refused(MCP_CONFIG_ENV))] = None


def _within(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _folders(value: str | None, cwd: Path) -> tuple[Path, ...]:
    return tuple((cwd / Path(p).expanduser()).resolve() for p in (value or "").split(os.pathsep) if p.strip())


@dataclass(frozen=True)
class ServePolicy:
    """What served runs may touch, set by the server's operator (all paths resolved)."""

    corpora: tuple[Path, ...]
    runs_dir: Path
    roles_dirs: tuple[Path, ...] = ()
    mcp_config: Path | None = None  # the operator's MCP servers file, offered to every served run

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> ServePolicy:
        env = os.environ if env is None else env
        cwd = cwd or Path.cwd()
        mcp = env.get(MCP_CONFIG_ENV)
        policy = cls(corpora=_folders(env.get(CORPORA_ENV), cwd),
                     runs_dir=(cwd / Path(env.get(RUNS_DIR_ENV) or "runs").expanduser()).resolve(),
                     roles_dirs=_folders(env.get(ROLES_DIRS_ENV), cwd),
                     mcp_config=(cwd / Path(mcp).expanduser()).resolve() if mcp else None)
        # An operator's typo should stop the server at start, not each run later.
        for name, folders in ((CORPORA_ENV, policy.corpora), (ROLES_DIRS_ENV, policy.roles_dirs)):
            missing = [str(f) for f in folders if not f.is_dir()]
            if missing:
                raise ConfigError(f"{name}: not a folder: {', '.join(missing)}")
        if policy.mcp_config is not None:
            from briefroom.mcp.config import load_mcp_config

            try:
                load_mcp_config(policy.mcp_config)
            except BriefroomError as exc:
                raise ConfigError(f"{MCP_CONFIG_ENV}: {exc}") from None
        return policy

    def corpus_folder(self, asked: Path) -> Path:
        """The folder a client named, resolved, or a ConfigError if it lies outside the
        allow-list. Nothing outside it is touched, not even to see whether it exists."""
        if not self.corpora:
            raise ConfigError(f"this server reads no corpus folders (its operator sets {CORPORA_ENV})")
        # `..` first, on the text alone: a folder outside is refused before any disk access
        lexical = Path(os.path.normpath(self.corpora[0] / asked.expanduser()))
        if not _within(lexical, self.corpora):
            raise ConfigError(f"corpus folder outside the folders this server may read: {asked}")
        folder = lexical.resolve()  # then symlinks, which may lead anywhere
        if not _within(folder, self.corpora):
            raise ConfigError(f"corpus folder leads outside the folders this server may read: {asked}")
        if not folder.is_dir():
            raise ConfigError(f"corpus folder not found on the server: {asked}")
        self._no_links_out(folder, asked)
        return folder

    def served_run(self, name: str) -> Path:
        """The directory of the served run `name`, to resume it, or a ConfigError. Its
        run.json is the server's own; the corpus and role folders it names must still
        be allowed (the operator may have narrowed the lists since)."""
        from briefroom import runs

        run_dir = self.runs_dir / name
        if run_dir.is_symlink() or not (run_dir / runs.RECORD_FILE).is_file():
            raise ConfigError(f"no served run is named {name}")
        record = runs.load(run_dir)
        if record.recording or record.scenario:
            raise ConfigError(f"run {name} is a recording or a replay, which this server does not resume")
        if record.status == "done":
            raise ConfigError(f"run {name} is already complete")
        for folder in record.corpus:
            self.corpus_folder(Path(folder))
        if any(Path(folder) not in self.roles_dirs for folder in record.roles_dirs):
            raise ConfigError(f"run {name} loads role files from a folder this server no longer allows "
                              f"({ROLES_DIRS_ENV})")
        mcp = record.settings.get("mcp_config")
        if (Path(mcp) if mcp else None) != self.mcp_config:  # the operator changed or removed the file since
            raise ConfigError(f"run {name} takes MCP tools from a file this server no longer configures "
                              f"({MCP_CONFIG_ENV})")
        return run_dir

    def _no_links_out(self, folder: Path, asked: Path) -> None:
        # The corpus loader opens every file under the folder and follows a file's
        # symlink: a link to /etc/passwd would be read and quoted to the client.
        for parent, dirs, files in os.walk(folder):  # does not descend into linked folders
            for name in dirs + files:
                path = Path(parent, name)
                if path.is_symlink() and not _within(path.resolve(), self.corpora):
                    raise ConfigError(f"corpus folder {asked} holds a link leading outside the folders this "
                                      f"server may read: {path.relative_to(folder)}")


@functools.cache
def server_policy() -> ServePolicy:
    """The policy from the environment the server started with, read once."""
    return ServePolicy.from_env()


class ResearchInput(TypedDict, total=False):
    question: str
    corpus: list[str]  # folders on the server's machine, inside BRIEFROOM_SERVE_CORPORA
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


class ServeState(ResearchInput, ResearchOutput, ReviewFields):
    pass


class RunFailed(ValueError):
    """A run that did not start or did not finish, with its reason in one line. The
    server shows a client the message of a ValueError, and only "An internal error
    occurred" for an exception type it does not know."""


@dataclass(frozen=True)
class CheckedRun:
    """A served run's input and options once they passed every check."""

    ask: RunInput
    corpus: list[Path]  # resolved, inside the policy's corpora
    options: ServeOptions


@dataclass(frozen=True)
class CheckedResume:
    """A served run a client asked to go on with, once it passed every check."""

    run_dir: Path  # under the policy's runs_dir, its corpus and role folders still allowed
    overrides: dict[str, Any]  # what the client may change: the model and the token budget
    answer: GivenAnswer | None = None  # the client's answer to the question the run paused at


def check_run(state: Mapping[str, Any], context: Any, policy: ServePolicy) -> CheckedRun | CheckedResume:
    """The run a client asked for, or a ConfigError saying in one line why not. A
    context naming a run to `resume` asks to go on with it: the input is not read (on a
    thread the server keeps, it still holds an earlier run's question)."""
    try:
        options = ServeOptions.model_validate(context if context is not None else {})
        if options.resume is not None:
            return check_resume(options, policy)
        ask = RunInput.model_validate({key: state[key] for key in ResearchInput.__annotations__ if key in state})
    except ValidationError as exc:
        raise ConfigError(f"invalid run: {one_line(exc)}") from None
    if not ask.corpus:
        raise ConfigError("no corpus: give 'corpus', a list of folders on the server's machine")
    return CheckedRun(ask, [policy.corpus_folder(p) for p in ask.corpus], options)


def check_resume(options: ServeOptions, policy: ServePolicy) -> CheckedResume:
    """A resumed run may change its model and its token budget (what stopped it may have
    been either), not its shape."""
    assert options.resume is not None
    kept = sorted(options.model_fields_set & {"rounds", "parallel", "review_plan", "clarify"})
    if kept:
        raise ConfigError(f"invalid run: {', '.join(kept)}: a resumed run keeps its own")
    return CheckedResume(policy.served_run(options.resume),
                         {"model": options.model, "max_tokens": options.max_tokens})


def _reason(exc: BaseException) -> str:
    from briefroom.protocol.redaction import redact_text

    text = " ".join(str(exc).split())  # one line, whatever the exception's message held
    return redact_text(text if isinstance(exc, BriefroomError) else f"{type(exc).__name__}: {text}")[:MAX_ERROR_CHARS]


class ServedNode(Protocol):
    def __call__(self, state: ServeState, *, runtime: Runtime[ServeContext]) -> ServeState: ...


def research_node(policy: ServePolicy) -> ServedNode:
    def research(state: ServeState, *, runtime: Runtime[ServeContext]) -> ServeState:
        """One research run, new or resumed, built and finished as `briefroom research`'s;
        after the `review` node, the paused run, resumed with its client's answer."""
        try:
            answer = given_answer(state)
            if answer is not None:  # the thread's state is the client's: the run's name is checked as a resume's
                run = CheckedResume(policy.served_run(str(state.get("served_run"))), {}, answer)
                return _research(run, policy)
            return _research(check_run(state, runtime.context, policy), policy)
        except GraphBubbleUp:  # LangGraph's own control flow (interrupts), not a failure
            raise
        except Exception as exc:  # every failure reaches the client with its reason
            raise RunFailed(_reason(exc)) from exc
    return research


def _review(state: ServeState) -> Command:
    """The `review` node (`server/review_node.py`), its failures reaching the client as a run's do."""
    try:
        return review(state)
    except GraphBubbleUp:  # the interrupt itself
        raise
    except Exception as exc:
        raise RunFailed(_reason(exc)) from exc


def _research(run: CheckedRun | CheckedResume, policy: ServePolicy) -> ServeState:
    """The run, built and finished by briefroom.run's composition root as every run is: its
    checkpoints in its run directory (or the database), long-term memory read at the
    start and written through the gates at the end."""
    # Imported here: the server loads this module at start, and these take seconds.
    from briefroom.run import RunHooks, execute_run

    write = get_stream_writer()
    hooks = RunHooks(progress=lambda step: write({"progress": asdict(step)}), on_update=_subgraph_updates())
    # The research graph checkpoints on the run's own thread (in the run directory, or
    # the database), so that it resumes like any run: `briefroom resume`, or a served
    # `resume`. Given a thread of its own, LangGraph runs it as a graph of its own, not
    # as this node's subgraph on the server's checkpointer and thread.
    result = execute_run(_launch(run, policy), hooks)
    if result.status == "paused":  # at a question for its user: the `review` node asks the client
        if result.waiting_for is None:
            raise BriefroomError("the run paused without a question for its user (see run.jsonl)")
        return ServeState(run_dir=str(result.run_dir), **paused_at(result.waiting_for, result.run_dir.name))
    report = result.state.get("report")
    if result.report is None or report is None:
        raise BriefroomError("the run ended without a report (see run.jsonl)")
    return ServeState(**answered(), report=result.report, accepted=report.accepted, cited=list(report.cited_sources),
                          sources={sid: rec.model_dump(mode="json")
                                   for sid, rec in result.state.get("sources", {}).items()},
                          rounds=int(result.state.get("round", 1)), tokens_used=result.tokens_used,
                          run_dir=str(result.run_dir))


def _launch(run: CheckedRun | CheckedResume, policy: ServePolicy) -> Any:
    """A new served run (its directory named by the server), or a served run to go on with."""
    from briefroom.run import ResearchRequest, default_run_dir, new_run, resumed_run

    if isinstance(run, CheckedResume):
        return resumed_run(run.run_dir, run.overrides, reviewer=run.answer)
    from briefroom.config import Settings

    options = run.options
    settings = Settings.from_env(model=options.model, rounds=options.rounds, max_tokens=options.max_tokens,
                                 parallel=options.parallel, mcp_config=policy.mcp_config)
    # the server names the run: its runs may start in the same second with the same question
    run_dir = policy.runs_dir / f"{default_run_dir(run.ask.question).name}-{uuid.uuid4().hex[:6]}"
    return new_run(ResearchRequest(question=run.ask.question, corpus=run.corpus, out=run_dir,
                                   constraints=list(run.ask.constraints),
                                   acceptance_criteria=list(run.ask.acceptance_criteria),
                                   roles_dirs=list(policy.roles_dirs),
                                   review=ReviewOptions(plan=options.review_plan, clarify=options.clarify)),
                   settings)


def _subgraph_updates() -> Callable[[dict[str, Any]], None] | None:
    """Passes the research graph's node updates to the client's stream as a subgraph's
    would be (`updates|research:<task>`), when the client streams subgraphs. The
    research graph is not this graph's subgraph (see `_research`), so this node writes
    them into its own stream, under its own namespace."""
    from langgraph._internal._constants import CONFIG_KEY_CHECKPOINT_NS, CONFIG_KEY_STREAM, NS_SEP
    from langgraph.config import get_config

    configurable = get_config().get("configurable", {})
    stream = configurable.get(CONFIG_KEY_STREAM)
    if stream is None or "updates" not in stream.modes:
        return None
    namespace = tuple(str(configurable.get(CONFIG_KEY_CHECKPOINT_NS, "")).split(NS_SEP))
    return lambda update: stream((namespace, "updates", update))


ServedGraph = CompiledStateGraph[ServeState, ServeContext, ResearchInput, ResearchOutput]


def build_served_graph(policy: ServePolicy, checkpointer: Any = None) -> ServedGraph:
    """The served graph; the LangGraph server lends it its checkpointer when it runs it,
    anyone else may give one here."""
    graph = StateGraph(ServeState, context_schema=ServeContext, input_schema=ResearchInput,
                       output_schema=ResearchOutput)
    graph.add_node("research", research_node(policy))
    graph.add_node(REVIEW_NODE, _review, destinations=("research",))  # goes on through a Send
    graph.add_edge(START, "research")
    graph.add_conditional_edges("research", next_after_research, [REVIEW_NODE, END])
    return graph.compile(name=GRAPH_ID, checkpointer=checkpointer)


def make_graph() -> ServedGraph:
    """The graph factory `langgraph.json` names: cheap (no model, no index, no disk), so
    the server may call it for every request, inside its event loop."""
    return build_served_graph(server_policy())


# Read when the server imports this module, at its start: an operator's mistake stops
# it there, and the factory above touches no disk later (the server refuses blocking
# calls in its event loop).
server_policy()

def __getattr__(name: str) -> Any:
    # `http_app`, the `http.app` langgraph.json names: no routes of its own, only the
    # origin check, which the server runs before its own middleware on every route.
    # Built on first use, so this module imports without the server's packages.
    if name == "http_app":
        return _http_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
