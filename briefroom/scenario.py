"""Scenarios: a question, a corpus, expectations and a cassette, replayable offline.

`scenarios/<name>/scenario.yaml` + `corpus/` + `cassette.jsonl` + `report.md` (the
report the recorded run produced). Replaying feeds the recorded responses back; the
run must send the same prompts and produce the same report.

A scenario may also keep recordings of other models, one folder each:
`scenarios/<name>/recordings/<tag>/` with `recording.yaml` (how that model ran:
`RecordingSettings`), `cassette.jsonl` and `report.md`. It replays the scenario's
question over the scenario's corpus and is scored by its answer key, so a figure
measured with a larger model can be checked by anyone, offline (`Recorded`).
"""

from __future__ import annotations

import difflib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from briefroom.config import Settings
from briefroom.errors import ConfigError
from briefroom.models.cassette import CASSETTE_FILE, Cassette, ReplyBank
from briefroom.records import Charter

SCENARIO_FILE = "scenario.yaml"
RECORDINGS_DIR = "recordings"
RECORDING_FILE = "recording.yaml"


# A long question stays on one line of scenario.yaml (a folded one lost its end to a
# line-based edit once, and the recording then asked half a question).
QUESTION_WIDTH = 1_000_000


class ExpectedFact(BaseModel):
    text: str
    source: str | None = None


class RecordedHandle(BaseModel):
    """What replay must reproduce about a role's model: it changes prompts and turns."""

    label: str
    tool_mode: str = "auto"
    structured_mode: str = "json_object"
    context_window: int = 8192


class AnswerKeyItem(BaseModel):
    """A fact a good report states; `any` lists accepted spellings (case and spacing ignored)."""

    name: str = Field(min_length=1)
    any: list[str] = Field(min_length=1)
    part: int = Field(default=1, ge=1, description="which of the question's parts it answers (1-based)")


Split = Literal["dev", "test"]
# What a scenario tempts the team to get wrong: a less credible source's figure
# (credibility), a neighbouring measure (measure: sold vs installed, capacity vs
# generation), an old forecast for the year asked about (time), or the same measure of
# something else: a rival, one part of the whole, a neighbouring kind (subject).
TrapKind = Literal["credibility", "measure", "time", "subject"]


class Scenario(BaseModel):
    name: str
    question: str
    language: str = Field(default="en", description="the question's language: en or zh")
    parts: list[str] = Field(default_factory=list, description="the question's parts, in order")
    answer_key: list[AnswerKeyItem] = Field(default_factory=list)
    must_not: list[str] = Field(default_factory=list, description="strings that mean the report fell for a trap")
    unanswerable: bool = Field(default=False, description="the corpus does not answer; the report must say so")
    split: Split = Field(default="test", description="dev: prompts and thresholds may be tuned on it; test: never")
    trap: list[TrapKind] = Field(default_factory=list, description="the kinds of trap the corpus sets")
    authoritative: list[str] = Field(default_factory=list,
                                     description="spellings of the authoritative figure the short answer must give")
    note: str | None = Field(default=None, description="what a reader of the answer key should know (why a trap "
                             "is one); a field, not a YAML comment, so a re-recording keeps it")
    context: str = Field(default="layered", description="the context strategy the recording ran with")
    parallel: int = Field(default=1, ge=1, description="searcher instances the recording ran with (--parallel); "
                                                       "its recorded calls are kept per instance")
    corpus: str = "corpus"
    rounds: int = Field(default=2, ge=1)
    max_revisions: int = Field(default=1, ge=0)
    constraints: list[str] = Field(default_factory=list)
    acceptance_criteria: list[str] = Field(default_factory=list)
    expected_facts: list[ExpectedFact] = Field(default_factory=list)
    recorded_with: str | None = None
    handles: dict[str, RecordedHandle] = Field(default_factory=dict,
                                               description="per role, the model settings that shaped its prompts")
    roles_dirs: list[str] = Field(default_factory=list,
                                  description="plugin roles the recording ran with, copied under roles/")

    @field_validator("trap", mode="before")
    @classmethod
    def _one_trap_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value  # `trap: credibility` reads as a list of one

    @model_validator(mode="after")
    def _credibility_names_its_figure(self) -> "Scenario":
        # Without the authoritative figure, a credibility trap could only be scored by its
        # must_not strings, and a short answer that dodges the question would pass.
        if "credibility" in self.trap and not self.authoritative:
            raise ValueError("trap: credibility needs authoritative: [the figure the short answer must give]")
        return self

    @property
    def evaluable(self) -> bool:
        return bool(self.answer_key) or self.unanswerable

    @classmethod
    def load(cls, directory: Path) -> "Scenario":
        path = directory / SCENARIO_FILE
        if not path.is_file():
            raise ConfigError(f"not a scenario folder (no {SCENARIO_FILE}): {directory}")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of fields")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"]))  # empty for a rule across fields
            raise ConfigError(f"{path}: {where + ': ' if where else ''}{first['msg']}") from exc

    def corpus_dir(self, directory: Path) -> Path:
        return directory / self.corpus

    def role_dirs(self, directory: Path) -> list[Path]:
        return [directory / d for d in self.roles_dirs]


