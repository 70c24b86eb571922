"""Look into a run: what every model call was shown, section by section.

`briefroom inspect RUN_DIR` prints one row per model call (this module: the rows, the
per-agent totals, the stacked chart); `--html FILE` writes the whole run page
(`runpage.py`).

Damaged run files, as inspect treats them: every line of run.jsonl that is not an
event, a last line cut short mid-write included, is named on stderr (`run.jsonl:N`
and why), the rest is shown, and the exit is 1 (`load_events`). A sources.json that is
there but not valid stops `--html` with one line naming it, exit 1 (the page's
citations need it); without --html inspect shows model calls only and does not read it.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from briefroom.events import BuildChange, BusMessage, Event, LlmCall
from briefroom.protocol.payloads import Conclusion, Instruction

# Reading the log back is runlog's; `briefroom inspect` names these as its own.
from briefroom.runlog import calls_of as calls_of
from briefroom.runlog import load_events as load_events
from briefroom.runlog import totals_by_agent as totals_by_agent

SECTION_ORDER = ["role", "charter", "tools", "format", "worktable", "memory", "summaries", "sources", "whiteboard", "facts",
                 "history", "task", "turns"]
COLORS = {"role": "#4e79a7", "charter": "#2f4b7c", "tools": "#76b7b2", "format": "#59a14f", "worktable": "#edc948",
          "memory": "#b07aa1", "summaries": "#d37295", "sources": "#ff9da7", "whiteboard": "#f28e2b", "facts": "#e15759", "history": "#9c755f",
          "task": "#bab0ac", "turns": "#8cd17d"}


@dataclass(frozen=True)
class TaskRow:
    """One task the run handed out (an instruction's envelope), with what answered it."""

    task_id: str
    version: int
    path: str  # lineage, root first: "t0 > t1.2 > t2.1"
    round: int
    question: str
    workers: tuple[str, ...]  # who published its conclusions (`searcher/2` for an instance)
    conclusions: int
    artifacts: tuple[str, ...]  # references it was handed out with


def task_rows(events: Sequence[Event]) -> list[TaskRow]:
    """Every task envelope of the run, in the order handed out (a re-issue is a row of
    its own, with its version), and the conclusions that name it."""
    messages = [e for e in events if isinstance(e, BusMessage)]
    answers: dict[str, dict[str, str]] = defaultdict(dict)  # task -> conclusion text -> worker
    for e in messages:
        payload = e.message.body.payload
        if isinstance(payload, Conclusion) and payload.task_id:
            answers[payload.task_id].setdefault(e.message.body.content, e.agent or "")
    rows, seen = [], set()
    for e in messages:
        payload = e.message.body.payload
        if not isinstance(payload, Instruction) or not payload.task_id:
            continue
        key = (payload.task_id, payload.version)
        if key in seen:  # a guard's forwarded copy is the same task
            continue
        seen.add(key)
        found = answers.get(payload.task_id, {})
        rows.append(TaskRow(task_id=payload.task_id, version=payload.version, path=payload.path(),
                            round=e.message.header.round, question=e.message.body.content,
                            workers=tuple(dict.fromkeys(found.values())), conclusions=len(found),
                            artifacts=tuple(a.ref for a in payload.artifacts)))
    return rows


def sections_present(calls: Sequence[LlmCall]) -> list[str]:
    seen = {name for c in calls for name, n in c.sections.items() if n}
    return [s for s in SECTION_ORDER if s in seen] + sorted(seen - set(SECTION_ORDER))


@dataclass(frozen=True)
class CallRow:
    """One model call, as `inspect` lists it."""

    n: int
    agent: str
    round: int
    purpose: str
    sections: dict[str, int]
    prompt_tokens: int
    budget: int
    use_pct: float
    compressed: int
    dropped: int
    changes: list[BuildChange]
    strategy: str
    cached_tokens: int | None  # prompt tokens the endpoint served from its cache, if it said
    served_prompt_tokens: int | None  # the prompt as the endpoint counted it

    def as_dict(self) -> dict[str, Any]:
        """For `inspect --json`."""
        return {**{f.name: getattr(self, f.name) for f in fields(self)},
                "changes": [c.model_dump(mode="json") for c in self.changes]}


def call_rows(calls: Sequence[LlmCall]) -> list[CallRow]:
    return [CallRow(n=i, agent=c.agent, round=c.round, purpose=c.purpose, sections=dict(c.sections),
                    prompt_tokens=c.prompt_tokens, budget=c.budget, use_pct=c.use_pct,
                    compressed=c.build.compressed, dropped=c.build.dropped, changes=list(c.build.changes),
                    strategy=c.strategy, cached_tokens=c.cached_tokens, served_prompt_tokens=c.served_prompt_tokens)
            for i, c in enumerate(calls, start=1)]


def cache_hit_rate(calls: Sequence[LlmCall]) -> float | None:
    """Share of prompt tokens the endpoint served from its cache, over the calls for
    which it reported both numbers (None: it reported neither)."""
    known = [c for c in calls if c.cached_tokens is not None and c.served_prompt_tokens]
    served = sum(c.served_prompt_tokens or 0 for c in known)
    return round(sum(c.cached_tokens or 0 for c in known) / served, 4) if served else None


def bar_chart(table: Sequence[CallRow], names: list[str]) -> str:
    width, height, left, bottom = 900, 320, 50, 40
    peak = max((sum(r.sections.get(s, 0) for s in names) for r in table), default=1) or 1
    step = (width - left - 10) / max(len(table), 1)
    bar = max(step * 0.8, 2)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="prompt tokens per call by section">']
    for frac in (0, 0.5, 1):
        y = height - bottom - frac * (height - bottom - 10)
        parts.append(f'<line x1="{left}" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 5}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{int(peak * frac)}</text>')
    for i, r in enumerate(table):
        x = left + i * step
        y = height - bottom
        for s in names:
            n = r.sections.get(s, 0)
            if not n:
                continue
            h = n / peak * (height - bottom - 10)
            y -= h
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{COLORS.get(s, "#999")}">'
                         f'<title>#{r.n} {html.escape(r.agent)} · {s}: {n} tokens</title></rect>')
        parts.append(f'<text x="{x + bar / 2:.1f}" y="{height - bottom + 14}" font-size="9" text-anchor="middle">'
                     f'{r.n}</text>')
    parts.append(f'<text x="{left}" y="{height - 5}" font-size="11">model call #</text></svg>')
    return "".join(parts)
