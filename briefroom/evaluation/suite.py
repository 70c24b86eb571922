"""Run a suite of scenarios and score every report.

Offline (no model given), each scenario replays its cassette: the same prompts get the
recorded replies, so the scores are those of the recorded model and CI checks the
metrics on every run. With a model, each scenario runs live under each context
strategy asked for (`layered`, `naive`), `repeat` times.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from briefroom.config import Settings
from briefroom.corpus.documents import load_corpus
from briefroom.errors import ConfigError
from briefroom.evaluation.metrics import KeyFact, ReportScore, score_report
from briefroom.inspect import AgentTotals, calls_of, load_events, totals_by_agent
from briefroom.runs import load_sources
from briefroom.scenario import SCENARIO_FILE, Scenario

REPLAY = "replay"


@dataclass
class CaseResult:
    scenario: str
    context: str
    repeat: int
    model: str
    run_dir: str
    score: ReportScore | None
    error: str | None
    wall_s: float
    tokens: dict[str, AgentTotals] = field(default_factory=dict)  # by role (asdict() makes them plain)
    cached_prompt_tokens: int | None = None  # None: the endpoint did not report it
    served_prompt_tokens: int | None = None  # the prompt tokens of those calls, as the endpoint counted them

    @property
    def prompt_tokens(self) -> int:
        return sum(t.prompt_tokens for t in self.tokens.values())

    @property
    def completion_tokens(self) -> int:
        return sum(t.completion_tokens for t in self.tokens.values())

    @property
    def calls(self) -> int:
        return sum(t.calls for t in self.tokens.values())

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens, calls=self.calls)
        if self.score is not None:
            out["score"]["support"] = round(self.score.support, 4)
        return out


def discover(paths: list[Path]) -> list[tuple[Path, Scenario]]:
    """Scenario folders under `paths` (a scenario folder, or a folder of them) that carry an answer key."""
    found: list[tuple[Path, Scenario]] = []
    for path in paths:
        if not path.exists():
            raise ConfigError(f"no such scenario folder: {path}")
        folders = [path] if (path / SCENARIO_FILE).is_file() else sorted(p for p in path.iterdir()
                                                                          if (p / SCENARIO_FILE).is_file())
        for folder in folders:
            scenario = Scenario.load(folder)
            if scenario.evaluable:
                found.append((folder, scenario))
    if not found:
        raise ConfigError(f"no scenario with an answer_key (or unanswerable: true) in {', '.join(map(str, paths))}")
    return found


def _source_texts(folder: Path, scenario: Scenario) -> dict[str, str]:
    return {doc.source_id: doc.text for doc in load_corpus(scenario.corpus_dir(folder))}


def run_case(folder: Path, scenario: Scenario, *, context: str, repeat: int, model: str | None,
             settings: Settings, out_root: Path) -> CaseResult:
    """One run of one scenario, scored. A run that fails is a result too (scored as nothing)."""
    from briefroom.errors import BriefroomError
    from briefroom.models.cassette import Cassette
    from briefroom.run import ResearchRequest, run_research

    run_dir = out_root / f"{scenario.name}-{context}-{repeat}"
    replaying = model is None
    request = ResearchRequest(question=scenario.question, corpus=[scenario.corpus_dir(folder)], out=run_dir,
                              constraints=scenario.constraints, acceptance_criteria=scenario.acceptance_criteria,
                              roles_dirs=scenario.role_dirs(folder))
    if replaying:
        request.cassette = Cassette.load(folder)
        request.replay_handles = scenario.handles
        request.scenario = folder.resolve()
    run_settings = settings.model_copy(update={"rounds": scenario.rounds, "max_revisions": scenario.max_revisions,
                                               "context": context, "memory": False,
                                               **({} if replaying else {"model": model})})
    started = time.perf_counter()
    error = None
    try:
        run_research(request, run_settings)
    except BriefroomError as exc:
        error = str(exc)
    wall = time.perf_counter() - started
    label = scenario.recorded_with or REPLAY if replaying else str(model)
    result = CaseResult(scenario.name, context, repeat, label, str(run_dir), None, error, round(wall, 2))
    if (run_dir / "run.jsonl").is_file():
        calls = calls_of(load_events(run_dir))
        result.tokens = totals_by_agent(calls)
        known = [c for c in calls if c.cached_tokens is not None and c.served_prompt_tokens]
        if known:
            result.cached_prompt_tokens = sum(c.cached_tokens or 0 for c in known)
            result.served_prompt_tokens = sum(c.served_prompt_tokens or 0 for c in known)
    if error is None:
        result.score = score_case(folder, scenario, run_dir)
    return result


def score_case(folder: Path, scenario: Scenario, run_dir: Path) -> ReportScore:
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    retrieved = set(load_sources(run_dir).sources)
    return score_report(report, question=scenario.question, language=scenario.language,
                        answer_key=[KeyFact(k.name, list(k.any), k.part) for k in scenario.answer_key],
                        parts=scenario.parts, must_not=scenario.must_not, unanswerable=scenario.unanswerable,
                        source_texts=_source_texts(folder, scenario), retrieved=retrieved)


def run_suite(paths: list[Path], *, contexts: list[str], repeat: int, model: str | None, settings: Settings,
              out_root: Path | None = None, progress=None) -> list[CaseResult]:
    cases = discover(paths)
    if model is None:
        missing = [s.name for f, s in cases if not (f / "cassette.jsonl").is_file()]
        if missing:
            raise ConfigError(f"no recording to replay for {', '.join(missing)}: give --model to run it live")
    out_root = out_root or Path(tempfile.mkdtemp(prefix="briefroom-eval-"))
    results = []
    for folder, scenario in cases:
        for context in ([scenario.context] if model is None else contexts):
            for n in range(1, repeat + 1):
                if progress:
                    progress(f"{scenario.name} · {context} · {n}/{repeat}")
                results.append(run_case(folder, scenario, context=context, repeat=n, model=model,
                                        settings=settings, out_root=out_root))
    return results


def _mean(values: list[float]) -> float:
    return round(statistics.fmean(values), 4) if values else 0.0


def summarize(results: list[CaseResult]) -> dict[str, dict[str, Any]]:
    """Per context strategy: the suite's totals and means."""
    out: dict[str, dict[str, Any]] = {}
    for context in dict.fromkeys(r.context for r in results):
        rs = [r for r in results if r.context == context]
        scored = [r for r in rs if r.score is not None]
        answerable = [r for r in scored if r.score and r.score.found + r.score.missed]
        by_role: dict[str, dict[str, int]] = {}
        for r in rs:
            for role, t in r.tokens.items():
                acc = by_role.setdefault(role, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
                for k, v in asdict(t).items():
                    acc[k] += v
        cached = [r.cached_prompt_tokens for r in rs if r.cached_prompt_tokens is not None]
        served = sum(r.served_prompt_tokens or 0 for r in rs if r.cached_prompt_tokens is not None)
        out[context] = {
            "runs": len(rs), "failed": len(rs) - len(scored),
            "recall": _mean([r.score.recall for r in answerable if r.score]),
            "support": _mean([r.score.support for r in scored if r.score]),
            "coverage": _mean([r.score.coverage for r in scored if r.score]),
            "unsupported_numbers": sum(len(r.score.unsupported_numbers) for r in scored if r.score),
            "unretrieved_citations": sum(r.score.unretrieved_citations for r in scored if r.score),
            "trap_hits": sum(len(r.score.trap_hits) for r in scored if r.score),
            "language_ok": sum(bool(r.score.language_ok) for r in scored if r.score),
            "prompt_tokens": sum(r.prompt_tokens for r in rs),
            "completion_tokens": sum(r.completion_tokens for r in rs),
            "cached_prompt_tokens": sum(cached) if cached else None,
            "cache_hit_rate": round(sum(cached) / served, 4) if served else None,
            "calls": sum(r.calls for r in rs),
            "wall_s": round(sum(r.wall_s for r in rs), 1),
            "by_role": by_role,
        }
    return out


THRESHOLDS = {  # flag -> (summary key, direction)
    "min_recall": ("recall", "min"), "min_support": ("support", "min"), "min_coverage": ("coverage", "min"),
    "max_unsupported": ("unsupported_numbers", "max"), "max_unretrieved": ("unretrieved_citations", "max"),
}


def threshold_failures(summary: dict[str, dict[str, Any]], limits: dict[str, float | None],
                       results: list[CaseResult]) -> list[str]:
    """One line per limit a context strategy misses; failed runs always count as a failure."""
    lines = []
    for context, row in summary.items():
        for flag, limit in limits.items():
            if limit is None:
                continue
            key, direction = THRESHOLDS[flag]
            value = row[key]
            if (direction == "min" and value < limit) or (direction == "max" and value > limit):
                lines.append(f"{context}: {key} {value} {'<' if direction == 'min' else '>'} {limit} "
                             f"(--{flag.replace('_', '-')})")
    lines += [f"{r.scenario} ({r.context} #{r.repeat}) failed: {r.error}" for r in results if r.error]
    return lines
