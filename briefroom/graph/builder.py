"""build_graph: one node per registered role plus round end, wired by routing only.

A role that declares `fan_out` and finds several unread messages, in a run with
`parallel` > 1, is run as one instance per message at the same time (LangGraph `Send`),
each with its own inbox (its one task), worktable, model handle and tool loop. The
instances' updates join through the state's reducers in the order of the messages,
whatever order they finish in, so replays and recordings do not depend on timing.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send, interrupt

from briefroom.agents.base import Role, Turn, finishing_update
from briefroom.agents.run_context import RunContext
from briefroom.events import RoundEnd
from briefroom.graph.routing import ROUND_END, next_speaker, roles_with_unread
from briefroom.graph.summary import summarize_round
from briefroom.protocol.bus import Bus
from briefroom.protocol.messages import ArchivePolicy, Priority
from briefroom.state.schema import AgentState


def make_node(role: Role):
    def node(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        ctx.progress(state.get("round", 1), role.name, "start")
        turn = Turn(role=role, state=state, ctx=ctx, pause=interrupt)
        role.step(turn)
        return turn.updates()

    node.__name__ = f"{role.name}_node"
    return node


def fan_out_node_name(role: Role) -> str:
    return f"{role.name}_instances"


def join_node_name(role: Role) -> str:
    return f"{role.name}_join"


# State fields several instances may write in one step: those with a reducer. The rest
# (`finishing`, `ledger`) are written once, by the join node after them.
_JOINED_FIELDS = frozenset({"whiteboard", "archive", "seen", "worktables", "facts", "sources", "summaries",
                            "memory_used"})


def make_instance_node(role: Role):
    def node(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        slot = state["instance"]
        turn = Turn(role=role, state=state, ctx=ctx, instance=slot["number"], assigned=slot["message"],
                    pause=interrupt)
        ctx.progress(state.get("round", 1), turn.worker, "start")
        role.step(turn)
        update = turn.updates()
        return {key: value for key, value in update.items() if key in _JOINED_FIELDS}

    node.__name__ = f"{role.name}_instance_node"
    return node


def join_node(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """After the instances of a fan-out: one checkpoint for all of them, and the run's
    finishing flag, which each instance could only have seen alone."""
    return finishing_update(state, runtime.context)


def fan_out(state: AgentState, role: Role, bus: Bus, parallel: int) -> list[Send] | None:
    """One `Send` per unread message of `role`, when it may run as several instances."""
    if parallel < 2 or not role.fan_out:
        return None
    unread = list(bus.view(role.name, state.get("whiteboard", []), state.get("seen", {}).get(role.name, []))
                  .unread.values())
    if len(unread) < 2:
        return None
    return [Send(fan_out_node_name(role), {**state, "instance": {"number": n, "message": m.msg_id}})
            for n, m in enumerate(unread, start=1)]


def round_end(state: AgentState, runtime: Runtime[RunContext], roles: list[Role], bus: Bus) -> dict[str, Any]:
    """Expire messages past their TTL, drop superseded ones, decide whether to go on."""
    ctx = runtime.context
    current = state.get("round", 1)
    board = state.get("whiteboard", [])
    superseded = {m.header.supersedes for m in board if m.header.supersedes}
    expired = [m for m in board if m.expired(current + 1) or m.msg_id in superseded]
    gone = {m.msg_id for m in expired}
    live = [m for m in board if m.msg_id not in gone]
    pending = roles_with_unread({**state, "whiteboard": live}, roles, bus)
    charter = state["charter"]
    done = current >= charter.max_rounds or not pending or bool(state.get("finishing"))
    update: dict[str, Any] = {"done": done}
    if not done:
        # The round's read, non-P0 messages give way to one summary; what someone has
        # not read yet (e.g. the Critic's gaps for the Planner) stays on the board.
        seen = {role: set(ids) for role, ids in state.get("seen", {}).items()}
        replaced = [m for m in live if m.header.round == current and m.metadata.priority != Priority.P0
                    and m.metadata.archive_policy is not ArchivePolicy.ARCHIVE
                    and all(m.msg_id in seen.get(r, ()) for r in bus.recipients(m))]
        if replaced:
            update["summaries"] = [summarize_round(state, ctx, replaced)]
            expired += replaced
            gone = {m.msg_id for m in replaced}
            live = [m for m in live if m.msg_id not in gone]
        update["round"] = current + 1
    # Each message's archive policy decides what the state keeps of it (the log keeps all).
    discarded = [m.msg_id for m in expired if m.metadata.archive_policy is ArchivePolicy.DISCARD]
    ctx.log.write(RoundEnd(round=current, expired=[m.msg_id for m in expired], live=len(live),
                           pending=pending, done=done, discarded=discarded,
                           report_accepted=bool((report := state.get("report")) and report.accepted)))
    ctx.progress(current, "round_end", "done" if done else "next round")
    update.update({"whiteboard": Overwrite(live),
                   "archive": [m for m in expired if m.metadata.archive_policy is not ArchivePolicy.DISCARD]})
    return update


def with_ledger(node):
    """Every node's update carries the run's ledger, so the checkpoint written after the
    node says how far the run log, the token count and each role's replies had got."""
    def wrapped(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        update = node(state, runtime)
        update["ledger"] = runtime.context.ledger()
        return update

    wrapped.__name__ = node.__name__
    return wrapped


def build_graph(roles: list[Role], bus: Bus, checkpointer: Any = None, parallel: int = 1):
    """`parallel`: instances of a fan-out role that may run; 1 runs every role alone
    (bound the threads with the `max_concurrency` of the run's config)."""
    graph = StateGraph(AgentState, context_schema=RunContext)
    names = [r.name for r in roles]
    by_name = {r.name: r for r in roles}
    for role in roles:
        graph.add_node(role.name, with_ledger(make_node(role)))
        if role.fan_out and parallel > 1:
            graph.add_node(fan_out_node_name(role), make_instance_node(role))
            graph.add_node(join_node_name(role), with_ledger(join_node))
            graph.add_edge(fan_out_node_name(role), join_node_name(role))  # the join runs once, after all

    def end_of_round(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        return round_end(state, runtime, roles, bus)

    graph.add_node(ROUND_END, with_ledger(end_of_round))

    def route(state: AgentState) -> str | list[Send]:
        speaker = next_speaker(state, roles, bus)
        role = by_name.get(speaker)
        sends = fan_out(state, role, bus, parallel) if role is not None else None
        return sends or speaker

    def after_round(state: AgentState) -> str | list[Send]:
        return END if state.get("done") else route(state)

    targets = [*names, ROUND_END]
    graph.add_conditional_edges(START, route, targets)
    for name in names:
        graph.add_conditional_edges(name, route, targets)
    for role in roles:
        if role.fan_out and parallel > 1:
            graph.add_conditional_edges(join_node_name(role), route, targets)
    graph.add_conditional_edges(ROUND_END, after_round, [*targets, END])
    return graph.compile(checkpointer=checkpointer)
