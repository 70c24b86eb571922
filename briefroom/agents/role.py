"""A role as data: what the registry, the bus and the graph need to know about it.

The machinery that runs a role's `step` (`Turn`, in `agents/base.py`) and the helpers
it calls (`prompting.py`, `tool_loop.py`) read this declaration; it reads none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import MsgType
from briefroom.protocol.payloads import TASK_FIELDS

# What a role does once the run is finishing: "draft" writes the report from what is
# known, "check" reviews that draft (`graph.routing.next_speaker`).
FinishingDuty = Literal["draft", "check"]


@dataclass(frozen=True)
class Role:
    """Everything the registry, the bus and the graph need to know about a role."""

    name: str
    subscriptions: tuple[Subscription, ...]
    publications: tuple[MsgType, ...]
    # The role's work in one turn: called with the `Turn` (`agents/base.py`). Typed by
    # its one argument's use, not its class, so this declaration does not import the
    # machinery that runs it (that machinery reads `Role`).
    step: Callable[[Any], None]
    # Shipped prompt file name, or an absolute path for plugin roles; a role whose step
    # never asks a model (a rewrite in code) needs none.
    prompt: str | Path | None = None
    tools: tuple[str, ...] = ()
    # Tools the role uses when the run has them (the web tools, with --web), and does
    # without otherwise; a missing `tools` entry is an error.
    optional_tools: tuple[str, ...] = ()
    # Speaking order, by declaration: this role speaks after the role holding each named
    # capability ("search") and after every other role publishing each named message type
    # ("conclusion"); `before` likewise, before the capability's holder and before every
    # other role subscribing to the type. A guard is placed after the publishers of what
    # it guards and before its subscribers without saying so. What no declaration orders
    # keeps the order the roles were found in (`registry.speaking_order`).
    after: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    budget_tokens: int = 6000  # input budget; capped by the model's window
    description: str = ""
    # What the role does once the run is finishing (85% of --max-tokens used):
    # "draft" writes the report from what is known, "check" reviews that draft;
    # roles without a duty stop working.
    finishing_duty: FinishingDuty | None = None
    # Reads long-term memory at task start (the Planner); other roles read it only at
    # declared decision points, through a memory tool.
    reads_memory: bool = False
    # What others may address this role by ("plan", "search", "check", "draft"): senders
    # name a capability, never a role, so a role can be replaced without editing others.
    capabilities: tuple[str, ...] = ()
    # Message types this role must pass before their subscribers see them (see
    # `Turn.forward` and `Turn.restate`): a checker placed between two roles by
    # declaration alone. Several roles may guard one type: a message passes them in
    # speaking order, each seeing what the one before it passed on. While the run is
    # finishing, a guard still passes on what it holds, so nothing it held is lost.
    guards: tuple[MsgType, ...] = ()
    # Fields of a task envelope (an instruction's payload) this role needs: it gets only
    # these from `Turn.task` and in its prompt (see `protocol.payloads.TASK_FIELDS`).
    task_fields: tuple[str, ...] = ()
    # With `--parallel N` > 1, several unread messages are handled by one instance of
    # this role each, at the same time (the Searcher: one per sub-question).
    fan_out: bool = False

    def __post_init__(self) -> None:
        if self.finishing_duty not in (None, *get_args(FinishingDuty)):
            raise ValueError(f"role {self.name!r}: finishing_duty must be 'draft', 'check' or None")
        for field_name in ("publications", "guards"):  # one instance per type name (`MsgType.of`)
            object.__setattr__(self, field_name, tuple(MsgType.of(t) for t in getattr(self, field_name)))
        for field_name in ("after", "before"):
            entries = getattr(self, field_name)
            if any(not isinstance(e, str) or not e for e in entries):
                raise ValueError(f"role {self.name!r}: {field_name}= names capabilities or message types, "
                                 f"not {entries!r}")
            # a message type is kept by its value, the name the registry orders by
            object.__setattr__(self, field_name, tuple(e.value if isinstance(e, MsgType) else e for e in entries))
        unknown = set(self.task_fields) - set(TASK_FIELDS)
        if unknown:
            raise ValueError(f"role {self.name!r}: unknown task field(s) {sorted(unknown)}; "
                             f"an envelope has {', '.join(TASK_FIELDS)}")
