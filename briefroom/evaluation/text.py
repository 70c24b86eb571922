"""`briefroom eval`'s plain-text output: runs grouped by split, then a line per split
and context strategy, with the spread over repeats when there was more than one."""

from __future__ import annotations

from typing import Any

from briefroom.evaluation.suite import CaseResult
from briefroom.evaluation.summary import Row

SPLIT_NOTES = {"dev": "prompts and thresholds may be tuned on these", "test": "held out: nobody tunes on these"}


def run_line(r: CaseResult) -> str:
    s = r.score
    head = f"  {r.scenario:<34} {r.context:<8} #{r.repeat}"
    if s is None:
        return f"{head} failed: {r.error}"
    authoritative = {None: "-", True: "yes", False: "NO"}[s.short_answer_authoritative]
    return (f"{head} recall {s.recall:.2f}  support {s.support:.2f}  coverage {s.coverage:.2f}  "
            f"unsupported {len(s.unsupported_numbers)}  unretrieved {s.unretrieved_citations}  "
            f"traps {len(s.trap_hits)} (short answer {len(s.short_answer_trap_hits)})  "
            f"authoritative {authoritative}  language {'ok' if s.language_ok else 'WRONG'}  "
            f"own words {s.own_supported}/{s.cited_sentences}  "
            f"{r.prompt_tokens:,} prompt tokens  {r.calls} calls  {r.wall_s:.0f}s")


def _number(value: Any, share: bool) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f}" if share else f"{value:g}"


def metric(row: Row, key: str, *, share: bool = True) -> str:
    """`recall 0.62`, and over several repeats `recall 0.62 ±0.04 [0.57–0.67]` (per-repeat
    stdev, min and max: a change inside that band is noise)."""
    text = _number(row[key], share)
    spread = row.get("spread", {}).get(key)
    if row.get("repeats", 1) > 1 and spread and spread["mean"] is not None:
        text = (f"{_number(spread['mean'], share)} ±{_number(spread['stdev'], share)} "
                f"[{_number(spread['min'], share)}–{_number(spread['max'], share)}]")
        if not share:
            text += " per repeat"
    return f"{key.replace('_', ' ')} {text}"


def summary_line(label: str, row: Row) -> str:
    cached = "n/a" if row["cache_hit_rate"] is None else \
        f"{row['cached_prompt_tokens']:,} served from the endpoint's cache, {row['cache_hit_rate']:.0%}"
    by_language = row.get("recall_by_language") or {}
    languages = f" ({', '.join(f'{k} {v:.2f}' for k, v in by_language.items())})" if len(by_language) > 1 else ""
    quality = ", ".join([metric(row, "recall") + languages, metric(row, "support"), metric(row, "coverage"),
                         metric(row, "unsupported_numbers", share=False),
                         metric(row, "unretrieved_citations", share=False), metric(row, "trap_hits", share=False),
                         metric(row, "short_answer_trap_hits", share=False),
                         metric(row, "short_answer_authoritative"), metric(row, "language_ok_rate"),
                         metric(row, "own_words")])
    return (f"overall {label}: {quality}; {row['scenarios']} scenarios × {row['repeats']} repeat(s), "
            f"{row['failed']} failed, {row['prompt_tokens']:,} prompt + {row['completion_tokens']:,} completion "
            f"tokens ({cached} cached), {row['calls']} calls, {row['wall_s']}s")


def render(results: list[CaseResult], splits: dict[str, dict[str, Row]], skipped: list[str] | None = None) -> str:
    lines = []
    for split, rows in splits.items():
        scenarios = {r.scenario for r in results if r.split == split}
        lines.append(f"{split} — {len(scenarios)} scenario(s), {SPLIT_NOTES.get(split, '')}".rstrip(", "))
        lines += [run_line(r) for r in results if r.split == split]
        lines += [summary_line(f"{split} {context}", row) for context, row in rows.items()]
        lines.append("")
    if skipped:
        lines.append(f"not recorded, so not replayed (run them with --model): {', '.join(skipped)}")
    return "\n".join(lines).rstrip() + "\n"