class RecordingSettings(BaseModel):
    """What a recording of a scenario by another model says about how that model ran:
    the scenario's own fields of the same names, for this recording."""

    model_config = ConfigDict(extra="forbid")

    recorded_with: str
    handles: dict[str, RecordedHandle] = Field(default_factory=dict)
    context: str = "layered"
    parallel: int = Field(default=1, ge=1)
    rounds: int = Field(default=2, ge=1)
    max_revisions: int = Field(default=1, ge=0)


@dataclass(frozen=True)
class Recorded:
    """One recording of a scenario, ready to replay: the scenario as that recording ran
    it, the scenario's folder (corpus, roles) and the folder holding the recording
    (cassette, report, token counts, review answers): the same folder for the
    scenario's own recording, `recordings/<tag>/` for another model's."""

    scenario: Scenario
    folder: Path
    recording: Path


def parent_scenario(directory: Path) -> Path | None:
    """The scenario folder `directory` is a recording folder of (`<scenario>/recordings/<tag>`), if it is one."""
    if directory.parent.name == RECORDINGS_DIR and (directory.parent.parent / SCENARIO_FILE).is_file():
        return directory.parent.parent
    return None


def load_recorded(directory: Path) -> Recorded:
    """A scenario folder as its own recording replays, or a `recordings/<tag>/` folder as
    that model's recording of its scenario replays."""
    folder = parent_scenario(directory)
    if folder is None:
        return Recorded(Scenario.load(directory), directory, directory)
    path = directory / RECORDING_FILE
    if not path.is_file():
        raise ConfigError(f"not a recording folder (no {RECORDING_FILE}): {directory}")
    try:
        fields = RecordingSettings.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (yaml.YAMLError, ValidationError) as exc:
        raise ConfigError(f"{path}: not a recording's settings ({str(exc).splitlines()[0]})") from exc
    own = {name: getattr(fields, name) for name in RecordingSettings.model_fields}  # typed, not dumped to dicts
    return Recorded(Scenario.load(folder).model_copy(update=own), folder, directory)


def recorded_replies(directory: Path) -> ReplyBank:
    """The replies of the recording in `directory` (a scenario's own or a
    `recordings/<tag>/` folder), for a re-recording that reuses its unchanged calls."""
    if not (directory / CASSETTE_FILE).is_file():
        raise ConfigError(f"--reuse: {directory} holds no recording to reuse (no {CASSETTE_FILE})")
    recorded = load_recorded(directory)
    return ReplyBank(Cassette.load(directory).entries,
                     {role: h.label for role, h in recorded.scenario.handles.items()})


def recording_of(folder: Path, tag: str | None) -> Path:
    """Where the recording `tag` of the scenario in `folder` lives (None: its own)."""
    return folder if tag is None else folder / RECORDINGS_DIR / tag


