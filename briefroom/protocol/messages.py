"""AgentMessage: the one structured unit on the whiteboard.

A message has a header (who, to whom, what kind, what it answers or replaces), a body
(content, a typed payload per message type from `payloads.py`, source references) and
metadata (lifetime, priority). Roles never pass free text or loose dictionaries to each
other outside this shape.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from enum import Enum
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler
from pydantic_core import core_schema

from briefroom.protocol.payloads import (
    Conclusion,
    Instruction,
    Payload,
    PayloadModel,
    payload_class,
    registered_payloads,
    type_name,
)

BROADCAST = "broadcast"
P = TypeVar("P", bound=PayloadModel)


class MsgType(str):
    """A message type: the name a payload class carries (`payloads.register_payload`).
    The set is open, so this is a string, not an enum; each name has one instance
    (`MsgType.of`), so `header.msg_type is MsgType.CONCLUSION` holds, and the framework's
    own types are attributes. A name may be declared (subscribed to, published) before
    the file registering its payload is loaded; the bus checks every declared type has a
    payload when the team is assembled, and a message is built only with one."""

    INSTRUCTION: ClassVar[MsgType]
    CONCLUSION: ClassVar[MsgType]
    CRITIQUE: ClassVar[MsgType]
    QUESTION: ClassVar[MsgType]
    ANSWER: ClassVar[MsgType]
    _known: ClassVar[dict[str, MsgType]] = {}

    @property
    def value(self) -> str:
        return str.__str__(self)

    @property
    def registered(self) -> bool:
        return payload_class(self.value) is not None

    def __repr__(self) -> str:
        return f"MsgType({self.value!r})"

    @classmethod
    def of(cls, name: object) -> MsgType:
        """The one instance for a type's name (a lower-case identifier)."""
        key = str.__str__(name) if isinstance(name, str) else None
        if key is None or not key.isidentifier() or key != key.lower():
            raise ValueError(f"a message type is a lower-case identifier, not {name!r}")
        if key not in cls._known:
            cls._known[key] = cls(key)
        return cls._known[key]

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls.of, serialization=core_schema.to_string_ser_schema(when_used="always"))


def unregistered(types: Iterable[MsgType]) -> list[str]:
    """The names among `types` no payload class is registered for."""
    return sorted({t.value for t in types if not t.registered})


def message_types() -> tuple[MsgType, ...]:
    """Every registered message type, in the order its payload was registered."""
    return tuple(MsgType.of(type_name(c)) for c in registered_payloads())


MsgType.INSTRUCTION, MsgType.CONCLUSION, MsgType.CRITIQUE = (MsgType.of(n) for n in ("instruction", "conclusion",
                                                                                  "critique"))
MsgType.QUESTION, MsgType.ANSWER = (MsgType.of(n) for n in ("question", "answer"))


class ArchivePolicy(str, Enum):
    """What happens to a message when it leaves the whiteboard (round end)."""

    SUMMARIZE = "summarize"  # once every recipient read it, folded into the round's summary, then archived
    ARCHIVE = "archive"  # kept verbatim: live until its TTL, never summarized away, then archived
    DISCARD = "discard"  # not archived: the run log keeps it for the audit, the state does not


class Priority(str, Enum):
    """P0 is never cut from a prompt; P3 goes first."""

    P0 = "P0"
    P1 = "P1"
    P2 = "P2"
    P3 = "P3"


class Header(BaseModel):
    model_config = ConfigDict(frozen=True)

    msg_id: str
    sender: str
    receiver: str = BROADCAST
    msg_type: MsgType
    round: int = Field(description="round in which the message was published")
    timestamp: float = 0.0
    relation: str | None = Field(default=None, description="msg_id this message answers")
    supersedes: str | None = Field(default=None, description="msg_id this message replaces")


class Body(BaseModel):
    model_config = ConfigDict(frozen=True)

    content: str
    payload: Payload
    references: tuple[str, ...] = Field(default=(), description="source ids backing the content")


class Metadata(BaseModel):
    model_config = ConfigDict(frozen=True)

    ttl_rounds: int = Field(default=2, ge=1)
    priority: Priority = Priority.P2
    archive_policy: ArchivePolicy = ArchivePolicy.SUMMARIZE


class AgentMessage(BaseModel):
    model_config = ConfigDict(frozen=True)

    header: Header
    body: Body
    metadata: Metadata = Field(default_factory=Metadata)

    @property
    def msg_id(self) -> str:
        return self.header.msg_id

    def payload_as(self, kind: type[P]) -> P:
        """The payload as `kind`; a message of another type is a bug in the reader."""
        if not isinstance(self.body.payload, kind):
            raise TypeError(f"message {self.msg_id} is a {self.header.msg_type.value}, not a {kind.__name__}")
        return self.body.payload

    def expired(self, current_round: int) -> bool:
        """A message published in round r with ttl t is live in rounds r .. r+t-1."""
        return current_round >= self.header.round + self.metadata.ttl_rounds


def make_message(
    *,
    sender: str,
    msg_type: MsgType,
    content: str,
    round: int,
    seq: int,
    receiver: str = BROADCAST,
    references: tuple[str, ...] | list[str] = (),
    payload: PayloadModel | None = None,
    relation: str | None = None,
    supersedes: str | None = None,
    ttl_rounds: int = 2,
    priority: Priority = Priority.P2,
    archive_policy: ArchivePolicy | None = None,
) -> AgentMessage:
    """Build a message whose id is derived from its content and position.

    Ids are deterministic (no uuid, no clock) so that a replayed run produces the
    same ids, the same prompts and the same report.
    """
    digest = hashlib.sha256(f"{sender}|{receiver}|{msg_type.value}|{round}|{seq}|{content}".encode()).hexdigest()
    header = Header(
        msg_id=f"m{round}-{sender[:3]}-{seq}-{digest[:6]}",
        sender=sender,
        receiver=receiver,
        msg_type=msg_type,
        round=round,
        timestamp=float(round * 1000 + seq),
        relation=relation,
        supersedes=supersedes,
    )
    msg_type = MsgType.of(msg_type)
    if not msg_type.registered:
        raise ValueError(f"no payload class is registered for message type {msg_type.value!r} "
                         "(see briefroom.protocol.payloads.register_payload)")
    if payload is None:
        if msg_type not in _PAYLOAD_OF:
            raise ValueError(f"a {msg_type.value} message needs its payload (see briefroom/protocol/payloads.py)")
        payload = _PAYLOAD_OF[msg_type]()
    if payload.type != msg_type.value:
        raise ValueError(f"a {msg_type.value} message cannot carry a {payload.type} payload")
    body = Body(content=content, payload=payload, references=tuple(references))
    policy = archive_policy or ArchivePolicy(type(payload).archive_policy)
    return AgentMessage(header=header, body=body,
                        metadata=Metadata(ttl_rounds=ttl_rounds, priority=priority, archive_policy=policy))


# The payload a message of each type carries when its sender adds nothing.
_PAYLOAD_OF: dict[MsgType, type[Instruction] | type[Conclusion]] = {MsgType.INSTRUCTION: Instruction, MsgType.CONCLUSION: Conclusion}
