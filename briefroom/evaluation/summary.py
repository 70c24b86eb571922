"""A suite's results summed up: per split (dev, test), per context strategy, with the
spread over repeats.

The dev split is what prompts and thresholds are tuned on; the test split is not, so
a change that helps dev and hurts test shows up as a difference between two rows
instead of vanishing in one mean. With `--repeat N`, each metric is also computed per
repeat (as if the suite had run N times) and its mean, stdev, min and max reported:
a difference smaller than that spread is noise, not a regression.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from briefroom.evaluation.metrics import ReportScore
from briefroom.evaluation.suite import SPLITS, CaseResult

Row = dict[str, Any]


def _mean(values: list[float]) -> float:
    return round(statistics.fmean(values), 4) if values else 0.0


def _rate(flags: list[bool]) -> float | None:
    return round(sum(flags) / len(flags), 4) if flags else None


def _scores(rs: list[CaseResult]) -> list[ReportScore]:
    return [r.score for r in rs if r.score is not None]


def quality(rs: list[CaseResult]) -> dict[str, float | int | None]:
    """The report-quality metrics of some runs: means of shares, totals of counts."""
    scored = _scores(rs)
    answerable = [s for s in scored if s.found + s.missed]
    authoritative = [s.short_answer_authoritative for s in scored if s.short_answer_authoritative is not None]
    return {
        # None: every scenario here is unanswerable (no answer key to recall), not 0
        "recall": _mean([s.recall for s in answerable]) if answerable else None,
        "support": _mean([s.support for s in scored]),
        "coverage": _mean([s.coverage for s in scored]),
        "unsupported_numbers": sum(len(s.unsupported_numbers) for s in scored),
        "unretrieved_citations": sum(s.unretrieved_citations for s in scored),
        "trap_hits": sum(len(s.trap_hits) for s in scored),
        "short_answer_trap_hits": sum(len(s.short_answer_trap_hits) for s in scored),
        # None: no scenario here names an authoritative figure (no credibility trap)
        "short_answer_authoritative": _rate(authoritative),
        "language_ok_rate": _rate([s.language_ok for s in scored]),
        # of all cited sentences, the model's own and supported (a ratio of totals)
        "own_words": round(sum(s.own_supported for s in scored) / cited, 4)
        if (cited := sum(s.cited_sentences for s in scored)) else None,
    }


SPREAD_METRICS = tuple(quality([]))


def spread(rs: list[CaseResult]) -> dict[str, dict[str, float | int | None]]:
    """Per quality metric, its value in each repeat (the runs numbered n form the n-th
    pass over the suite) and their mean, stdev, min and max."""
    passes = [[r for r in rs if r.repeat == n] for n in sorted({r.repeat for r in rs})]
    per_pass = [quality(p) for p in passes]
    out: dict[str, dict[str, Any]] = {}
    for metric in SPREAD_METRICS:
        values = [v for v in (q[metric] for q in per_pass) if v is not None]
        out[metric] = {"mean": round(statistics.fmean(values), 4), "stdev": round(statistics.pstdev(values), 4),
                       "min": min(values), "max": max(values), "values": values} if values else \
            {"mean": None, "stdev": None, "min": None, "max": None, "values": []}
    return out


def recall_by_language(rs: list[CaseResult]) -> dict[str, float]:
    """Recall per question language (en, zh), over the answerable scenarios of each: a
    target that holds "in English and in Chinese" must hold in each."""
    out = {}
    for language in sorted({r.language for r in rs}):
        recall = quality([r for r in rs if r.language == language])["recall"]
        if recall is not None:
            out[language] = float(recall)
    return out


def _row(rs: list[CaseResult]) -> Row:
    scored = _scores(rs)
    by_role: dict[str, dict[str, int]] = {}
    for r in rs:
        for role, t in r.tokens.items():
            acc = by_role.setdefault(role, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
            for k, v in asdict(t).items():
                acc[k] += v
    cached = [r.cached_prompt_tokens for r in rs if r.cached_prompt_tokens is not None]
    served = sum(r.served_prompt_tokens or 0 for r in rs if r.cached_prompt_tokens is not None)
    return {
        "runs": len(rs), "failed": len(rs) - len(scored),
        "scenarios": len({r.scenario for r in rs}), "repeats": len({r.repeat for r in rs}),
        **quality(rs),
        "recall_by_language": recall_by_language(rs),
        "language_ok": sum(s.language_ok for s in scored),
        "prompt_tokens": sum(r.prompt_tokens for r in rs),
        "completion_tokens": sum(r.completion_tokens for r in rs),
        "cached_prompt_tokens": sum(cached) if cached else None,
        "cache_hit_rate": round(sum(cached) / served, 4) if served else None,
        "calls": sum(r.calls for r in rs),
        "wall_s": round(sum(r.wall_s for r in rs), 1),
        "by_role": by_role,
        "spread": spread(rs),
    }


def _per_context(results: list[CaseResult]) -> dict[str, Row]:
    return {c: _row([r for r in results if r.context == c]) for c in dict.fromkeys(r.context for r in results)}


def summarize(results: list[CaseResult]) -> dict[str, Row]:
    """Per context strategy, over every split given: the suite's totals, means and spread."""
    return _per_context(results)


def summarize_splits(results: list[CaseResult]) -> dict[str, dict[str, Row]]:
    """Per split present (dev before test), per context strategy: the rows apart."""
    present = [s for s in SPLITS if any(r.split == s for r in results)]
    present += sorted({r.split for r in results} - set(present))
    return {s: _per_context([r for r in results if r.split == s]) for s in present}


def rows_by_label(splits: dict[str, dict[str, Row]]) -> dict[str, Row]:
    """"dev layered", "test layered" …: one row per split and context, for thresholds."""
    return {f"{split} {context}": row for split, rows in splits.items() for context, row in rows.items()}


THRESHOLDS = {  # flag -> (summary key, direction)
    "min_recall": ("recall", "min"), "min_support": ("support", "min"), "min_coverage": ("coverage", "min"),
    "max_unsupported": ("unsupported_numbers", "max"), "max_unretrieved": ("unretrieved_citations", "max"),
}


def threshold_failures(summary: dict[str, Row], limits: dict[str, float | None],
                       results: list[CaseResult]) -> list[str]:
    """One line per limit a row (a context strategy, or a split's) misses; failed runs
    always count as a failure."""
    compare: dict[str, Callable[[float, float], bool]] = {"min": lambda v, lim: v < lim,
                                                          "max": lambda v, lim: v > lim}
    lines = []
    for label, row in summary.items():
        for flag, limit in limits.items():
            if limit is None:
                continue
            key, direction = THRESHOLDS[flag]
            value = row[key]
            if value is not None and compare[direction](value, limit):
                lines.append(f"{label}: {key} {value} {'<' if direction == 'min' else '>'} {limit} "
                             f"(--{flag.replace('_', '-')})")
    lines += [f"{r.scenario} ({r.context} #{r.repeat}) failed: {r.error}" for r in results if r.error]
    return lines
