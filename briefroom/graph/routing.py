"""Who speaks next: the first role, in speaking order, with unread messages.

No edge says "the Critic follows the Searcher": a role speaks because something it
subscribed to arrived. Round control adds one rule: once the round's report is
accepted, the round ends; unread messages wait for the next round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from briefroom.graph.state import AgentState
from briefroom.protocol.bus import Bus

if TYPE_CHECKING:
    from briefroom.agents.base import Role

ROUND_END = "round_end"


def report_accepted_this_round(state: AgentState) -> bool:
    report = state.get("report")
    return report is not None and report.accepted and report.round == state.get("round", 1)


def roles_with_unread(state: AgentState, roles: list["Role"], bus: Bus) -> list[str]:
    board = state.get("whiteboard", [])
    seen = state.get("seen", {})
    return [r.name for r in roles if bus.unread(r.name, board, seen.get(r.name, []))]


# In finishing mode (85% of --max-tokens used) only these act: the Writer drafts from
# what is known, the Critic checks and repairs the draft in code, and the run ends.
WRITER, CRITIC = "writer", "critic"


def next_speaker(state: AgentState, roles: list["Role"], bus: Bus) -> str:
    if state.get("done"):
        return ROUND_END
    if report_accepted_this_round(state):
        return ROUND_END
    if state.get("finishing"):
        waiting = roles_with_unread(state, [r for r in roles if r.name == CRITIC], bus)
        report = state.get("report")
        if waiting and report is not None and report.round == state.get("round", 1):
            return CRITIC
        return WRITER if any(r.name == WRITER for r in roles) else ROUND_END
    waiting = roles_with_unread(state, roles, bus)
    return waiting[0] if waiting else ROUND_END
