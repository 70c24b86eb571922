"""The run page: one self-contained HTML file that shows what every agent saw and did.

`briefroom inspect RUN_DIR --html FILE`. Everything is inline (CSS, SVG, one small
script), nothing is fetched, so the page opens offline and can be mailed around. It
holds: the round timeline with the message flow (who sent what to whom), every model
call's context composition with what was compressed or dropped and why (and the exact
prompt), tool calls with their envelopes (artifact pointer, size, trimming, retries,
fallbacks, redactions by label), critiques and report revisions, memory reads and
write-gate decisions, and the report with each citation linked to the passage it rests
on. The script only checks the page itself: every citation link must land on a passage
(`data-citations` on <body> says how many do; a broken one is marked red).

Text from the run (prompts, documents, model output) is escaped, never interpreted.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from briefroom.inspect import COLORS, agent_totals, bar_chart, calls_of, rows, sections_present

PROMPT_CHARS = 4000  # per message on the page; the run log has the whole prompt
E = html.escape


def _read_json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return default


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters in run.jsonl)"


# --- the report, with citations linked to passages -----------------------------------
_CITE = re.compile(r"\[(\d+)\]")
_SOURCE_LINE = re.compile(r"^\[(\d+)\] .*\(source `([^`]+)`\)")


def _citation_targets(report: str, sources: dict[str, Any]) -> dict[str, str]:
    """Citation number -> source id, from the report's own Sources list."""
    out = {}
    for line in report.splitlines():
        m = _SOURCE_LINE.match(line.strip())
        if m and m.group(2) in sources:
            out[m.group(1)] = m.group(2)
    return out


def _passage_for(claim: str, source_id: str, sources: dict[str, Any]) -> str:
    """The anchor of the passage of `source_id` that holds `claim` (or shares most words)."""
    passages = sources.get(source_id, {}).get("passages", [])
    text = " ".join(claim.strip(" “”\"").split())
    best, best_overlap = 0, -1
    words = set(re.findall(r"\w+", text.lower()))
    for i, p in enumerate(passages):
        body = " ".join(p.get("text", "").split())
        if text and text in body:
            return f"passage-{source_id}-{i}"
        overlap = len(words & set(re.findall(r"\w+", body.lower())))
        if overlap > best_overlap:
            best, best_overlap = i, overlap
    return f"passage-{source_id}-{best}" if passages else f"source-{source_id}"


def _inline(text: str, targets: dict[str, str], sources: dict[str, Any]) -> str:
    claim = _CITE.sub("", text)
    out = E(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)

    def link(m: re.Match[str]) -> str:
        source_id = targets.get(m.group(1))
        if source_id is None:
            return f'<a class="cite" href="#missing-{m.group(1)}">[{m.group(1)}]</a>'
        return (f'<a class="cite" href="#{_passage_for(claim, source_id, sources)}" '
                f'title="{E(sources[source_id].get("title", source_id))}">[{m.group(1)}]</a>')

    return _CITE.sub(link, out)


def render_markdown(report: str, sources: dict[str, Any]) -> str:
    """The report's own small Markdown (headings, paragraphs, lists, rules) as HTML."""
    targets = _citation_targets(report, sources)
    parts: list[str] = []
    in_list = False
    for block in report.split("\n"):
        line = block.rstrip()
        if line.startswith("- ") or line.startswith("* "):
            if not in_list:
                parts.append("<ul>")
                in_list = True
            parts.append(f"<li>{_inline(line[2:], targets, sources)}</li>")
            continue
        if in_list:
            parts.append("</ul>")
            in_list = False
        if not line:
            continue
        level = len(line) - len(line.lstrip("#"))
        if 0 < level <= 4 and line[level:level + 1] == " ":
            parts.append(f"<h{level + 1}>{_inline(line[level + 1:], targets, sources)}</h{level + 1}>")
        elif line.strip() == "---":
            parts.append("<hr>")
        elif _SOURCE_LINE.match(line.strip()):  # the report's own source list: to the source
            m = _SOURCE_LINE.match(line.strip())
            rest = _inline(line.strip()[len(m.group(1)) + 2:], {}, sources)
            parts.append(f'<p><a class="source-ref" href="#source-{E(m.group(2))}">[{m.group(1)}]</a>{rest}</p>')
        else:
            parts.append(f"<p>{_inline(line, targets, sources)}</p>")
    if in_list:
        parts.append("</ul>")
    return "\n".join(parts)


