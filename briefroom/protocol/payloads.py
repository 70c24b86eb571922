"""The structured part of each message type: what a receiver may rely on.

Every message carries one payload, and its `type` must equal the message's type; the
bus validates that on publish, so a role reads `message.payload_as(Conclusion)` and
gets typed fields instead of guessing dictionary keys.  Adding a field means adding it
here, where every sender and receiver can see it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from briefroom.report.draft import ReportDraft


class PayloadModel(BaseModel):
    # forbid: a sender's typo in a field name fails on publish instead of being dropped
    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str


class Instruction(PayloadModel):
    """A task for a role: the goal from the user, a question to search. The task is the
    message's content; nothing else travels with it yet."""

    type: Literal["instruction"] = "instruction"


class Conclusion(PayloadModel):
    """A sourced finding (the message's content and references)."""

    type: Literal["conclusion"] = "conclusion"
    question: str | None = Field(default=None, description="the instruction's question this answers")
    subject: str | None = Field(default=None, description="normalised subject key; a newer finding on the "
                                                          "same subject supersedes the older one")
    verbatim_fact: str | None = Field(default=None, description="fact id, when the text was copied by code")


class Critique(PayloadModel):
    """A reviewer's verdict: on conclusions (`review`), on a report draft (`revise`:
    problems to fix before it can ship), or on the run so far (`gaps`: questions no
    verified evidence answers yet)."""

    type: Literal["critique"] = "critique"
    kind: Literal["review", "revise", "gaps"]
    accepted: tuple[str, ...] = Field(default=(), description="message ids of accepted conclusions")
    rejected: dict[str, str] = Field(default_factory=dict, description="message id -> why it was rejected")
    problems: tuple[str, ...] = ()
    gaps: tuple[str, ...] = ()


class ReportMessage(PayloadModel):
    """A report draft for review: the structured draft, its Markdown and its footer."""

    type: Literal["report"] = "report"
    draft: ReportDraft
    markdown: str
    footer: str = ""


AnyPayload = Instruction | Conclusion | Critique | ReportMessage
Payload = Annotated[AnyPayload, Field(discriminator="type")]
