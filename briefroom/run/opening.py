"""What a run starts from: the log's first lines, what long-term memory gives it, and
the graph's input (a new run's initial state, or nothing for a resumed run, whose
counters come back from its checkpoint).

A resumed run must build the prompts it would have built, so what memory gave it is
kept in its run directory (memory.json) rather than read from the store again.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from briefroom import runs
from briefroom.agents.run_context import RunContext
from briefroom.corpus.index import CorpusIndex, SyncStats
from briefroom.events import Index, ResumedAfter, RunResume, RunStart, SkippedFile
from briefroom.files import write_atomic
from briefroom.memory.reading import read_memory, remembered_facts
from briefroom.memory.zones import MemoryBackend, Recalled
from briefroom.protocol.bus import Bus
from briefroom.protocol.messages import MsgType, Priority, make_message
from briefroom.protocol.payloads import Instruction
from briefroom.protocol.prompt_assembly import Item
from briefroom.records import Charter, Fact, SourceRecord
from briefroom.review import RecordedAnswers, Reviewer, ReviewOptions, load_recorded_review
from briefroom.run.launch import RunLaunch
from briefroom.run.request import ResearchRequest
from briefroom.run.thread import Thread
from briefroom.runlog import MovedAside, RunLog
from briefroom.state.schema import AgentState

MEMORY_ITEMS_FILE = "memory.json"


@dataclass(frozen=True)
class Opening:
    """What a run starts with besides its charter: the memory items its Planner is
    given, and (a new run) the verified facts memory holds, with their sources."""

    memory_items: list[Item]
    facts: list[Fact] = field(default_factory=list)
    sources: dict[str, SourceRecord] = field(default_factory=dict)


def begin(launch: RunLaunch, thread: Thread, log: RunLog, moved: MovedAside, charter: Charter, stats: SyncStats,
          index_seconds: float, memory: MemoryBackend | None, index: CorpusIndex) -> Opening:
    """The log's first lines and what memory gives the run. A resumed run reads its
    memory items from its run directory, not the store (which may have changed since),
    so its prompts are the ones it would have had."""
    run_dir, record = launch.run_dir, launch.record
    if thread.resumed:
        # How the previous attempt ended, in one line; its events are in run.interrupted.jsonl.
        log.write(RunResume(round=thread.start.values.get("round"), next=list(thread.start.next),
                            moved_lines=moved.lines, after=moved.stop or ResumedAfter(event="killed"),
                            documents=stats.documents, settings=record.settings))
        return Opening(_load_memory_items(run_dir))
    log.write(RunStart(question=charter.goal, rounds=charter.max_rounds, roles=[r.name for r in thread.roles],
                       corpus=[str(p) for p in launch.request.corpus]))
    log.write(Index(documents=stats.documents, embedded_chunks=stats.embedded_chunks,
                    reused_documents=stats.reused_documents, seconds=index_seconds,
                    skipped=[SkippedFile(path=s.path, reason=s.reason) for s in stats.skipped]))
    items: list[Item] = []
    used_skills: list[str] = []
    recalled: list[Recalled] = []
    namespace = launch.namespace
    if memory is not None and namespace is not None:
        readers = ", ".join(r.name for r in thread.roles if r.reads_memory)
        items, used_skills, recalled = read_memory(memory, namespace, launch.settings, charter.goal, log, readers)
    _save_memory_items(run_dir, items)
    runs.update(run_dir, record, used_skills=used_skills)
    facts, sources = remembered_facts(recalled, index)
    return Opening(items, facts, sources)


def graph_input(launch: RunLaunch, thread: Thread, ctx: RunContext, charter: Charter, opening: Opening,
                bus: Bus) -> tuple[Any, Reviewer | None]:
    """The graph's input and who answers the run's questions: a new run's initial
    state; for a resumed one none, with its counters restored from the checkpoint's
    ledger (and a replay's cassette wound to the same place)."""
    review, reviewer = _review_of(launch.request, thread.start.values.get("review") if thread.resumed else None)
    if thread.resumed:
        ctx.restore(thread.start.values.get("ledger", {}))
        if launch.request.cassette is not None:
            launch.request.cassette.seek(ctx.ledger()["model_calls"])
        return None, reviewer
    return initial_state(charter, bus.address("plan"), opening.facts, opening.sources, log_seq=ctx.log.seq,
                         review=review), reviewer


def initial_state(charter: Charter, planner: str, facts: list[Fact] | None = None,
                  sources: dict[str, SourceRecord] | None = None, log_seq: int = 0,
                  review: ReviewOptions | None = None) -> AgentState:
    """The state a run starts from: the user's goal, addressed to `planner` (the role
    with the capability "plan")."""
    # The user's goal is the root task, t0: every sub-task's lineage ends in it.
    ask = make_message(sender="user", msg_type=MsgType.INSTRUCTION, receiver=planner, content=charter.goal,
                       round=1, seq=0, priority=Priority.P0, ttl_rounds=charter.max_rounds,
                       payload=Instruction(task_id="t0"))
    state = AgentState(charter=charter, round=1, whiteboard=[ask], revisions=0, done=False, report=None,
                       facts=list(facts or []), sources=dict(sources or {}),
                       ledger={"log_seq": log_seq, "tokens_used": 0, "model_calls": {}})
    if review is not None and review.any:  # only then: a run that asks nothing checkpoints as before
        state["review"] = {"plan": review.plan, "clarify": review.clarify}
    return state


def _review_of(request: ResearchRequest, state_review: Any) -> tuple[ReviewOptions, Reviewer | None]:
    """What the run asks its user, and who answers: a replay answers as its recording
    did (after the answers its checkpoint already holds), any other run its caller."""
    recorded = load_recorded_review(request.scenario) \
        if request.cassette is not None and request.scenario is not None else None
    if recorded is None:
        return request.review, request.reviewer
    return recorded.options, RecordedAnswers(recorded.answers[len((state_review or {}).get("answers", [])):])


def _save_memory_items(run_dir: Path, items: list[Item]) -> None:
    """What the Planner was given from memory at the start: a resumed run reads it from
    here, not from the store (which may have changed), so its prompts are the same."""
    write_atomic(run_dir / MEMORY_ITEMS_FILE, json.dumps([{**asdict(i), "priority": i.priority.value} for i in items],
                                                          ensure_ascii=False, indent=1) + "\n")


def _load_memory_items(run_dir: Path) -> list[Item]:
    path = run_dir / MEMORY_ITEMS_FILE
    if not path.is_file():
        return []
    return [Item(**{**raw, "priority": Priority(raw["priority"])}) for raw in json.loads(path.read_text("utf-8"))]
