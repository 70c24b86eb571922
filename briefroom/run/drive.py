"""Driving a composed run: the graph streams until it ends, pauses after the round it
was asked to stop at, or waits on a question for its user; then the run is paused or
finished. run.json follows the rounds as they end, so a crash mid-run still says how
far the run got.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.types import Command

from briefroom import runs
from briefroom.agents.run_context import RunContext
from briefroom.events import RunPaused
from briefroom.files import write_atomic
from briefroom.graph.routing import ROUND_END
from briefroom.records import Charter
from briefroom.review import Reviewer, pending_request
from briefroom.run.compose import RunParts
from briefroom.run.finish import finish
from briefroom.run.request import RunHooks, RunResult, UpdateFn
from briefroom.state.schema import AgentState


def drive(parts: RunParts, hooks: RunHooks, stop_after_round: int | None) -> RunResult:
    """Run the graph, then pause the run (on purpose, or for its user) or finish it."""
    launch = parts.launch
    run_dir, record = launch.run_dir, launch.record
    snapshot = _stream(parts.thread.graph, parts.graph_input, parts.thread.config, parts.ctx, run_dir, record,
                       stop_after_round, parts.reviewer, hooks.on_update)
    state: AgentState = snapshot.values  # type: ignore[assignment]
    if snapshot.next:  # the checkpoint holds everything
        asked = pending_request(snapshot)
        # waiting_for is on the line only when the run waits for its user
        parts.log.write(RunPaused(round=record.round, next=list(snapshot.next), waiting_for=asked.kind) if asked
                        else RunPaused(round=record.round, next=list(snapshot.next)))
        runs.update(run_dir, record, status="paused")
        return RunResult(run_dir, None, state, parts.pool.labels, parts.log.events, status="paused",
                         waiting_for=asked)
    result = finish(parts, state)
    runs.update(run_dir, record, status="done", round=int(state.get("round", record.round)))
    return result


def _stream(graph: Any, graph_input: Any, config: dict[str, Any], ctx: RunContext, run_dir: Path,
            record: runs.RunRecord, stop_after_round: int | None, reviewer: Reviewer | None = None,
            on_update: UpdateFn | None = None) -> Any:
    """Run the graph to its end (or to the end of round `stop_after_round`), saving the
    round reached in run.json as rounds end; returns the last snapshot. A question for
    the user (an interrupt, `review.py`) goes to `reviewer`; the run goes on with its
    answer, or stays paused at the question when there is none."""
    pause = [ROUND_END] if stop_after_round is not None else None
    while True:
        if graph_input is None:  # resuming: the checkpoint may be waiting on a question
            asked = pending_request(graph.get_state(config))
            if asked is not None:
                answer = reviewer(asked) if reviewer is not None else None
                if answer is None:
                    return graph.get_state(config)
                graph_input = Command(resume=answer)
        for update in graph.stream(graph_input, config=config, context=ctx, durability="sync",
                                   stream_mode="updates", interrupt_after=pause):
            if on_update is not None:
                on_update(update)
            if isinstance(update, dict) and update.get(ROUND_END):
                values = graph.get_state(config).values
                record.round = int(values["round"]) - (0 if values.get("done") else 1)
                runs.save(run_dir, record)
        snapshot = graph.get_state(config)
        _save_charter(run_dir, snapshot.values.get("charter"))
        if pending_request(snapshot) is not None:
            graph_input = None  # the user is asked at the top of the loop
            continue
        if not snapshot.next or stop_after_round is None or record.round >= stop_after_round:
            return snapshot
        graph_input = None  # a round ended before the one to pause after: go on


def _save_charter(run_dir: Path, charter: Charter | None) -> None:
    """charter.json as the run now holds it: the user's answers add constraints."""
    path = run_dir / "charter.json"
    text = charter.model_dump_json(indent=2) + "\n" if charter is not None else None
    if text is not None and (not path.is_file() or path.read_text(encoding="utf-8") != text):
        write_atomic(path, text)
