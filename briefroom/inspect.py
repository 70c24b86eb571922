"""Look into a run: what every model call was shown, section by section.

`briefroom inspect RUN_DIR` prints one row per model call (this module: the rows, the
per-agent totals, the stacked chart); `--html FILE` writes the whole run page
(`runpage.py`).
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from briefroom.errors import ConfigError

SECTION_ORDER = ["role", "charter", "tools", "format", "worktable", "memory", "summaries", "sources", "whiteboard", "facts",
                 "history", "task", "turns"]
COLORS = {"role": "#4e79a7", "charter": "#2f4b7c", "tools": "#76b7b2", "format": "#59a14f", "worktable": "#edc948",
          "memory": "#b07aa1", "summaries": "#d37295", "sources": "#ff9da7", "whiteboard": "#f28e2b", "facts": "#e15759", "history": "#9c755f",
          "task": "#bab0ac", "turns": "#8cd17d"}


def load_events(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "run.jsonl"
    if not run_dir.is_dir():
        raise ConfigError(f"run directory not found: {run_dir}")
    if not path.is_file():
        raise ConfigError(f"no run.jsonl in {run_dir}")
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if not text.endswith("\n"):
        lines.pop()  # a line a kill cut short (every event ends with a newline): not an event
    events = []
    for n, line in enumerate(lines, start=1):
        if line.strip():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{n}: not valid JSON ({exc.msg})") from exc
    return events


def calls_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("event") == "llm_call"]


def sections_present(calls: list[dict[str, Any]]) -> list[str]:
    seen = {name for c in calls for name, n in c.get("sections", {}).items() if n}
    return [s for s in SECTION_ORDER if s in seen] + sorted(seen - set(SECTION_ORDER))


def rows(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for i, c in enumerate(calls, start=1):
        build = c.get("build") or {}
        out.append({"n": i, "agent": c.get("agent"), "round": c.get("round"), "purpose": c.get("purpose", ""),
                    "sections": c.get("sections", {}), "prompt_tokens": c.get("prompt_tokens", 0),
                    "budget": c.get("budget", 0), "use_pct": c.get("use_pct", 0.0),
                    "compressed": build.get("compressed", 0), "dropped": build.get("dropped", 0),
                    "changes": build.get("changes", []), "strategy": c.get("strategy", "layered")})
    return out


def agent_totals(calls: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    totals: dict[str, dict[str, int]] = defaultdict(lambda: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
    for c in calls:
        t = totals[c.get("agent", "?")]
        t["calls"] += 1
        t["prompt_tokens"] += c.get("prompt_tokens", 0)
        t["completion_tokens"] += c.get("completion_tokens", 0)
    return dict(totals)


def bar_chart(table: list[dict[str, Any]], names: list[str]) -> str:
    width, height, left, bottom = 900, 320, 50, 40
    peak = max((sum(r["sections"].get(s, 0) for s in names) for r in table), default=1) or 1
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
            n = r["sections"].get(s, 0)
            if not n:
                continue
            h = n / peak * (height - bottom - 10)
            y -= h
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{COLORS.get(s, "#999")}">'
                         f'<title>#{r["n"]} {html.escape(str(r["agent"]))} · {s}: {n} tokens</title></rect>')
        parts.append(f'<text x="{x + bar / 2:.1f}" y="{height - bottom + 14}" font-size="9" text-anchor="middle">'
                     f'{r["n"]}</text>')
    parts.append(f'<text x="{left}" y="{height - 5}" font-size="11">model call #</text></svg>')
    return "".join(parts)
