"""What a research run is asked, checked in one place: `RunInput`.

The CLI's `research` command and the served graph (`server/langgraph_app.py`) both
take a question, corpus folders, constraints and acceptance criteria from outside;
both check them here, so a served run and a CLI run refuse the same inputs with the
same one-line message (`checked_input` raises a `ConfigError`).

The checks are of shape and type only: nothing here touches the disk. Whether a corpus
folder exists, and whether a served client may read it, is the caller's question (the
CLI lets a user read their own folders; the server has an allow-list).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError

from briefroom.errors import ConfigError

# A constraint or criterion goes into every prompt as the question does; the same bound.
MAX_LINE_CHARS = 2000
MAX_ITEMS = 50  # folders, constraints or criteria in one run


def _clean_question(question: str) -> str:
    # briefroom.run holds the question's checks (the library entry point applies them too);
    # imported here, not at the top, because briefroom.run takes seconds to import and the
    # LangGraph server imports this module when it starts.
    from briefroom.run import clean_question

    try:
        return clean_question(question)
    except ConfigError as exc:  # pydantic reports a ValueError as this field's error
        raise ValueError(str(exc)) from exc


def _folder(value: Any) -> Path:
    # JSON gives text, the CLI gives Path; a number or a list is not a folder. Checked
    # before pydantic's own coercion, which would turn some of them into paths.
    if isinstance(value, Path):
        return value
    if isinstance(value, str) and value.strip() and "\x00" not in value:
        return Path(value)
    raise ValueError(f"a corpus folder is a path as text, not {_shown(value)}")


def _shown(value: Any) -> str:
    return "an empty text" if value == "" else f"{type(value).__name__} {str(value)[:40]!r}"


Question = Annotated[str, Strict(), AfterValidator(_clean_question)]
Folder = Annotated[Path, BeforeValidator(_folder)]
Line = Annotated[str, Strict(), Field(min_length=1, max_length=MAX_LINE_CHARS)]


class RunInput(BaseModel):
    """A run's question and corpus, as a client or the command line gave them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: Question
    # A JSON text where a list belongs is refused, not read one character at a time.
    corpus: Annotated[list[Folder], Strict(), Field(max_length=MAX_ITEMS)] = []
    constraints: Annotated[list[Line], Strict(), Field(max_length=MAX_ITEMS)] = []
    acceptance_criteria: Annotated[list[Line], Strict(), Field(max_length=MAX_ITEMS)] = []


def one_line(error: ValidationError) -> str:
    """A ValidationError as one line a user can act on: `field: what is wrong; ...`."""
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "input"
        message = str(item["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {message}")
    return "; ".join(problems)


def checked_input(**fields: Any) -> RunInput:
    """`RunInput` from these fields, or a ConfigError whose message says every problem."""
    try:
        return RunInput.model_validate(fields)
    except ValidationError as exc:
        raise ConfigError(f"invalid run input: {one_line(exc)}") from None
