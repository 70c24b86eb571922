"""Who speaks next: the first role, in speaking order, with unread messages.

No edge says "the Critic follows the Searcher": a role speaks because something it
subscribed to arrived. Round control adds one rule: once the round's report is
accepted, the round ends; unread messages wait for the next round. While the run is
finishing, only the roles with a finishing duty speak, and every guard has one: to
pass on what it holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from briefroom.protocol.bus import Bus
from briefroom.state.schema import AgentState

if TYPE_CHECKING:
    from briefroom.agents.base import Role

ROUND_END = "round_end"


def report_accepted_this_round(state: AgentState) -> bool:
    report = state.get("report")
    return report is not None and report.accepted and report.round == state.get("round", 1)


def roles_with_unread(state: AgentState, roles: list["Role"], bus: Bus) -> list[str]:
    board = state.get("whiteboard", [])
    seen = state.get("seen", {})
    # The bus's incremental views: no list of the whole inbox per role per routing decision.
    return [r.name for r in roles if bus.view(r.name, board, seen.get(r.name, [])).unread]


def holds(state: AgentState, role: "Role", bus: Bus) -> bool:
    """Whether `role` has unread messages of a type it guards (held until it passes them)."""
    view = bus.view(role.name, state.get("whiteboard", []), state.get("seen", {}).get(role.name, []))
    return any(m.header.msg_type in role.guards for m in view.unread.values())


def next_speaker(state: AgentState, roles: list["Role"], bus: Bus) -> str:
    if state.get("done"):
        return ROUND_END
    if report_accepted_this_round(state):
        return ROUND_END
    if state.get("finishing"):
        # Only roles with a finishing duty act. A guard holding messages passes them on
        # first (what it holds would otherwise never reach the drafter); then checkers
        # review a draft of this round that is waiting for them; otherwise the drafter
        # writes from what is known.
        holding = [r for r in roles if r.guards and holds(state, r, bus)]
        if holding:
            return holding[0].name
        checkers = roles_with_unread(state, [r for r in roles if r.finishing_duty == "check"], bus)
        report = state.get("report")
        if checkers and report is not None and report.round == state.get("round", 1):
            return checkers[0]
        drafters = [r.name for r in roles if r.finishing_duty == "draft"]
        return drafters[0] if drafters else ROUND_END
    waiting = roles_with_unread(state, roles, bus)
    return waiting[0] if waiting else ROUND_END
