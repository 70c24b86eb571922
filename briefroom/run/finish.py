"""After the graph: the report files, the memory gates and, for a recording, its
scenario. Every step gives the same result if it runs again, so a run resumed after a
crash in here finishes as it would have.
"""

from __future__ import annotations

import json
import time

from briefroom.errors import BriefroomError
from briefroom.events import MemoryGates, RunEnd
from briefroom.files import write_atomic
from briefroom.memory.gates import TeamRoles, apply_gates
from briefroom.models.served_tokens import ServedTokenCounter
from briefroom.protocol.redaction import redact_text
from briefroom.report.evidence import sources_extras
from briefroom.review import ReviewOptions, save_recorded_review
from briefroom.run.compose import RunParts
from briefroom.run.request import RunResult
from briefroom.state.schema import AgentState
from briefroom.web.tools import cite_web


def finish(parts: RunParts, state: AgentState) -> RunResult:
    """After the graph: report files, memory gates, the scenario of a recording. Each
    step gives the same result if it runs again (a resume after a crash in here)."""
    launch, ctx, log, pool, memory = parts.launch, parts.ctx, parts.log, parts.pool, parts.memory
    run_dir, record, settings, request = launch.run_dir, launch.record, launch.settings, launch.request
    namespace, recorder = launch.namespace, parts.recorder
    report = state.get("report")
    if report is None:
        raise BriefroomError("the run ended without a report (see run.jsonl)")
    markdown, web = report.markdown, dict[str, dict[str, str]]()
    if settings.web:  # web sources: cited by URL, with the time each page was retrieved
        markdown, web = cite_web(settings.data_dir, markdown, list(state.get("sources", {})))
    write_atomic(run_dir / "report.md", redact_text(markdown))
    all_sources = {sid: rec.model_dump(mode="json") for sid, rec in state.get("sources", {}).items()}
    # claims (each cited sentence -> source -> passage span) and kinds (each source's kind and date)
    extras = sources_extras(markdown, state.get("sources", {}), list(report.cited_sources))
    write_atomic(run_dir / "sources.json", json.dumps({"cited": list(report.cited_sources), "sources": all_sources,
                                                       **({"web": web} if web else {}), **extras},
                                                       indent=2, ensure_ascii=False) + "\n")
    if memory is not None and namespace is not None:
        started = time.perf_counter()
        decisions = apply_gates(memory, namespace, run_dir.name, state, [t for _, t in ctx.transcript],
                                record.used_skills, log, TeamRoles.of(ctx.bus))
        log.write(MemoryGates(seconds=round(time.perf_counter() - started, 4),
                              written=sum(d.accepted for d in decisions),
                              rejected=sum(not d.accepted for d in decisions)))
    log.write(RunEnd(accepted=report.accepted, repairs=len(report.repairs), rounds=state.get("round"),
                     cited=list(report.cited_sources), tokens_used=ctx.tokens_used, budget=settings.max_tokens))
    if recorder is not None and request.record is not None:
        from briefroom.scenario import RecordedHandle, write_scenario

        handles = {role: RecordedHandle(label=h.label, tool_mode=h.tool_mode, structured_mode=h.structured_mode,
                                        context_window=h.context_window) for role, h in pool.handles.items()}
        # The scenario keeps the charter the run started from; the user's answers, which
        # added to it, are kept apart (review.json), and its replay gives them again.
        started_with = state["charter"].model_copy(update={"constraints": tuple(request.constraints)})
        write_scenario(request.record, request, settings, started_with, recorder, report.markdown,
                       label=" / ".join(sorted(pool.labels)), handles=handles)
        review = state.get("review") or {}
        save_recorded_review(request.record, ReviewOptions(plan=bool(review.get("plan")),
                                                           clarify=bool(review.get("clarify"))),
                             review.get("answers", []))
        if isinstance(ctx.counter, ServedTokenCounter):  # its replay builds the prompts with these counts
            ctx.counter.save(request.record)
    return RunResult(run_dir, markdown, state, pool.labels, log.events, tokens_used=ctx.tokens_used,
                     budget=settings.max_tokens)
