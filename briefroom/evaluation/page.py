"""`briefroom eval --html FILE`: one offline page, a bar chart per metric and the table."""

from __future__ import annotations

import html
from typing import Any

from briefroom.evaluation.suite import CaseResult

E = html.escape
COLORS = {"layered": "#2b6cb0", "naive": "#c05621"}


def _bars(title: str, rows: list[tuple[str, dict[str, float]]], contexts: list[str], peak: float) -> str:
    width, bar_h, gap, left = 760, 14, 8, 210
    height = len(rows) * (bar_h * len(contexts) + gap) + 30
    parts = [f'<svg width="{width}" height="{height}" role="img" aria-label="{E(title)}">',
             f'<text x="0" y="14" font-weight="bold">{E(title)}</text>']
    y = 24
    for name, values in rows:
        parts.append(f'<text x="0" y="{y + bar_h}" font-size="12">{E(name)}</text>')
        for context in contexts:
            value = values.get(context)
            if value is not None:
                w = 0 if peak <= 0 else (width - left - 60) * value / peak
                parts.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" '
                             f'fill="{COLORS.get(context, "#555")}"><title>{E(context)}: {value}</title></rect>'
                             f'<text x="{left + w + 4:.1f}" y="{y + bar_h - 3}" font-size="11">{value:g}</text>')
            y += bar_h
        y += gap
    parts.append("</svg>")
    return "".join(parts)


def render(results: list[CaseResult], summary: dict[str, dict[str, Any]]) -> str:
    contexts = list(summary)
    scenarios = list(dict.fromkeys(r.scenario for r in results))

    def per_scenario(metric) -> list[tuple[str, dict[str, float]]]:
        rows = []
        for name in scenarios:
            values = {}
            for context in contexts:
                rs = [metric(r) for r in results if r.scenario == name and r.context == context]
                rs = [v for v in rs if v is not None]
                if rs:
                    values[context] = round(sum(rs) / len(rs), 3)
            rows.append((name, values))
        return rows

    charts = [
        _bars("Key-fact recall", per_scenario(lambda r: r.score.recall if r.score else 0.0), contexts, 1.0),
        _bars("Citation support", per_scenario(lambda r: r.score.support if r.score else 0.0), contexts, 1.0),
        _bars("Coverage of the question's parts",
              per_scenario(lambda r: r.score.coverage if r.score else 0.0), contexts, 1.0),
    ]
    tokens = per_scenario(lambda r: float(r.prompt_tokens))
    charts.append(_bars("Prompt tokens", tokens, contexts,
                        max((v for _, vs in tokens for v in vs.values()), default=1.0)))
    legend = " ".join(f'<span style="color:{COLORS.get(c, "#555")}">■ {E(c)}</span>' for c in contexts)
    head = ("<tr><th>context</th>" + "".join(f"<th>{E(k)}</th>" for k in next(iter(summary.values()))
                                              if k not in ("by_role", "spread")) + "</tr>")
    body = "".join("<tr><td>" + E(c) + "</td>" + "".join(f"<td>{E(str(v))}</td>" for k, v in row.items()
                                                         if k not in ("by_role", "spread")) + "</tr>" for c, row in summary.items())
    cases = "".join(
        f"<tr><td>{E(r.scenario)}</td><td>{E(r.context)}</td><td>{r.repeat}</td>"
        f"<td>{'' if r.score is None else f'{r.score.recall:.2f}'}</td>"
        f"<td>{'' if r.score is None else f'{r.score.support:.2f}'}</td>"
        f"<td>{'' if r.score is None else len(r.score.unsupported_numbers)}</td>"
        f"<td>{'' if r.score is None else ', '.join(map(E, r.score.missed))}</td>"
        f"<td>{r.prompt_tokens}</td><td>{r.wall_s}</td><td>{E(r.error or '')}</td></tr>" for r in results)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>briefroom eval</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}</style></head><body>"
        f"<h1>briefroom eval</h1><p>{legend}</p>{''.join(charts)}"
        f"<h2>Suite</h2><table>{head}{body}</table>"
        "<h2>Runs</h2><table><tr><th>scenario</th><th>context</th><th>#</th><th>recall</th><th>support</th>"
        f"<th>unsupported numbers</th><th>missed</th><th>prompt tokens</th><th>wall s</th><th>error</th></tr>"
        f"{cases}</table></body></html>\n")
