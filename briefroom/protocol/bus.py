"""The whiteboard's routing: who receives which message, derived from declarations.

Roles declare subscriptions (message types, optionally from which senders). The bus
builds a routing table from them; nobody hard-codes "the critic reads conclusions".
A message reaches a role when the role subscribes to its type (and sender) and the
message is addressed to that role or to everyone. A message nobody subscribes to is a
bug in the sender, so publishing it fails loudly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from briefroom.errors import BriefroomError
from briefroom.protocol.messages import BROADCAST, AgentMessage, MsgType


class Subscription(BaseModel):
    model_config = ConfigDict(frozen=True)

    msg_type: MsgType
    senders: tuple[str, ...] | None = None  # None: from anyone

    def matches(self, message: AgentMessage) -> bool:
        if message.header.msg_type != self.msg_type:
            return False
        return self.senders is None or message.header.sender in self.senders


class RoutingError(BriefroomError):
    """A message was published that no role can receive, or by a role not allowed to."""


class Bus:
    """Routing table built from each role's subscriptions and publications."""

    def __init__(self, subscriptions: dict[str, Sequence[Subscription]],
                 publications: dict[str, Iterable[MsgType]]):
        self._subscriptions = {role: tuple(subs) for role, subs in subscriptions.items()}
        self._publications = {role: frozenset(types) for role, types in publications.items()}
        # Messages are immutable and the table fixed for a run: route each message once,
        # and remember which ids have been superseded by a routed message.
        self._routes: dict[str, tuple[str, ...]] = {}
        self._superseded: set[str] = set()

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(self._subscriptions)

    def recipients(self, message: AgentMessage) -> tuple[str, ...]:
        """Roles this message is routed to (never its sender)."""
        cached = self._routes.get(message.header.msg_id)
        if cached is None:
            cached = self._routes[message.header.msg_id] = self._route(message)
            if message.header.supersedes:
                self._superseded.add(message.header.supersedes)
        return cached

    def _route(self, message: AgentMessage) -> tuple[str, ...]:
        receiver = message.header.receiver
        out = []
        for role, subs in self._subscriptions.items():
            if role == message.header.sender:
                continue
            if receiver not in (BROADCAST, role):
                continue
            if any(s.matches(message) for s in subs):
                out.append(role)
        return tuple(out)

    def check_publish(self, message: AgentMessage) -> None:
        """Reject messages a role may not send or that nobody would receive."""
        sender = message.header.sender
        allowed = self._publications.get(sender)
        if allowed is not None and message.header.msg_type not in allowed:
            raise RoutingError(f"role {sender!r} does not declare publishing {message.header.msg_type.value!r}")
        if not self.recipients(message):
            raise RoutingError(
                f"message {message.msg_id} ({message.header.msg_type.value} from {sender} to "
                f"{message.header.receiver}) has no subscriber")

    def inbox(self, role: str, whiteboard: Iterable[AgentMessage]) -> list[AgentMessage]:
        """Live messages routed to `role`, oldest first, without superseded ones."""
        board = list(whiteboard)
        routes, route = self._routes, self.recipients
        for m in board:  # route new messages first: they may supersede older ones
            if m.header.msg_id not in routes:
                route(m)
        superseded = self._superseded
        # One pass over header fields (not properties): this is the hot loop of long runs.
        return [m for m in board if role in routes[m.header.msg_id] and m.header.msg_id not in superseded]

    @staticmethod
    def unread_of(inbox: list[AgentMessage], seen: Iterable[str]) -> list[AgentMessage]:
        """The part of an already computed inbox that is not in `seen`."""
        seen_ids = set(seen)
        return [m for m in inbox if m.header.msg_id not in seen_ids]

    def unread(self, role: str, whiteboard: Iterable[AgentMessage], seen: Iterable[str]) -> list[AgentMessage]:
        return self.unread_of(self.inbox(role, whiteboard), seen)
