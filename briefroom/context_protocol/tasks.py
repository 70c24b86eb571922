"""Task state: task envelopes (`protocol/payloads.Instruction`) for agents that are not briefroom.

Tasks, sub-tasks (lineage extended, version 1), re-issues (version + 1), artifact
references and the results recorded against each version, kept in memory and in
`tasks.json` of the protocol's directory.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from briefroom.errors import BriefroomError
from briefroom.files import write_atomic
from briefroom.protocol.payloads import ArtifactRef, Instruction
from briefroom.protocol.redaction import redact_text


class UnknownTask(BriefroomError):
    """A task id this protocol object never issued."""


class TaskResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    version: int
    text: str
    artifacts: tuple[ArtifactRef, ...] = ()
    recorded_at: float


class TaskState(BaseModel):
    """A task's envelope (id, version, lineage, artifact references), its text, its
    sub-tasks and the results recorded against each version."""

    model_config = ConfigDict(frozen=True)

    envelope: Instruction
    task: str
    children: tuple[str, ...] = ()
    results: tuple[TaskResult, ...] = ()

    @property
    def task_id(self) -> str:
        return str(self.envelope.task_id)

    @property
    def current_results(self) -> tuple[TaskResult, ...]:
        """Results recorded against the envelope's current version."""
        return tuple(r for r in self.results if r.version == self.envelope.version)


class TaskBook:
    """The tasks of one protocol directory, each write saved to `tasks.json` at once."""

    def __init__(self, root: Path, lock: threading.RLock) -> None:
        self.root = root
        self._lock = lock
        self._tasks: dict[str, TaskState] = {}
        self._roots = 0
        self._load_tasks()

    def create_task(self, task: str, *, artifacts: Sequence[ArtifactRef] = ()) -> TaskState:
        """A root task (the user's goal): id `t<n>`, version 1, no lineage."""
        with self._lock:
            task_id = f"t{self._roots}"
            self._roots += 1
            state = TaskState(envelope=Instruction(task_id=task_id, artifacts=tuple(_unique(artifacts))),
                              task=redact_text(task))
            return self._save(state)

    def create_subtask(self, parent_id: str, task: str, *, artifacts: Sequence[ArtifactRef] = ()) -> TaskState:
        """A child of `parent_id`: id `<parent>.<n>`, version 1, lineage = parent first, up to the root."""
        with self._lock:
            parent = self.task_state(parent_id)
            task_id = f"{parent_id}.{len(parent.children) + 1}"
            child = TaskState(envelope=Instruction(task_id=task_id, lineage=(parent_id, *parent.envelope.lineage),
                                                   artifacts=tuple(_unique(artifacts))),
                              task=redact_text(task))
            self._tasks[parent_id] = parent.model_copy(update={"children": (*parent.children, task_id)})
            return self._save(child)

    def reissue(self, task_id: str, task: str | None = None) -> TaskState:
        """Hand the same task out again (optionally reworded): version + 1; results of
        earlier versions stay, marked with their version."""
        with self._lock:
            state = self.task_state(task_id)
            envelope_ = state.envelope.model_copy(update={"version": state.envelope.version + 1})
            return self._save(state.model_copy(update={"envelope": envelope_,
                                                       "task": redact_text(task) if task is not None else state.task}))

    def attach_artifacts(self, task_id: str, refs: Sequence[ArtifactRef]) -> TaskState:
        """Add references (sources, facts, offloaded results) to a task's envelope; the
        envelope carries references, never content. Same version: the task did not change."""
        with self._lock:
            state = self.task_state(task_id)
            merged = tuple(_unique([*state.envelope.artifacts, *refs]))
            return self._save(state.model_copy(update={"envelope": state.envelope.model_copy(
                update={"artifacts": merged})}))

    def record_result(self, task_id: str, text: str, *, artifacts: Sequence[ArtifactRef] = ()) -> TaskState:
        """Record a result against the task's current version (redacted)."""
        with self._lock:
            state = self.task_state(task_id)
            result = TaskResult(version=state.envelope.version, text=redact_text(text),
                                artifacts=tuple(_unique(artifacts)), recorded_at=time.time())
            return self._save(state.model_copy(update={"results": (*state.results, result)}))

    def task_state(self, task_id: str) -> TaskState:
        """The task's envelope, text, sub-tasks and results."""
        with self._lock:
            state = self._tasks.get(task_id)
        if state is None:
            raise UnknownTask(f"no task {task_id!r} in {self.root}")
        return state

    def tasks(self) -> list[TaskState]:
        with self._lock:
            return list(self._tasks.values())

    def _save(self, state: TaskState) -> TaskState:
        self._tasks[state.task_id] = state
        data = {"roots": self._roots, "tasks": [s.model_dump(mode="json") for s in self._tasks.values()]}
        write_atomic(self.root / "tasks.json", json.dumps(data, ensure_ascii=False, indent=1))
        return state

    def _load_tasks(self) -> None:
        path = self.root / "tasks.json"
        if not path.is_file():
            return
        data = json.loads(path.read_text(encoding="utf-8"))
        self._roots = int(data.get("roots", 0))
        for raw in data.get("tasks", []):
            state = TaskState.model_validate(raw)
            self._tasks[state.task_id] = state


def _unique(refs: Sequence[ArtifactRef]) -> list[ArtifactRef]:
    return list({r.ref: r for r in refs}.values())