def check_record_target(directory: Path, question: str, corpus: list[Path]) -> None:
    """Before a recording run: a recording folder of a scenario records that scenario's
    question over its corpus (document paths are part of the prompts), or its replay
    would answer another question. A scenario folder's own scenario.yaml, whose answer key
    the recording keeps, must load before the run, not after it: a key that does not
    validate ("must_not: [36.9]", a number where a string goes) ended a twenty-minute
    recording with nothing saved."""
    folder = parent_scenario(directory)
    if folder is None:
        if (directory / SCENARIO_FILE).exists():
            Scenario.load(directory)
        return
    scenario = Scenario.load(folder)
    if " ".join(question.split()) != " ".join(scenario.question.split()):
        raise ConfigError(f"{directory} records {folder.name}: ask its question ({scenario.question!r})")
    if [p.resolve() for p in corpus] != [scenario.corpus_dir(folder).resolve()]:
        raise ConfigError(f"{directory} records {folder.name}: give --corpus {scenario.corpus_dir(folder)}")


def write_scenario(directory: Path, request, settings: Settings, charter: Charter, cassette: Cassette,
                   report: str, label: str, handles: dict[str, RecordedHandle]) -> None:
    """Save a live run as a scenario (corpus copied, cassette and report written), or,
    into a scenario's `recordings/<tag>/`, as that model's recording of it."""
    if parent_scenario(directory) is not None:
        _write_recording(directory, settings, charter, cassette, report, label, handles)
        return
    directory.mkdir(parents=True, exist_ok=True)
    sources = [Path(p).resolve() for p in request.corpus]
    if len(sources) != 1:
        raise ConfigError("--record supports exactly one --corpus folder")
    # The copy keeps the folder's name: document paths (folder/file) are part of prompts.
    corpus_target = directory / sources[0].name
    if sources[0] != corpus_target.resolve():
        if corpus_target.exists():
            shutil.rmtree(corpus_target)
        shutil.copytree(sources[0], corpus_target)
    roles_dirs = []
    for n, folder in enumerate(Path(p).resolve() for p in request.roles_dirs):
        target = directory / "roles" / f"{n}-{folder.name}"
        if folder != target.resolve():
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(folder, target, ignore=shutil.ignore_patterns("__pycache__"))
        roles_dirs.append(str(target.relative_to(directory)))
    name = directory.name
    existing = Scenario.load(directory) if (directory / SCENARIO_FILE).exists() else None
    # What a person wrote about the scenario (answer key, traps, parts) survives a re-recording.
    kept = existing.model_dump(include={"language", "parts", "answer_key", "must_not", "unanswerable",
                                        "expected_facts", "split", "trap", "authoritative", "note"}) if existing else {}
    scenario = Scenario(**kept, name=name, question=charter.goal, corpus=corpus_target.name,
                        rounds=charter.max_rounds, max_revisions=charter.max_revisions,
                        constraints=list(charter.constraints), acceptance_criteria=list(request.acceptance_criteria),
                        recorded_with=label, handles=handles, roles_dirs=roles_dirs, context=settings.context,
                        parallel=settings.parallel)
    (directory / SCENARIO_FILE).write_text(yaml.safe_dump(scenario.model_dump(mode="json"), sort_keys=False,
                                                          allow_unicode=True, width=QUESTION_WIDTH), encoding="utf-8")
    cassette.save(directory)
    (directory / "report.md").write_text(report, encoding="utf-8")


def _write_recording(directory: Path, settings: Settings, charter: Charter, cassette: Cassette, report: str,
                     label: str, handles: dict[str, RecordedHandle]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    fields = RecordingSettings(recorded_with=label, handles=handles, context=settings.context,
                               parallel=settings.parallel, rounds=charter.max_rounds,
                               max_revisions=charter.max_revisions)
    (directory / RECORDING_FILE).write_text(yaml.safe_dump(fields.model_dump(mode="json"), sort_keys=False,
                                                           allow_unicode=True), encoding="utf-8")
    cassette.save(directory)
    (directory / "report.md").write_text(report, encoding="utf-8")


def report_diff(expected: str, actual: str) -> str:
    return "\n".join(difflib.unified_diff(expected.splitlines(), actual.splitlines(), "recorded report.md",
                                          "replayed report.md", lineterm=""))