def _sources_html(sources: dict[str, Any], cited: list[str]) -> str:
    parts = []
    for source_id in [*(s for s in cited if s in sources), *(s for s in sources if s not in cited)]:
        rec = sources[source_id]
        tag = "cited" if source_id in cited else "retrieved, not cited"
        passages = "".join(f'<blockquote id="passage-{E(source_id)}-{i}" class="passage">{E(p.get("text", ""))}'
                           f'<footer>{E(p.get("chunk_id", ""))}, characters {p.get("start")}–{p.get("end")}'
                           f'</footer></blockquote>' for i, p in enumerate(rec.get("passages", [])))
        parts.append(f'<section id="source-{E(source_id)}" class="source"><h3>{E(rec.get("title", source_id))} '
                     f'<small>({E(source_id)}, {tag}) <code>{E(rec.get("path", ""))}</code></small></h3>'
                     f'{passages}</section>')
    return "".join(parts)


# --- message flow ----------------------------------------------------------------------
def _flow_svg(messages: list[dict[str, Any]], lanes: list[str]) -> str:
    """A sequence diagram of one round: a lane per role, an arrow per message and recipient."""
    if not messages:
        return "<p>no messages</p>"
    gap, top, row = 120, 30, 24
    width, height = gap * len(lanes) + 40, top + row * len(messages) + 10
    x = {name: 60 + i * gap for i, name in enumerate(lanes)}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="message flow">']
    for name in lanes:
        parts.append(f'<text x="{x[name]}" y="15" font-size="12" text-anchor="middle" font-weight="bold">{E(name)}'
                     f'</text><line x1="{x[name]}" x2="{x[name]}" y1="20" y2="{height}" stroke="#ccc"/>')
    for i, m in enumerate(messages):
        y = top + i * row + 8
        sender = m["sender"]
        for receiver in m["recipients"] or [sender]:
            x1, x2 = x.get(sender, 20), x.get(receiver, 20)
            color = {"instruction": "#4e79a7", "conclusion": "#59a14f", "critique": "#e15759",
                     "report": "#b07aa1"}.get(m["type"], "#999")
            parts.append(f'<line x1="{x1}" x2="{x2}" y1="{y}" y2="{y}" stroke="{color}" stroke-width="1.5"/>'
                         f'<circle cx="{x2}" cy="{y}" r="3" fill="{color}"/>')
        label = f'{m["type"]} {m["id"]}'
        parts.append(f'<text x="{x.get(sender, 20) + 4}" y="{y - 3}" font-size="9" fill="#555">{E(label)}'
                     f'<title>{E(m["content"][:300])}</title></text>')
    parts.append("</svg>")
    return "".join(parts)


def _timeline(events: list[dict[str, Any]], roles: list[str]) -> str:
    by_round: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        if e.get("event") != "bus_message":
            continue
        header, body = e["message"]["header"], e["message"]["body"]
        by_round.setdefault(int(e.get("round") or header.get("round", 0)), []).append(
            {"id": header["msg_id"], "sender": header["sender"], "type": header["msg_type"],
             "recipients": e.get("recipients", []), "content": body.get("content", ""),
             "refs": body.get("references", []), "priority": e["message"].get("metadata", {}).get("priority", "")})
    ends = {e.get("round"): e for e in events if e.get("event") == "round_end"}
    summaries = {e.get("round"): e for e in events if e.get("event") == "round_summary"}
    lanes = ["user", *roles]
    parts = []
    for rnd in sorted(set(by_round) | {r for r in ends if isinstance(r, int)}):
        msgs = by_round.get(rnd, [])
        rows_html = "".join(
            f'<tr><td><code>{E(m["id"])}</code></td><td>{E(m["sender"])}</td><td>{E(", ".join(m["recipients"]))}'
            f'</td><td>{E(m["type"])}</td><td>{E(str(m["priority"]))}</td><td>{E(", ".join(m["refs"]))}</td>'
            f'<td><details><summary>{E(m["content"][:90])}</summary><pre>{E(m["content"])}</pre></details></td></tr>'
            for m in msgs)
        end = ends.get(rnd, {})
        note = (f'<p>round end: {len(end.get("expired", []))} message(s) expired or replaced, '
                f'{end.get("live", "?")} live, {"run done" if end.get("done") else "next round"}</p>') if end else ""
        summary = summaries.get(rnd)
        if summary:
            points = json.dumps(summary.get("summary"), indent=1, ensure_ascii=False)
            note += f"<details><summary>round summary</summary><pre>{E(points)}</pre></details>"
        parts.append(f'<h3 id="round-{rnd}">Round {rnd}</h3>{_flow_svg(msgs, lanes)}'
                     f'<table><tr><th>id</th><th>from</th><th>to</th><th>type</th><th>priority</th><th>refs</th>'
                     f'<th>content</th></tr>{rows_html}</table>{note}')
    return "".join(parts) or "<p>no messages</p>"


