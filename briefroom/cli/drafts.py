"""The report as it is written: each draft the Writer hands over and the Critic's verdict
on it, shown on stderr while the run goes on (`briefroom research`, `resume`), from the
graph's own stream of node updates."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any

from briefroom.records import Report
from briefroom.report.document import parse_report

SHORT_ANSWER_CHARS = 240


def report_in(update: Mapping[str, Any]) -> Report | None:
    """The report a node's update carries, if any (LangGraph streams `{node: fields}`)."""
    for fields in update.values():
        if isinstance(fields, Mapping) and isinstance(fields.get("report"), Report):
            return fields["report"]
    return None


def outline_of(markdown: str) -> tuple[list[str], str]:
    """The draft's section headings and the first paragraph under the first (the short
    answer), as the report's own parser reads it (no Sources list, no footer)."""
    sections = parse_report(markdown, {}).sections
    first = sections[0].blocks[0].sentences if sections and sections[0].blocks else []
    return [s.heading for s in sections if s.heading], " ".join(t.text for t in first)[:SHORT_ANSWER_CHARS]


def draft_event(report: Report) -> dict[str, Any]:
    headings, short = outline_of(report.markdown)
    return {"round": report.round, "revision": report.revision, "accepted": report.accepted,
            "repairs": len(report.repairs), "sections": headings, "short_answer": short}


def draft_line(report: Report) -> str:
    d = draft_event(report)
    if d["accepted"]:
        head = f"report accepted (revision {d['revision']}" + (f", {d['repairs']} repaired" if d["repairs"] else "") + ")"
    else:
        head = f"draft, revision {d['revision']}"
    return f"{head}: {' · '.join(d['sections'])}" + (f"\n  short answer: {d['short_answer']}" if d["short_answer"] else "")


def follow_drafts(quiet: bool, as_json: bool, write: Callable[[str], Any] | None = None) -> Callable[[dict], None]:
    """An `on_update` hook: one line per new draft or verdict (the same report seen again,
    as a resumed run replays its last update, is not shown twice)."""
    out = write or sys.stderr.write
    seen: set[tuple[int, int, bool]] = set()

    def on_update(update: dict) -> None:
        report = report_in(update) if isinstance(update, Mapping) else None
        if quiet or report is None:
            return
        key = (report.round, report.revision, report.accepted)
        if key in seen:
            return
        seen.add(key)
        out((json.dumps({"draft": draft_event(report)}, ensure_ascii=False) if as_json else draft_line(report)) + "\n")
    return on_update
