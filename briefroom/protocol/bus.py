"""The whiteboard's routing: who receives which message, derived from declarations.

Roles declare subscriptions (message types, optionally from which senders). The bus
builds a routing table from them; nobody hard-codes "the critic reads conclusions".
A message reaches a role when the role subscribes to its type (and sender) and the
message is addressed to that role or to everyone. A message nobody subscribes to is a
bug in the sender, so publishing it fails loudly.

Senders never name another role. They address a *capability* ("plan", "search",
"draft", "check"), which the bus resolves to the one role declaring it, or everyone.
A role may also *guard* a message type: every message of that type then goes to the
guard alone, and its subscribers see only what the guard forwards. That is how a
role changes the flow (a fact-checker between the Searcher and the Writer) without
any other role knowing it exists. Several roles may guard one type: a message then
passes them in the order the guards were given (the team's speaking order), each
receiving what the one before it passed on, and the subscribers what the last did.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from briefroom.errors import BriefroomError
from briefroom.protocol.messages import BROADCAST, AgentMessage, MsgType, Priority, unregistered


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


class InboxView:
    """One role's live inbox, kept up to date as the board grows.

    The whiteboard only ever changes by appending messages and by order-preserving
    removal (round end). So if the board still starts with the message this view
    indexed first and holds, at the same position, the message it indexed last, nothing
    it indexed was removed and only the tail is new; otherwise the view is rebuilt.
    The same holds for a role's `seen` cursor, which only grows. This makes building a
    prompt independent of how long the run has been going.
    """

    def __init__(self) -> None:
        self.reset()
        self._reset_seen()

    def reset(self) -> None:
        self.board_len = 0
        self.board_first: str | None = None
        self.board_last: str | None = None
        self.messages: dict[str, AgentMessage] = {}  # routed to the role, live, oldest first
        self.pinned: dict[str, AgentMessage] = {}  # P0 and critiques: kept however old
        self.unread: dict[str, AgentMessage] = {}
        self._listed: list[AgentMessage] | None = None
        self.seen_len = 0  # unread must be recomputed against the whole cursor

    def _reset_seen(self) -> None:
        self.seen_len = 0
        self.seen_last: str | None = None
        self.seen: set[str] = set()

    def add(self, message: AgentMessage) -> None:
        mid = message.header.msg_id
        self.messages[mid] = message
        if message.metadata.priority is Priority.P0 or message.header.msg_type is MsgType.CRITIQUE:
            self.pinned[mid] = message
        if mid not in self.seen:
            self.unread[mid] = message
        self._listed = None

    def discard(self, msg_id: str) -> None:
        if self.messages.pop(msg_id, None) is not None:
            self.pinned.pop(msg_id, None)
            self.unread.pop(msg_id, None)
            self._listed = None

    def sync_seen(self, seen: Sequence[str]) -> None:
        n = self.seen_len
        if n and (len(seen) < n or seen[n - 1] != self.seen_last):
            self._reset_seen()
            self.unread = dict(self.messages)
            n = 0
        for mid in seen[n:]:
            self.seen.add(mid)
            self.unread.pop(mid, None)
        self.seen_len = len(seen)
        self.seen_last = seen[-1] if seen else None

    def without(self, hidden: set[str]) -> "InboxView":
        """A detached copy lacking the `hidden` messages: an instance of a fan-out role
        sees its own task, not the tasks its siblings handle at the same time."""
        copy = InboxView()
        copy.seen = set(self.seen)
        for message in self.messages.values():
            if message.header.msg_id not in hidden:
                copy.add(message)
        return copy

    @property
    def inbox(self) -> list[AgentMessage]:
        if self._listed is None:
            self._listed = list(self.messages.values())
        return self._listed

    def recent(self, k: int) -> list[AgentMessage]:
        """The k newest messages, oldest first, without listing the whole inbox."""
        if len(self.messages) <= k:
            return self.inbox
        newest = []
        for message in reversed(self.messages.values()):
            newest.append(message)
            if len(newest) == k:
                break
        return newest[::-1]


class Bus:
    """Routing table built from each role's subscriptions and publications."""

    def __init__(self, subscriptions: dict[str, Sequence[Subscription]],
                 publications: dict[str, Iterable[MsgType]],
                 capabilities: dict[str, Iterable[str]] | None = None,
                 guards: dict[str, Iterable[MsgType]] | None = None):
        self._subscriptions = {role: tuple(subs) for role, subs in subscriptions.items()}
        publications = {role: tuple(MsgType.of(t) for t in types) for role, types in publications.items()}
        guards = {role: tuple(MsgType.of(t) for t in types) for role, types in (guards or {}).items()}
        declared = {role: [*(s.msg_type for s in subs), *publications.get(role, ()), *guards.get(role, ())]
                    for role, subs in self._subscriptions.items()}
        for role, named in declared.items():
            missing = unregistered(named)
            if missing:
                raise RoutingError(f"role {role!r} declares message type(s) {', '.join(missing)} that no payload "
                                   "class is registered for (briefroom.protocol.payloads.register_payload)")
        self._publications = {role: frozenset(types) for role, types in publications.items()}
        self._holders = _one_role_each(capabilities or {}, "capability")  # capability -> its role
        # message type -> the roles it passes, in order (the order `guards` lists them)
        self._guards: dict[MsgType, tuple[str, ...]] = {}
        for role, types in guards.items():
            for msg_type in types:
                self._guards[msg_type] = (*self._guards.get(msg_type, ()), role)
        # Messages are immutable and the table fixed for a run: route each message once,
        # and remember which ids have been superseded by a routed message.
        self._routes: dict[str, tuple[str, ...]] = {}
        self._superseded: set[str] = set()
        self._views: dict[str, InboxView] = {}
        # Instances of a fan-out role route and read at the same time: the caches above
        # change under this lock only (re-entrant: routing happens inside `view`).
        self.lock = threading.RLock()

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(self._subscriptions)

    def address(self, capability: str | None) -> str:
        """The receiver for a message meant for whoever has `capability` (None: everyone)."""
        if capability is None:
            return BROADCAST
        role = self._holders.get(capability)
        if role is None:
            raise RoutingError(f"no role in this run declares the capability {capability!r}")
        return role

    def holder(self, capability: str) -> str | None:
        """The role declaring `capability`, or None when this team has none."""
        return self._holders.get(capability)

    def guard_of(self, msg_type: MsgType) -> str | None:
        """The role every message of this type must pass first, if any."""
        chain = self._guards.get(msg_type)
        return chain[0] if chain else None

    def guards_of(self, msg_type: MsgType) -> tuple[str, ...]:
        """The roles every message of this type passes, in order (none: it goes straight
        to its subscribers)."""
        return self._guards.get(msg_type, ())

    def recipients(self, message: AgentMessage) -> tuple[str, ...]:
        """Roles this message is routed to (never its sender)."""
        cached = self._routes.get(message.header.msg_id)
        if cached is not None:
            return cached
        with self.lock:
            return self._recipients(message)

    def _recipients(self, message: AgentMessage) -> tuple[str, ...]:
        cached = self._routes.get(message.header.msg_id)
        if cached is None:
            cached = self._routes[message.header.msg_id] = self._route(message)
            old = message.header.supersedes
            if old:
                self._superseded.add(old)
                for view in self._views.values():
                    view.discard(old)
        return cached

    def _route(self, message: AgentMessage) -> tuple[str, ...]:
        chain = self._guards.get(message.header.msg_type, ())
        sender = message.header.sender
        if chain and sender != chain[-1]:
            # held by the next guard: the first one, or the one after the guard that sent it
            return (chain[chain.index(sender) + 1 if sender in chain else 0],)
        receiver = message.header.receiver
        out = []
        for role, subs in self._subscriptions.items():
            if role == sender or role in chain:  # a guard has had its turn with this message
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

    def view(self, role: str, whiteboard: Sequence[AgentMessage], seen: Sequence[str] = ()) -> InboxView:
        """`role`'s inbox and unread messages for this board and read cursor."""
        with self.lock:
            return self._view(role, whiteboard, seen)

    def _view(self, role: str, whiteboard: Sequence[AgentMessage], seen: Sequence[str]) -> InboxView:
        view = self._views.get(role)
        if view is None:
            view = self._views[role] = InboxView()
        n = view.board_len
        if n and (len(whiteboard) < n or whiteboard[n - 1].header.msg_id != view.board_last
                  or whiteboard[0].header.msg_id != view.board_first):
            view.reset()
            n = 0
        view.sync_seen(seen)
        if len(whiteboard) > n:
            new = whiteboard[n:]
            for m in new:  # route new messages first: they may supersede older ones
                self.recipients(m)
            routes, superseded = self._routes, self._superseded
            for m in new:
                mid = m.header.msg_id
                if role in routes[mid] and mid not in superseded:
                    view.add(m)
            view.board_len = len(whiteboard)
            view.board_first = whiteboard[0].header.msg_id
            view.board_last = whiteboard[-1].header.msg_id
        return view

    def inbox(self, role: str, whiteboard: Sequence[AgentMessage]) -> list[AgentMessage]:
        """Live messages routed to `role`, oldest first, without superseded ones."""
        return list(self.view(role, whiteboard).inbox)

    def unread(self, role: str, whiteboard: Sequence[AgentMessage], seen: Sequence[str]) -> list[AgentMessage]:
        return list(self.view(role, whiteboard, seen).unread.values())


K = TypeVar("K")


def _one_role_each(declared: dict[str, Iterable[K]], what: str) -> dict[K, str]:
    """Invert role -> declared names into name -> role; two roles declaring one name
    would make routing ambiguous, so that fails."""
    owner: dict[K, str] = {}
    for role, names in declared.items():
        for name in names:
            if name in owner:
                label = name.value if isinstance(name, MsgType) else name
                raise RoutingError(f"{what} {label!r} is declared by both {owner[name]!r} and {role!r}; "
                                   "it must name one role")
            owner[name] = role
    return owner