# --- model calls, tools, critiques, memory ---------------------------------------------
def _calls(events: list[dict[str, Any]]) -> str:
    calls = calls_of(events)
    table = rows(calls)
    names = sections_present(calls)
    legend = "".join(f'<span class="key"><i style="background:{COLORS.get(s, "#999")}"></i>{s}</span>' for s in names)
    body = []
    for r, c in zip(table, calls):
        cells = "".join(f"<td>{r['sections'].get(s, 0)}</td>" for s in names)
        changes = "".join(f"<li>{E(ch['action'])} <code>{E(ch['section'])}/{E(ch['key'])}</code>: {E(ch['reason'])}"
                          f"</li>" for ch in r["changes"])
        prompt = "".join(f"<h5>{E(m.get('type', ''))}</h5><pre>{E(_cut(str(m.get('content', '')), PROMPT_CHARS))}"
                         f"</pre>" for m in c.get("messages", []))
        reply = c.get("response") or {}
        detail = (f"<details id='call-{r['n']}'><summary>{r['compressed']} compressed, {r['dropped']} dropped · "
                  f"prompt and reply</summary><ul>{changes}</ul>{prompt}<h5>reply</h5><pre>"
                  f"{E(_cut(json.dumps(reply, ensure_ascii=False, indent=1), PROMPT_CHARS))}</pre></details>")
        body.append(f"<tr><td>{r['n']}</td><td>{E(str(r['agent']))}</td><td>{r['round']}</td>"
                    f"<td>{E(str(c.get('provider', '')))}</td><td>{E(r['purpose'])}</td>{cells}"
                    f"<td>{r['prompt_tokens']}</td><td>{r['use_pct']}%</td><td>{detail}</td></tr>")
    totals = "".join(f"<tr><td>{E(a)}</td><td>{t['calls']}</td><td>{t['prompt_tokens']}</td>"
                     f"<td>{t['completion_tokens']}</td></tr>" for a, t in sorted(agent_totals(calls).items()))
    head = "".join(f"<th>{s}</th>" for s in names)
    return (f"<div>{legend}</div>{bar_chart(table, names)}<h3>Per agent</h3><table><tr><th>agent</th><th>calls"
            f"</th><th>prompt tokens</th><th>completion tokens</th></tr>{totals}</table><h3>Every call</h3>"
            f"<table><tr><th>#</th><th>agent</th><th>round</th><th>model</th><th>purpose</th>{head}<th>total</th>"
            f"<th>budget</th><th>what was cut, and why</th></tr>{''.join(body)}</table>")


