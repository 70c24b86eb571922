"""The run page: one self-contained HTML file that shows what every agent saw and did.

`briefroom inspect RUN_DIR --html FILE`. Everything is inline (CSS, SVG, one small
script), nothing is fetched, so the page opens offline and can be mailed around. It
holds: the round timeline with the message flow (who sent what to whom), every model
call's context composition with what was compressed or dropped and why (and the exact
prompt), tool calls with their envelopes (artifact pointer, size, trimming, retries,
fallbacks, redactions by label), critiques and report revisions, memory reads and
write-gate decisions, and the report with each citation linked to the passage it rests
on (citation `[n]` is the run's `cited[n - 1]` in sources.json, the map the report
was rendered from). The script only checks the page itself: every citation link must land on a passage
(`data-citations` on <body> says how many do; a broken one is marked red).

Text from the run (prompts, documents, model output) is escaped, never interpreted.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from briefroom.events import (
    BusMessage,
    ClaimRejected,
    ContractErrorEvent,
    Event,
    Finishing,
    MemoryRead,
    MemoryReuse,
    MemoryWrite,
    ReportAccepted,
    ReportRepair,
    RoundEnd,
    RoundSummaryEvent,
    RunResume,
    RunStart,
    ToolCall,
    ToolResult,
    round_of,
)
from briefroom.inspect import COLORS, CallRow, bar_chart, cache_hit_rate, call_rows, sections_present, task_rows
from briefroom.records import SourceRecord
from briefroom.report.checks import SOURCES_HEADINGS
from briefroom.report.language import plural_s
from briefroom.report.sources import SOURCES_FILE, SourcesFile, load_sources
from briefroom.runlog import calls_of, totals_by_agent

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
_LIST_ENTRY = re.compile(r"^\[(\d+)\]")  # an entry of the report's Sources list


def _load_sources(run_dir: Path) -> SourcesFile:
    """sources.json; a run that has none yet (it did not finish) shows no sources.

    One that is there but not valid is a ConfigError naming the file and what is wrong
    (`inspect --html` prints it as one line and exits 1): the page's citations link
    through it, and a page that silently showed none would hide the damage."""
    if not (run_dir / SOURCES_FILE).exists():
        return SourcesFile()
    return load_sources(run_dir)


def _passage_for(claim: str, source_id: str, sources: dict[str, SourceRecord]) -> str:
    """The anchor of the passage of `source_id` that holds `claim` (or shares most words)."""
    record = sources.get(source_id)
    passages = record.passages if record else ()
    text = " ".join(claim.strip(" “”\"").split())
    best, best_overlap = 0, -1
    words = set(re.findall(r"\w+", text.lower()))
    for i, p in enumerate(passages):
        body = " ".join(p.text.split())
        if text and text in body:
            return f"passage-{source_id}-{i}"
        overlap = len(words & set(re.findall(r"\w+", body.lower())))
        if overlap > best_overlap:
            best, best_overlap = i, overlap
    return f"passage-{source_id}-{best}" if passages else f"source-{source_id}"


def _inline(text: str, cites: SourcesFile | None) -> str:
    """A line of the report as HTML; with `cites`, each [n] links to the passage of its source."""
    claim = _CITE.sub("", text)
    out = E(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    if cites is None:
        return out

    def link(m: re.Match[str]) -> str:
        source_id = cites.source_of(int(m.group(1)))
        record = cites.sources.get(source_id) if source_id is not None else None
        if source_id is None or record is None:
            return f'<a class="cite" href="#missing-{m.group(1)}">[{m.group(1)}]</a>'
        return (f'<a class="cite" href="#{_passage_for(claim, source_id, cites.sources)}" '
                f'title="{E(record.title)}">[{m.group(1)}]</a>')

    return _CITE.sub(link, out)


def render_markdown(report: str, cites: SourcesFile) -> str:
    """The report's own small Markdown (headings, paragraphs, lists, rules) as HTML; its
    citations link through `cites` (the run's sources.json)."""
    parts: list[str] = []
    in_list = False
    in_sources = False  # under the report's Sources heading, until its footer rule
    for block in report.split("\n"):
        line = block.rstrip()
        if line.startswith("- ") or line.startswith("* "):
            if not in_list:
                parts.append("<ul>")
                in_list = True
            parts.append(f"<li>{_inline(line[2:], cites)}</li>")
            continue
        if in_list:
            parts.append("</ul>")
            in_list = False
        if not line:
            continue
        level = len(line) - len(line.lstrip("#"))
        entry = _LIST_ENTRY.match(line.strip()) if in_sources else None
        if 0 < level <= 4 and line[level:level + 1] == " ":
            in_sources = line[level + 1:].strip() in SOURCES_HEADINGS
            parts.append(f"<h{level + 1}>{_inline(line[level + 1:], cites)}</h{level + 1}>")
        elif line.strip() == "---":
            in_sources = False
            parts.append("<hr>")
        elif entry:  # an entry of the report's own source list: to the source
            source_id = cites.source_of(int(entry.group(1)))
            href = f"source-{source_id}" if source_id is not None else f"missing-{entry.group(1)}"
            rest = _inline(line.strip()[entry.end():], None)
            parts.append(f'<p><a class="source-ref" href="#{E(href)}">[{entry.group(1)}]</a>{rest}</p>')
        else:
            parts.append(f"<p>{_inline(line, cites)}</p>")
    if in_list:
        parts.append("</ul>")
    return "\n".join(parts)


def _sources_html(cites: SourcesFile) -> str:
    sources, cited = cites.sources, cites.cited
    parts = []
    for source_id in dict.fromkeys([*(s for s in cited if s in sources), *(s for s in sources if s not in cited)]):
        rec = sources[source_id]
        tag = "cited" if source_id in cited else "retrieved, not cited"
        passages = "".join(f'<blockquote id="passage-{E(source_id)}-{i}" class="passage">{E(p.text)}'
                           f'<footer>{E(p.chunk_id)}, characters {p.start}–{p.end}'
                           f'</footer></blockquote>' for i, p in enumerate(rec.passages))
        parts.append(f'<section id="source-{E(source_id)}" class="source"><h3>{E(rec.title)} '
                     f'<small>({E(source_id)}, {tag}) <code>{E(rec.path)}</code></small></h3>'
                     f'{passages}</section>')
    return "".join(parts)


def report_fragment(run_dir: Path) -> str:
    """The report with each citation linked to its passage, and the sources' passages the
    links land on: the parts of the run page other pages show a report with (the
    workbench), so a citation resolves the same way wherever it is read."""
    cites = _load_sources(run_dir)
    report_path = run_dir / "report.md"
    report = report_path.read_text(encoding="utf-8") if report_path.is_file() else ""
    body = render_markdown(report, cites) if report else "<p>no report yet (the run did not finish)</p>"
    return f'<div class="report">{body}</div><div class="sources">{_sources_html(cites)}</div>'


# --- message flow ----------------------------------------------------------------------
_FLOW_COLORS = {"instruction": "#4e79a7", "conclusion": "#59a14f", "critique": "#e15759", "report": "#b07aa1"}


def _flow_svg(messages: Sequence[BusMessage], lanes: list[str]) -> str:
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
    for i, e in enumerate(messages):
        y = top + i * row + 8
        header = e.message.header
        sender, kind = header.sender, header.msg_type.value
        for receiver in e.recipients or [sender]:
            x1, x2 = x.get(sender, 20), x.get(receiver, 20)
            color = _FLOW_COLORS.get(kind, "#999")
            parts.append(f'<line x1="{x1}" x2="{x2}" y1="{y}" y2="{y}" stroke="{color}" stroke-width="1.5"/>'
                         f'<circle cx="{x2}" cy="{y}" r="3" fill="{color}"/>')
        label = f"{kind} {header.msg_id}"
        parts.append(f'<text x="{x.get(sender, 20) + 4}" y="{y - 3}" font-size="9" fill="#555">{E(label)}'
                     f'<title>{E(e.message.body.content[:300])}</title></text>')
    parts.append("</svg>")
    return "".join(parts)


def _timeline(events: Sequence[Event], roles: list[str]) -> str:
    by_round: dict[int, list[BusMessage]] = {}
    for e in events:
        if isinstance(e, BusMessage):
            by_round.setdefault(e.round or e.message.header.round, []).append(e)
    ends = {e.round: e for e in events if isinstance(e, RoundEnd)}
    summaries = {e.round: e for e in events if isinstance(e, RoundSummaryEvent)}
    lanes = ["user", *roles]
    parts = []
    for rnd in sorted(set(by_round) | set(ends)):
        msgs = by_round.get(rnd, [])
        rows_html = "".join(
            f'<tr><td><code>{E(m.message.header.msg_id)}</code></td><td>{E(m.message.header.sender)}</td>'
            f'<td>{E(", ".join(m.recipients))}</td><td>{E(m.message.header.msg_type.value)}</td>'
            f'<td>{E(m.message.metadata.priority.value)}</td><td>{E(", ".join(m.message.body.references))}</td>'
            f'<td><details><summary>{E(m.message.body.content[:90])}</summary><pre>{E(m.message.body.content)}'
            f'</pre></details></td></tr>'
            for m in msgs)
        end = ends.get(rnd)
        note = (f'<p>round end: {len(end.expired)} message(s) expired or replaced, '
                f'{end.live} live, {"run done" if end.done else "next round"}</p>') if end else ""
        summary = summaries.get(rnd)
        if summary:
            points = json.dumps(summary.summary.model_dump(mode="json"), indent=1, ensure_ascii=False)
            note += f"<details><summary>round summary</summary><pre>{E(points)}</pre></details>"
        parts.append(f'<h3 id="round-{rnd}">Round {rnd}</h3>{_flow_svg(msgs, lanes)}'
                     f'<table><tr><th>id</th><th>from</th><th>to</th><th>type</th><th>priority</th><th>refs</th>'
                     f'<th>content</th></tr>{rows_html}</table>{note}')
    return "".join(parts) or "<p>no messages</p>"


# --- model calls, tools, critiques, memory ---------------------------------------------
def _calls(events: Sequence[Event]) -> str:
    calls = calls_of(events)
    table = call_rows(calls)
    names = sections_present(calls)
    legend = "".join(f'<span class="key"><i style="background:{COLORS.get(s, "#999")}"></i>{s}</span>' for s in names)
    body = []
    for r, c in zip(table, calls):
        cells = "".join(f"<td>{r.sections.get(s, 0)}</td>" for s in names)
        changes = "".join(f"<li>{E(ch.action)} <code>{E(ch.section)}/{E(ch.key)}</code>: {E(ch.reason)}"
                          f"</li>" for ch in r.changes)
        prompt = "".join(f"<h5>{E(m.type)}</h5><pre>{E(_cut(_text(m.content), PROMPT_CHARS))}"
                         f"</pre>" for m in c.messages)
        reply = c.response.model_dump(mode="json", exclude_unset=True)
        detail = (f"<details id='call-{r.n}'><summary>{r.compressed} compressed, {r.dropped} dropped · "
                  f"prompt and reply</summary><ul>{changes}</ul>{prompt}<h5>reply</h5><pre>"
                  f"{E(_cut(json.dumps(reply, ensure_ascii=False, indent=1), PROMPT_CHARS))}</pre></details>")
        body.append(f"<tr><td>{r.n}</td><td>{E(r.agent)}</td><td>{r.round}</td>"
                    f"<td>{E(c.provider)}</td><td>{E(r.purpose)}</td>{cells}"
                    f"<td>{r.prompt_tokens}</td><td>{_served(r)}</td><td>{r.use_pct}%</td><td>{detail}</td></tr>")
    totals = "".join(f"<tr><td>{E(a)}</td><td>{t.calls}</td><td>{t.prompt_tokens}</td>"
                     f"<td>{t.completion_tokens}</td></tr>" for a, t in sorted(totals_by_agent(calls).items()))
    head = "".join(f"<th>{s}</th>" for s in names)
    rate = cache_hit_rate(calls)
    cache = (f"<p class='cache'>Prompt cache: {rate:.0%} of the prompt tokens the endpoint counted were served "
             f"from its cache.</p>" if rate is not None else
             "<p class='cache'>Prompt cache: the endpoint did not report cached tokens.</p>")
    return (f"<div>{legend}</div>{bar_chart(table, names)}<h3>Per agent</h3><table><tr><th>agent</th><th>calls"
            f"</th><th>prompt tokens</th><th>completion tokens</th></tr>{totals}</table>{cache}<h3>Every call</h3>"
            f"<table><tr><th>#</th><th>agent</th><th>round</th><th>model</th><th>purpose</th>{head}<th>total</th>"
            f"<th>server's count</th><th>budget</th><th>what was cut, and why</th></tr>{''.join(body)}</table>")


def _served(row: CallRow) -> str:
    """The endpoint's own prompt-token count beside briefroom's, with the gap when they differ
    (a budget is only as good as the count it is kept in)."""
    served = row.served_prompt_tokens
    if not served:
        return "-"
    if served == row.prompt_tokens:
        return str(served)
    return f"{served} ({(row.prompt_tokens - served) / served:+.1%})"


def _text(content: str | list[Any]) -> str:
    """A prompt message's content as the page shows it (a list of parts as Python shows it)."""
    return content if isinstance(content, str) else str(content)


def _tools(events: Sequence[Event]) -> str:
    calls = {e.call_id: e for e in events if isinstance(e, ToolCall)}
    out = []
    for e in events:
        if not isinstance(e, ToolResult):
            continue
        call = calls.get(e.call_id)
        redactions = ", ".join(f"{k}×{v}" for k, v in e.redactions.items()) or "none"
        fallback = f"{e.fallback} ({'ok' if e.fallback_ok else 'failed'})" if e.fallback else "-"
        result = "ok" if e.ok else (f"{e.error.error}: {e.error.message}" if e.error else "error")
        out.append(f"<tr><td>{E(e.agent)}</td><td>{e.round}</td><td>{E(e.tool)}</td>"
                   f"<td><code>{E(json.dumps(call.args if call else {}, ensure_ascii=False)[:300])}</code></td>"
                   f"<td>{E(result)}</td><td>{e.bytes}</td>"
                   f"<td>{'-' if e.shown_bytes is None else e.shown_bytes}{' (trimmed)' if e.trimmed else ''}</td>"
                   f"<td><code>{E(e.artifact or '-')}</code></td><td>{e.attempts}</td><td>{E(fallback)}</td>"
                   f"<td>{E(redactions)}</td></tr>")
    if not out:
        return "<p>no tool calls</p>"
    return ("<table><tr><th>agent</th><th>round</th><th>tool</th><th>arguments</th><th>result</th><th>bytes</th>"
            "<th>bytes the model saw</th><th>artifact</th><th>attempts</th><th>fallback</th><th>redactions</th></tr>"
            + "".join(out) + "</table>")


_REVIEWED = (ReportRepair, ClaimRejected, ReportAccepted, ContractErrorEvent, Finishing)


def _review(events: Sequence[Event]) -> str:
    out = []
    for e in events:
        if isinstance(e, BusMessage) and e.message.header.msg_type.value in ("critique", "report"):
            header, body = e.message.header, e.message.body
            out.append(f"<li><b>{E(header.sender)}</b> → {E(', '.join(e.recipients))} "
                       f"({E(header.msg_type.value)}, round {e.round}): <details><summary>"
                       f"{E(body.content[:120])}</summary><pre>{E(body.content)}</pre></details></li>")
        elif isinstance(e, _REVIEWED):
            detail = {k: v for k, v in e.record().items() if k not in ("event", "seq", "elapsed_s")}
            out.append(f"<li><b>{E(e.event)}</b> <code>{E(json.dumps(detail, ensure_ascii=False)[:400])}</code></li>")
    return f"<ul>{''.join(out)}</ul>" if out else "<p>no critiques or revisions</p>"


def _memory(events: Sequence[Event]) -> str:
    read_events = [e for e in events if isinstance(e, MemoryRead)]
    reads = [i for e in read_events for i in e.items]
    writes = [e for e in events if isinstance(e, MemoryWrite)]
    reuse = [e for e in events if isinstance(e, MemoryReuse)]
    if not (reads or writes or reuse or read_events):
        return "<p>memory was off for this run</p>"
    read_rows = "".join(f"<tr><td><code>{E(i.id)}</code></td><td>{E(i.zone)}</td>"
                        f"<td>{i.similarity}</td><td>{i.score}</td><td><code>"
                        f"{E(json.dumps(i.provenance, ensure_ascii=False)[:300])}</code></td></tr>"
                        for i in reads)
    write_rows = "".join(f"<tr class='{'ok' if w.accepted else 'no'}'><td>{E(w.kind)}</td>"
                         f"<td>{'written' if w.accepted else 'rejected'}</td><td>{E(w.action)}</td>"
                         f"<td>{E(w.reason)}</td><td>{E((w.preview or '')[:120])}</td></tr>"
                         for w in writes)
    reused = "".join(f"<li>{E(e.question)} → fact <code>{E(e.fact)}</code> "
                     f"(source {E(e.source)})</li>" for e in reuse)
    return (f"<h3>Read at the start ({len(reads)})</h3><table><tr><th>id</th><th>zone</th><th>similarity</th>"
            f"<th>score</th><th>provenance</th></tr>{read_rows}</table>"
            + (f"<h3>Questions answered from memory</h3><ul>{reused}</ul>" if reused else "")
            + f"<h3>Write gates ({sum(w.accepted for w in writes)} written, "
              f"{sum(not w.accepted for w in writes)} rejected)</h3><table><tr><th>candidate</th>"
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


def _tasks(events: Sequence[Event]) -> str:
    rows = task_rows(events)
    if not rows:
        return "<p>no task envelopes in this run</p>"
    body = "".join(
        f"<tr><td><code>{E(t.path)}</code></td><td>v{t.version}</td><td>{t.round}</td><td>{E(t.question)}</td>"
        f"<td>{E(', '.join(t.workers) or 'unanswered')}</td><td>{t.conclusions}</td>"
        f"<td>{E(', '.join(t.artifacts))}</td></tr>" for t in rows)
    return ("<table><tr><th>lineage</th><th>version</th><th>round</th><th>task</th><th>answered by</th>"
            f"<th>conclusions</th><th>handed over</th></tr>{body}</table>")


def render_page(run_dir: Path, events: Sequence[Event]) -> str:
    record = _read_json(run_dir / "run.json", {})
    charter = _read_json(run_dir / "charter.json", {})
    cites = _load_sources(run_dir)
    report_path = run_dir / "report.md"
    report = report_path.read_text(encoding="utf-8") if report_path.is_file() else ""
    start = next((e for e in events if isinstance(e, RunStart)), None)
    roles = (start.roles if start else None) or charter.get("roles") or []
    goal = charter.get("goal") or record.get("question") or run_dir.name
    calls = calls_of(events)
    resumes = sum(isinstance(e, RunResume) for e in events)
    rounds = max((round_of(e) or 0) for e in events) if events else 0
    facts = [
        f"status <b>{E(str(record.get('status', 'unknown')))}</b>",
        f"{rounds} round{plural_s(rounds)}",
        f"{len(calls)} model calls",
        f"{sum(isinstance(e, ToolCall) for e in events)} tool calls",
        f"{sum(isinstance(e, BusMessage) for e in events)} messages",
        f"{sum(c.prompt_tokens + c.completion_tokens for c in calls):,} tokens",
        f"resumed {resumes} time(s)" if resumes else "",
    ]
    nav = " · ".join(f'<a href="#{a}">{t}</a>' for a, t in (("report", "report"), ("timeline", "timeline"), ("tasks", "tasks"),
                                                           ("calls", "model calls"), ("tools", "tools"),
                                                           ("review", "critiques"), ("memory", "memory"),
                                                           ("sources", "sources")))
    report_html = render_markdown(report, cites) if report else "<p>no report yet (the run did not finish)</p>"
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
<h2 id="tasks">Tasks and their lineage</h2>{_tasks(events)}
<h2 id="calls">Model calls: what each prompt held, and what was cut</h2>{_calls(events)}
<h2 id="tools">Tool calls and their envelopes</h2>{_tools(events)}
<h2 id="review">Critiques and revisions</h2>{_review(events)}
<h2 id="memory">Memory</h2>{_memory(events)}
<h2 id="sources">Sources and the passages cited</h2>{_sources_html(cites)}
<script>{CHECK_SCRIPT}</script>
</body></html>
"""
