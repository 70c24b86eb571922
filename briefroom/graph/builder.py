"""build_graph: one node per registered role plus round end, wired by routing only."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from briefroom.agents.base import Role, Turn
from briefroom.agents.run_context import RunContext
from briefroom.graph.routing import ROUND_END, next_speaker, roles_with_unread
from briefroom.graph.state import AgentState
from briefroom.graph.summary import summarize_round
from briefroom.protocol.bus import Bus
from briefroom.protocol.messages import Priority


def make_node(role: Role):
    def node(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        ctx.progress(state.get("round", 1), role.name, "start")
        turn = Turn(role=role, state=state, ctx=ctx)
        role.step(turn)
        return turn.updates()

    node.__name__ = f"{role.name}_node"
    return node


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
                    and all(m.msg_id in seen.get(r, ()) for r in bus.recipients(m))]
        if replaced:
            update["summaries"] = [summarize_round(state, ctx, replaced)]
            expired += replaced
            gone = {m.msg_id for m in replaced}
            live = [m for m in live if m.msg_id not in gone]
        update["round"] = current + 1
    ctx.log.event("round_end", round=current, expired=[m.msg_id for m in expired], live=len(live),
                  pending=pending, done=done,
                  report_accepted=bool((report := state.get("report")) and report.accepted))
    ctx.progress(current, "round_end", "done" if done else "next round")
    update.update({"whiteboard": Overwrite(live), "archive": expired})
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


def build_graph(roles: list[Role], bus: Bus, checkpointer: Any = None):
    graph = StateGraph(AgentState, context_schema=RunContext)
    names = [r.name for r in roles]
    for role in roles:
        graph.add_node(role.name, with_ledger(make_node(role)))

    def end_of_round(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        return round_end(state, runtime, roles, bus)

    graph.add_node(ROUND_END, with_ledger(end_of_round))

    def route(state: AgentState) -> str:
        return next_speaker(state, roles, bus)

    def after_round(state: AgentState) -> str:
        return END if state.get("done") else next_speaker(state, roles, bus)

    targets = [*names, ROUND_END]
    graph.add_conditional_edges(START, route, targets)
    for name in names:
        graph.add_conditional_edges(name, route, targets)
    graph.add_conditional_edges(ROUND_END, after_round, [*targets, END])
    return graph.compile(checkpointer=checkpointer)