def _tools(events: list[dict[str, Any]]) -> str:
    calls = {e.get("call_id"): e for e in events if e.get("event") == "tool_call"}
    out = []
    for e in events:
        if e.get("event") != "tool_result":
            continue
        call = calls.get(e.get("call_id"), {})
        redactions = ", ".join(f"{k}×{v}" for k, v in (e.get("redactions") or {}).items()) or "none"
        fallback = f"{e['fallback']} ({'ok' if e.get('fallback_ok') else 'failed'})" if e.get("fallback") else "-"
        out.append(f"<tr><td>{E(str(e.get('agent')))}</td><td>{e.get('round')}</td><td>{E(str(e.get('tool')))}</td>"
                   f"<td><code>{E(json.dumps(call.get('args', {}), ensure_ascii=False)[:300])}</code></td>"
                   f"<td>{'ok' if e.get('ok') else E(str(e.get('error') or 'error'))}</td><td>{e.get('bytes')}</td>"
                   f"<td>{e.get('shown_bytes', '-')}{' (trimmed)' if e.get('trimmed') else ''}</td><td><code>{E(str(e.get('artifact') or '-'))}"
                   f"</code></td><td>{e.get('attempts', 1)}</td><td>{E(fallback)}</td><td>{E(redactions)}</td></tr>")
    if not out:
        return "<p>no tool calls</p>"
    return ("<table><tr><th>agent</th><th>round</th><th>tool</th><th>arguments</th><th>result</th><th>bytes</th>"
            "<th>bytes the model saw</th><th>artifact</th><th>attempts</th><th>fallback</th><th>redactions</th></tr>"
            + "".join(out) + "</table>")


def _review(events: list[dict[str, Any]]) -> str:
    out = []
    for e in events:
        kind = e.get("event")
        if kind == "bus_message" and e["message"]["header"]["msg_type"] in ("critique", "report"):
            header, body = e["message"]["header"], e["message"]["body"]
            out.append(f"<li><b>{E(header['sender'])}</b> → {E(', '.join(e.get('recipients', [])))} "
                       f"({E(header['msg_type'])}, round {e.get('round')}): <details><summary>"
                       f"{E(body['content'][:120])}</summary><pre>{E(body['content'])}</pre></details></li>")
        elif kind in ("report_repair", "claim_rejected", "report_accepted", "contract_error", "finishing"):
            detail = {k: v for k, v in e.items() if k not in ("event", "seq", "elapsed_s")}
            out.append(f"<li><b>{E(kind)}</b> <code>{E(json.dumps(detail, ensure_ascii=False)[:400])}</code></li>")
    return f"<ul>{''.join(out)}</ul>" if out else "<p>no critiques or revisions</p>"


def _memory(events: list[dict[str, Any]]) -> str:
    reads = [i for e in events if e.get("event") == "memory_read" for i in e.get("items", [])]
    writes = [e for e in events if e.get("event") == "memory_write"]
    reuse = [e for e in events if e.get("event") == "memory_reuse"]
    if not (reads or writes or reuse or any(e.get("event") == "memory_read" for e in events)):
        return "<p>memory was off for this run</p>"
    read_rows = "".join(f"<tr><td><code>{E(str(i.get('id')))}</code></td><td>{E(str(i.get('zone')))}</td>"
                        f"<td>{i.get('similarity')}</td><td>{i.get('score')}</td><td><code>"
                        f"{E(json.dumps(i.get('provenance', {}), ensure_ascii=False)[:300])}</code></td></tr>"
                        for i in reads)
    write_rows = "".join(f"<tr class='{'ok' if w.get('accepted') else 'no'}'><td>{E(str(w.get('kind')))}</td>"
                         f"<td>{'written' if w.get('accepted') else 'rejected'}</td><td>{E(str(w.get('action')))}</td>"
                         f"<td>{E(str(w.get('reason')))}</td><td>{E(str(w.get('preview', ''))[:120])}</td></tr>"
                         for w in writes)
    reused = "".join(f"<li>{E(str(e.get('question')))} → fact <code>{E(str(e.get('fact')))}</code> "
                     f"(source {E(str(e.get('source')))})</li>" for e in reuse)
    return (f"<h3>Read at the start ({len(reads)})</h3><table><tr><th>id</th><th>zone</th><th>similarity</th>"
            f"<th>score</th><th>provenance</th></tr>{read_rows}</table>"
            + (f"<h3>Questions answered from memory</h3><ul>{reused}</ul>" if reused else "")
            + f"<h3>Write gates ({sum(bool(w.get('accepted')) for w in writes)} written, "
              f"{sum(not w.get('accepted') for w in writes)} rejected)</h3><table><tr><th>candidate</th>"
              f"<th>decision</th><th>action</th><th>reason</th><th>text</th></tr>{write_rows}</table>")


