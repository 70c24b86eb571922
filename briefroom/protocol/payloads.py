"""The structured part of each message type: what a receiver may rely on.

Every message carries one payload, and its `type` names the message's type; the bus
validates that on publish, so a role reads `message.payload_as(Conclusion)` and gets
typed fields instead of guessing dictionary keys.

The set of message types is open: a payload class registered with `register_payload`
makes its type publishable, routable, loggable and checkpointable. The types below are
the ones the framework itself reads (task envelopes, findings the round summaries and
the memory gates read, reviews the bus ranks first, questions asked of a capability and
their answers); a role that publishes a kind of message of its own registers its payload
in its own file, beside the role (the Writer's report drafts: `agents/writer.py`).
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, SerializeAsAny


class PayloadModel(BaseModel):
    # forbid: a sender's typo in a field name fails on publish instead of being dropped
    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str
    # What becomes of a message of this type when it leaves the whiteboard (the values of
    # `messages.ArchivePolicy`): a payload class declares it, so no table lists the types.
    archive_policy: ClassVar[Literal["summarize", "archive", "discard"]] = "summarize"


PM = TypeVar("PM", bound=type[PayloadModel])
_REGISTERED: dict[str, type[PayloadModel]] = {}


def type_name(cls: type[PayloadModel]) -> str:
    """The message type a payload class carries: the default of its `type` field."""
    name = cls.model_fields["type"].default
    if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        raise ValueError(f"payload {cls.__name__}: declare `type: Literal[\"name\"] = \"name\"` with a "
                         f"lower-case identifier as its message type, not {name!r}")
    return name


def register_payload(cls: PM) -> PM:
    """Make `cls`'s message type known (a class decorator). One type has one payload
    class: a second class claiming a registered name would give receivers two shapes
    for one type, so it fails (the same class, imported again, is fine)."""
    name = type_name(cls)
    held = _REGISTERED.get(name)
    if held is not None and _origin(held) != _origin(cls):
        raise ValueError(f"message type {name!r} is already carried by {held.__module__}.{held.__qualname__}; "
                         f"{cls.__module__}.{cls.__qualname__} must name another type")
    _REGISTERED[name] = cls
    return cls


def _origin(cls: type) -> tuple[str, str]:
    # A role file loaded again (a second run in one process) defines its class anew
    # under the same module name: that is the same payload, not a rival one.
    return cls.__module__, cls.__qualname__


# The entry-point group through which a package names the payload classes it registers
# (`name = "module:Class"`, the name being the message type). A process that reads a
# run log or a message it never built (inspect, the run page, the workbench) loads the
# class from there instead of failing on a type whose role it never imported.
PAYLOAD_ENTRY_POINTS = "briefroom.payloads"
_LOOKED_UP: set[str] = set()


def payload_class(name: str) -> type[PayloadModel] | None:
    """The payload class registered for a message type: registered in this process, or
    named by an installed package's `briefroom.payloads` entry point (loaded once)."""
    key = str(name)
    if key not in _REGISTERED and key not in _LOOKED_UP:
        _LOOKED_UP.add(key)
        for point in entry_points(group=PAYLOAD_ENTRY_POINTS, name=key):
            point.load()  # importing the class's module registers it
    return _REGISTERED.get(key)


def registered_payloads() -> tuple[type[PayloadModel], ...]:
    """Every registered payload class, in the order they were registered."""
    return tuple(_REGISTERED.values())


def _payload_from(value: Any) -> PayloadModel:
    """A message body's payload, from a payload object or its dictionary (a log line, a
    checkpoint): rebuilt as the class its `type` is registered to, never another."""
    if isinstance(value, PayloadModel):
        held = payload_class(value.type)
        if held is None or _origin(held) != _origin(type(value)):
            raise ValueError(f"payload {type(value).__name__} of type {value.type!r} is not registered "
                             "(see briefroom.protocol.payloads.register_payload)")
        return value
    if isinstance(value, dict):
        cls = payload_class(str(value.get("type")))
        if cls is None:
            known = ", ".join(sorted(_REGISTERED))
            raise ValueError(f"unknown payload type {value.get('type')!r}: registered are {known}")
        return cls.model_validate(value)
    raise ValueError(f"a payload is a registered payload model or its dictionary, not {type(value).__name__}")


# A body's payload: any registered class, validated by its `type` and written out with
# all the fields of its own class (not only the base's).
Payload = Annotated[SerializeAsAny[PayloadModel], PlainValidator(_payload_from)]


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


@register_payload
class Instruction(PayloadModel):
    """A task for a role, as a task-state envelope: the task is the message's content;
    the envelope says which task it is (`task_id`, `version`), where it came from
    (`lineage`: its parent task, that task's parent, ... up to the user's goal) and what
    the team already holds for it (`artifacts`, by reference). A receiving role gets
    only the fields it declares (`Role.task_fields`)."""

    type: Literal["instruction"] = "instruction"
    # A task keeps its identity for the whole run (lineage, versions): archived verbatim.
    archive_policy: ClassVar[Literal["summarize", "archive", "discard"]] = "archive"
    task_id: str | None = Field(default=None, description="'t0' is the user's goal; 't<round>.<n>' a sub-task")
    version: int = Field(default=1, ge=1, description="bumped when the same task is handed out again")
    lineage: tuple[str, ...] = Field(default=(), description="parent task id first, up to the root")
    artifacts: tuple[ArtifactRef, ...] = ()

    def path(self) -> str:
        """Root-first lineage ending in this task, as shown in inspect and on the run page."""
        return " > ".join([*reversed(self.lineage), self.task_id or "?"])


@register_payload
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


@register_payload
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


@register_payload
class Question(PayloadModel):
    """A question one role asks the role with a capability (`to="search"`): the text
    is the message's content; the answer comes back as an `answer` message whose
    `relation` is this message's id."""

    type: Literal["question"] = "question"
    task_id: str | None = Field(default=None, description="the task the asker is working on, if any")


@register_payload
class Answer(PayloadModel):
    """The reply to a `question` message, addressed to whoever asked (the message's
    content is the answer, its references the sources)."""

    type: Literal["answer"] = "answer"
    question: str = Field(description="the question's text, as asked")
    answered: bool = Field(description="False: the answerer found nothing that holds up")
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
