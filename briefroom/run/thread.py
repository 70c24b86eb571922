"""The run's team, its graph on a checkpointed thread, its log and its charter: what a
run is opened with before any store or model, and where a resumed run learns that it
is one (the checkpoint it starts from).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from langgraph.types import StateSnapshot

from briefroom.agents.base import Role
from briefroom.agents.registry import bus_for, discover
from briefroom.config import Settings
from briefroom.errors import ConfigError
from briefroom.events import RunRestart
from briefroom.graph.builder import build_graph
from briefroom.graph.summary import SUMMARIZER
from briefroom.mcp.servers import McpServers, open_servers
from briefroom.protocol.bus import Bus
from briefroom.protocol.redaction import redact_text
from briefroom.records import DEFAULT_CRITERIA, Charter
from briefroom.report.language import language_of
from briefroom.run.launch import RunLaunch
from briefroom.run.locks import data_dir_in_use
from briefroom.run.request import ResearchRequest, Say
from briefroom.runlog import MovedAside, RunLog
from briefroom.stores import open_checkpoints


@dataclass(frozen=True)
class Team:
    roles: list[Role]
    bus: Bus


def team_of(request: ResearchRequest, settings: Settings) -> Team:
    """The roles of the request's role folders (or the default team) and their bus."""
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


def open_thread(launch: RunLaunch, team: Team, stack: contextlib.ExitStack) -> Thread:
    """The data directory's lock, the checkpointer, the MCP servers and the graph, each
    closed with `stack`; a thread whose only checkpoint is its pending input is cleared."""
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


def reopen_log(launch: RunLaunch, thread: Thread) -> tuple[RunLog, MovedAside]:
    """The run log as far as the checkpoint wrote it; what came after goes aside."""
    keep = int(thread.start.values.get("ledger", {}).get("log_seq", 0)) if thread.resumed else 0
    return RunLog.reopen(launch.run_dir / "run.jsonl", keep)


def charter_of(launch: RunLaunch, thread: Thread, log: RunLog, moved: MovedAside, say: Say) -> Charter:
    """A resumed run's charter is its checkpoint's; a new run (or one that stopped
    before its first checkpoint, starting over in place) makes one."""
    if thread.resumed:
        return thread.start.values["charter"]
    if moved.lines and not thread.had_checkpoints:  # work was logged, its checkpoints are gone: say so
        # (killed before the first step's checkpoint, a run has not started: it starts over quietly)
        notice = (f"starting over (checkpoints.sqlite is missing); the earlier log ({moved.lines} events) "
                  "is in run.interrupted.jsonl")
        say(0, "resume", notice)
        log.write(RunRestart(reason=notice, moved_lines=moved.lines))
    charter = make_charter(launch.request, launch.settings, thread.roles)
    (launch.run_dir / "charter.json").write_text(charter.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return charter


def make_charter(request: ResearchRequest, settings: Settings, roles: list[Role]) -> Charter:
    """The run's charter. The question is as `new_run` cleaned it (`clean_question`: one
    line); its language is detected here, once, and read from the charter after."""
    return Charter(goal=redact_text(request.question),
                   acceptance_criteria=tuple(DEFAULT_CRITERIA) + tuple(request.acceptance_criteria),
                   constraints=tuple(request.constraints), roles=tuple(r.name for r in roles),
                   max_rounds=settings.rounds, max_revisions=settings.max_revisions,
                   language=settings.language or language_of(request.question))
