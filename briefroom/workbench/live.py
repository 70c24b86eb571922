"""Runs the workbench starts, answers and stops: the CLI's composition in a worker thread.

A run is `new_run` (or `resumed_run`) and `execute_run`, exactly as `briefroom research`
and `resume` build it. A run that asks its user (plan review, clarifying questions) is
left paused at the question, checkpointed, as the CLI leaves it without a terminal; the
user's answer resumes it through `resumed_run` with a reviewer that gives that answer.
So a paused run survives the ui being stopped, and `briefroom resume` can answer it too.
One run goes at a time: the runs of one data directory share its stores, and the model
shares the machine.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from briefroom import runs
from briefroom.errors import BriefroomError
from briefroom.protocol.redaction import redact_text
from briefroom.review import ClarifyRequest, PlanReviewRequest, ReviewError, check_answer
from briefroom.run import Progress, RunHooks, RunLaunch, execute_run, resumed_run

UserRequest = PlanReviewRequest | ClarifyRequest
PROGRESS_LINES = 300


class Busy(BriefroomError):
    """Another run is going in this workbench."""


class StoppedFromWorkbench(runs.RunStopped):
    """The user pressed stop: the run ends interrupted at its next step, resumable."""


@dataclass
class LiveRun:
    """What the workbench knows of a run beyond its directory: its worker thread, the
    question it waits on, its progress lines."""

    name: str
    run_dir: Path
    state: str = "starting"  # starting | running | waiting | done | failed | interrupted
    waiting_for: UserRequest | None = None
    error: str | None = None
    progress: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=PROGRESS_LINES))
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    @property
    def active(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def view(self) -> dict[str, Any]:
        return {"name": self.name, "state": self.state, "error": self.error,
                "waiting_for": self.waiting_for.model_dump(mode="json") if self.waiting_for else None,
                "progress": list(self.progress)[-1:]}


class Runner:
    """The workbench's runs by name (the run directory's), one worker at a time."""

    def __init__(self) -> None:
        self._runs: dict[str, LiveRun] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> LiveRun | None:
        with self._lock:
            return self._runs.get(name)

    def start(self, launch_new: Callable[[], RunLaunch]) -> LiveRun:
        """A new run: `launch_new` is `new_run` with the request's checks (a ConfigError
        before any thread starts); the run goes on in a worker."""
        with self._lock:
            self._check_free()
            launch = launch_new()
            live = LiveRun(launch.run_dir.name, launch.run_dir)
            self._runs[live.name] = live
            self._spawn(live, lambda: launch)
        return live

    def answer(self, name: str, run_dir: Path, answer: dict[str, Any]) -> LiveRun:
        """The user's answer to the question a paused run waits on: checked against it
        (a ReviewError in one line), then the run resumes with it."""
        with self._lock:
            self._check_free()
            live = self._runs.get(name)
            if live is None or live.waiting_for is None:
                raise ReviewError("this run is not waiting for an answer (open it again to see where it stands)")
            check_answer(answer, live.waiting_for)
            given = [answer]

            def reviewer(request: UserRequest) -> dict[str, Any] | None:
                # the answer goes to the question it was given for; a next question pauses again
                if given:
                    return given.pop()
                live.waiting_for = request
                return None

            live.waiting_for, live.error, live.stop = None, None, threading.Event()
            self._spawn(live, lambda: resumed_run(run_dir, reviewer=reviewer))
        return live

    def find_question(self, name: str, run_dir: Path) -> LiveRun:
        """A run paused at a question by another process (the CLI, an earlier ui): resumed
        with a reviewer that only notes the question, so it pauses again at once."""
        with self._lock:
            live = self._runs.get(name)
            if live is not None and (live.active or live.waiting_for is not None):
                return live
            self._check_free()
            live = LiveRun(name, run_dir)
            self._runs[name] = live

            def note(request: UserRequest) -> None:
                live.waiting_for = request

            self._spawn(live, lambda: resumed_run(run_dir, reviewer=note))
        return live

    def stop(self, name: str) -> bool:
        live = self.get(name)
        if live is None or not live.active:
            return False
        live.stop.set()
        return True

    def _check_free(self) -> None:
        going = [r.name for r in self._runs.values() if r.active]
        if going:
            raise Busy(f"the run {going[0]} is going; wait for it, or stop it, before starting another")

    def _spawn(self, live: LiveRun, launch: Callable[[], RunLaunch]) -> None:
        live.state = "running"
        live.thread = threading.Thread(target=self._work, args=(live, launch), name=f"run-{live.name}", daemon=True)
        live.thread.start()

    def _work(self, live: LiveRun, launch: Callable[[], RunLaunch]) -> None:
        def progress(p: Progress) -> None:
            live.progress.append(asdict(p))
            if live.stop.is_set():  # the jobs' way: a step boundary ends the run, checkpointed
                raise StoppedFromWorkbench("stopped from the workbench")

        try:
            result = execute_run(launch(), RunHooks(progress=progress))
        except BaseException as exc:  # noqa: B036 - a worker thread: whatever ends the run is its status
            live.state = _status_of(live.run_dir, "failed")
            live.error = redact_text(" ".join(str(exc).split())[:500]) or type(exc).__name__
            return
        if result.waiting_for is not None:
            live.waiting_for = result.waiting_for
        live.state = "waiting" if result.status == "paused" and live.waiting_for is not None else result.status


def _status_of(run_dir: Path, default: str) -> str:
    try:
        return runs.load(run_dir).status
    except BriefroomError:
        return default
