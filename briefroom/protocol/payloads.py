"""The structured part of each message type: what a receiver may rely on.

Every message carries one payload, and its `type` must equal the message's type; the
bus validates that on publish, so a role reads `message.payload_as(Conclusion)` and
gets typed fields instead of guessing dictionary keys.  Adding a field means adding it
here, where every sender and receiver can see it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from briefroom.records import ReportDraft


class PayloadModel(BaseModel):
    # forbid: a sender's typo in a field name fails on publish instead of being dropped
    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str


class ArtifactRef(BaseModel):
    """A pointer to something the team already holds, with a short structured summary:
    an envelope carries these, never the content itself (the receiver reads the content
    through a tool when it needs it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ref: str = Field(description="source id, fact id or offloaded-artifact id")
    kind: Literal["source", "fact", "artifact"]
    summary: str = Field(max_length=300, description="title and what it holds, one line")


# Fields of a task envelope a receiving role may declare in `Role.task_fields`.
TASK_FIELDS = ("task_id", "version", "lineage", "artifacts")


class Instruction(PayloadModel):
    """A task for a role, as a task-state envelope: the task is the message's content;
    the envelope says which task it is (`task_id`, `version`), where it came from
    (`lineage`: its parent task, that task's parent, ... up to the user's goal) and what
    the team already holds for it (`artifacts`, by reference). A receiving role gets
    only the fields it declares (`Role.task_fields`)."""

    type: Literal["instruction"] = "instruction"
    task_id: str | None = Field(default=None, description="'t0' is the user's goal; 't<round>.<n>' a sub-task")
    version: int = Field(default=1, ge=1, description="bumped when the same task is handed out again")
    lineage: tuple[str, ...] = Field(default=(), description="parent task id first, up to the root")
    artifacts: tuple[ArtifactRef, ...] = ()

    def path(self) -> str:
        """Root-first lineage ending in this task, as shown in inspect and on the run page."""
        return " > ".join([*reversed(self.lineage), self.task_id or "?"])


class Conclusion(PayloadModel):
    """A sourced finding (the message's content and references)."""

    type: Literal["conclusion"] = "conclusion"
    question: str | None = Field(default=None, description="the instruction's question this answers")
    subject: str | None = Field(default=None, description="normalised subject key; a newer finding on the "
                                                          "same subject supersedes the older one")
    verbatim_fact: str | None = Field(default=None, description="fact id, when the text was copied by code")
    # Written only when it names something: most conclusions restate nothing, and their
    # records (run log, checkpoints) need not carry an empty list.
    restates: tuple[str, ...] = Field(default=(), exclude_if=lambda facts: not facts,
                                      description="fact ids this text states with their figures in another "
                                                  "spelling (a role restated a conclusion that stated them: "
                                                  "`Turn.restate`)")
    task_id: str | None = Field(default=None, description="the task (instruction envelope) this answers")
    confidence: float | None = Field(default=None, ge=0.0, le=1.0,
                                     description="how much of the text its cited sources hold, by code: 1.0 "
                                                 "for a sentence copied from the source; None when nothing "
                                                 "answers")


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


class Question(PayloadModel):
    """A question one role asks the role with a capability (`to="search"`): the text
    is the message's content; the answer comes back as an `answer` message whose
    `relation` is this message's id."""

    type: Literal["question"] = "question"
    task_id: str | None = Field(default=None, description="the task the asker is working on, if any")


class Answer(PayloadModel):
    """The reply to a `question` message, addressed to whoever asked (the message's
    content is the answer, its references the sources)."""

    type: Literal["answer"] = "answer"
    question: str = Field(description="the question's text, as asked")
    answered: bool = Field(description="False: the answerer found nothing that holds up")
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)


class ReportMessage(PayloadModel):
    """A report draft for review: the structured draft, its Markdown and its footer."""

    type: Literal["report"] = "report"
    draft: ReportDraft
    markdown: str
    footer: str = ""


AnyPayload = Instruction | Conclusion | Critique | Question | Answer | ReportMessage
Payload = Annotated[AnyPayload, Field(discriminator="type")]