CHECK_SCRIPT = """
(function () {
  var links = document.querySelectorAll('a.cite'), ok = 0;
  links.forEach(function (a) {
    var target = document.getElementById(a.getAttribute('href').slice(1));
    if (target && target.classList.contains('passage')) { ok += 1; } else { a.classList.add('broken'); }
  });
  document.body.setAttribute('data-citations', ok + '/' + links.length);
})();
"""


def render_page(run_dir: Path, events: list[dict[str, Any]]) -> str:
    record = _read_json(run_dir / "run.json", {})
    charter = _read_json(run_dir / "charter.json", {})
    sources_file = _read_json(run_dir / "sources.json", {"cited": [], "sources": {}})
    sources, cited = sources_file.get("sources", {}), sources_file.get("cited", [])
    report_path = run_dir / "report.md"
    report = report_path.read_text(encoding="utf-8") if report_path.is_file() else ""
    start = next((e for e in events if e.get("event") == "run_start"), {})
    roles = start.get("roles") or charter.get("roles") or []
    goal = charter.get("goal") or record.get("question") or run_dir.name
    calls = calls_of(events)
    resumes = sum(e.get("event") == "run_resume" for e in events)
    facts = [
        f"status <b>{E(str(record.get('status', 'unknown')))}</b>",
        f"{max((e.get('round') or 0) for e in events) if events else 0} round(s)",
        f"{len(calls)} model calls",
        f"{sum(e.get('event') == 'tool_call' for e in events)} tool calls",
        f"{sum(e.get('event') == 'bus_message' for e in events)} messages",
        f"{sum(c.get('prompt_tokens', 0) + c.get('completion_tokens', 0) for c in calls):,} tokens",
        f"resumed {resumes} time(s)" if resumes else "",
    ]
    nav = " · ".join(f'<a href="#{a}">{t}</a>' for a, t in (("report", "report"), ("timeline", "timeline"),
                                                           ("calls", "model calls"), ("tools", "tools"),
                                                           ("review", "critiques"), ("memory", "memory"),
                                                           ("sources", "sources")))
    report_html = render_markdown(report, sources) if report else "<p>no report yet (the run did not finish)</p>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>briefroom run: {E(goal)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body {{ font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; padding: 0 1em; }}
table {{ border-collapse: collapse; margin: .5em 0 1.5em; font-size: 13px; }}
td, th {{ border: 1px solid #ddd; padding: 3px 6px; vertical-align: top; }} th {{ background: #f4f4f4; }}
pre {{ white-space: pre-wrap; word-break: break-word; background: #f8f8f8; padding: .5em; max-height: 30em;
overflow: auto; font-size: 12px; }} code {{ font-size: 12px; }} nav {{ position: sticky; top: 0; background: #fff;
padding: .4em 0; border-bottom: 1px solid #ddd; }} .key {{ margin-right: 1em; }} .key i {{ display: inline-block;
width: 10px; height: 10px; margin-right: 4px; }} .report {{ border-left: 4px solid #4e79a7; padding-left: 1em; }}
a.cite {{ font-weight: bold; text-decoration: none; }} a.cite.broken {{ color: #fff; background: #c00; }}
blockquote.passage {{ border-left: 3px solid #59a14f; margin: .5em 0; padding: .3em .8em; white-space: pre-wrap;
background: #f6fbf4; }} blockquote.passage:target {{ background: #fff3b0; }} blockquote footer {{ color: #777;
font-size: 11px; }} tr.no td {{ color: #777; }} svg {{ max-width: 100%; height: auto; }}
</style></head><body>
<h1>{E(goal)}</h1>
<p>{" · ".join(f for f in facts if f)} · <code>{E(str(run_dir))}</code></p>
<nav>{nav}</nav>
<h2 id="report">Report</h2><div class="report">{report_html}</div>
<h2 id="timeline">Round timeline and message flow</h2>{_timeline(events, roles)}
<h2 id="calls">Model calls: what each prompt held, and what was cut</h2>{_calls(events)}
<h2 id="tools">Tool calls and their envelopes</h2>{_tools(events)}
<h2 id="review">Critiques and revisions</h2>{_review(events)}
<h2 id="memory">Memory</h2>{_memory(events)}
<h2 id="sources">Sources and the passages cited</h2>{_sources_html(sources, cited)}
<script>{CHECK_SCRIPT}</script>
</body></html>
"""
