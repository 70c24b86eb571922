"""Look into a run: what every model call was shown, section by section.

`briefroom inspect RUN_DIR` prints one row per model call; `--html FILE` writes one
self-contained page (inline SVG and CSS, no scripts, no CDN) with a stacked chart of
prompt tokens per call by section, per-agent totals, and every compress/drop decision.
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
    events = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
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


def _bar_chart(table: list[dict[str, Any]], names: list[str]) -> str:
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


def render_html(run_dir: Path, events: list[dict[str, Any]]) -> str:
    calls = calls_of(events)
    table = rows(calls)
    names = sections_present(calls)
    charter_path = run_dir / "charter.json"
    goal = json.loads(charter_path.read_text())["goal"] if charter_path.is_file() else run_dir.name
    legend = "".join(f'<span class="key"><i style="background:{COLORS.get(s, "#999")}"></i>{s}</span>' for s in names)
    head = "".join(f"<th>{s}</th>" for s in names)
    body = []
    for r in table:
        cells = "".join(f"<td>{r['sections'].get(s, 0)}</td>" for s in names)
        changes = "".join(f"<li>{html.escape(c['action'])} <code>{html.escape(c['section'])}/{html.escape(c['key'])}"
                          f"</code>: {html.escape(c['reason'])}</li>" for c in r["changes"])
        detail = f"<details><summary>{r['compressed']} compressed, {r['dropped']} dropped</summary><ul>{changes}</ul>" \
                 f"</details>" if changes else "—"
        body.append(f"<tr><td>{r['n']}</td><td>{html.escape(str(r['agent']))}</td><td>{r['round']}</td>"
                    f"<td>{html.escape(r['purpose'])}</td>{cells}<td>{r['prompt_tokens']}</td>"
                    f"<td>{r['use_pct']}%</td><td>{detail}</td></tr>")
    totals = "".join(f"<tr><td>{html.escape(a)}</td><td>{t['calls']}</td><td>{t['prompt_tokens']}</td>"
                     f"<td>{t['completion_tokens']}</td></tr>" for a, t in sorted(agent_totals(calls).items()))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>briefroom run: {html.escape(goal)}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }} td, th {{ border: 1px solid #ddd; padding: 3px 6px; }}
th {{ background: #f4f4f4; }} .key {{ margin-right: 1em; }} .key i {{ display: inline-block; width: 10px;
height: 10px; margin-right: 4px; }} code {{ font-size: 12px; }}
</style></head><body>
<h1>{html.escape(goal)}</h1>
<p>{len(calls)} model calls · strategy {html.escape(table[0]['strategy'] if table else '-')} ·
{sum(r['prompt_tokens'] for r in table)} prompt tokens in all · run directory <code>{html.escape(str(run_dir))}</code></p>
<h2>Prompt tokens per call, by section</h2>
<div>{legend}</div>
{_bar_chart(table, names)}
<h2>Per agent</h2>
<table><tr><th>agent</th><th>calls</th><th>prompt tokens</th><th>completion tokens</th></tr>{totals}</table>
<h2>Every call</h2>
<table><tr><th>#</th><th>agent</th><th>round</th><th>purpose</th>{head}<th>total</th><th>budget</th>
<th>compressed / dropped</th></tr>{''.join(body)}</table>
</body></html>
"""
