"""AgentMessage: the one structured unit on the whiteboard.

A message has a header (who, to whom, what kind, what it answers or replaces), a body
(content, structured data, source references) and metadata (lifetime, priority). Roles
never pass free text to each other outside this shape.
"""

from __future__ import annotations

import hashlib
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

BROADCAST = "broadcast"


class MsgType(str, Enum):
    INSTRUCTION = "instruction"
    CONCLUSION = "conclusion"
    QUESTION = "question"
    REPORT = "report"
    TOOL_RESULT = "tool_result"
    CRITIQUE = "critique"


class Priority(str, Enum):
    """P0 is never cut from a prompt; P3 goes first."""

    P0 = "P0"
    P1 = "P1"
    P2 = "P2"
    P3 = "P3"


class ArchivePolicy(str, Enum):
    ARCHIVE = "archive"  # keep in the run log after expiry
    DISCARD = "discard"  # nothing worth keeping (chatter)


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
    structured_data: dict[str, Any] = Field(default_factory=dict)
    references: tuple[str, ...] = Field(default=(), description="source ids backing the content")


class Metadata(BaseModel):
    model_config = ConfigDict(frozen=True)

    ttl_rounds: int = Field(default=2, ge=1)
    priority: Priority = Priority.P2
    archive_policy: ArchivePolicy = ArchivePolicy.ARCHIVE


class AgentMessage(BaseModel):
    model_config = ConfigDict(frozen=True)

    header: Header
    body: Body
    metadata: Metadata = Field(default_factory=Metadata)

    @property
    def msg_id(self) -> str:
        return self.header.msg_id

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
    structured_data: dict[str, Any] | None = None,
    relation: str | None = None,
    supersedes: str | None = None,
    ttl_rounds: int = 2,
    priority: Priority = Priority.P2,
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
    body = Body(content=content, structured_data=structured_data or {}, references=tuple(references))
    return AgentMessage(header=header, body=body, metadata=Metadata(ttl_rounds=ttl_rounds, priority=priority))
