"""Run a suite of scenarios and score every report.

Offline (no model given), each scenario replays its cassette: the same prompts get the
recorded replies, so the scores are those of the recorded model and CI checks the
metrics on every run; a scenario not recorded yet is left out (`unrecorded`) and
named. With a model, each scenario runs live under each context strategy asked for
(`layered`, `naive`), `repeat` times. Each scenario belongs to a split (`dev`: tuned
on; `test`: never), and `summary.py` reports the splits apart.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from briefroom.config import Settings
from briefroom.errors import ConfigError
from briefroom.evaluation.metrics import ReportScore
from briefroom.evaluation.scoring import score_markdown
from briefroom.models.cassette import CASSETTE_FILE
from briefroom.report.sources import load_sources
from briefroom.runlog import AgentTotals, calls_of, load_events, totals_by_agent
from briefroom.scenario import SCENARIO_FILE, Recorded, Scenario, load_recorded, recording_of

REPLAY = "replay"
SplitChoice = Literal["dev", "test", "all"]
SPLITS = ("dev", "test")


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
    split: str = "test"  # the scenario's split: dev (tuned on) or test (never)
    language: str = "en"  # the scenario's question's language (recall is reported per language too)

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
            out["score"]["own_words"] = round(self.score.own_words, 4)
        return out


def discover(paths: list[Path], split: SplitChoice = "all") -> list[tuple[Path, Scenario]]:
    """Scenario folders under `paths` (a scenario folder, or a folder of them) that carry
    an answer key, in `split` (dev, test, or all)."""
    found: list[tuple[Path, Scenario]] = []
    for path in paths:
        if not path.exists():
            raise ConfigError(f"no such scenario folder: {path}")
        folders = [path] if (path / SCENARIO_FILE).is_file() else sorted(p for p in path.iterdir()
                                                                          if (p / SCENARIO_FILE).is_file())
        for folder in folders:
            scenario = Scenario.load(folder)
            if scenario.evaluable and split in ("all", scenario.split):
                found.append((folder, scenario))
    if not found:
        which = "" if split == "all" else f"{split} "
        raise ConfigError(f"no {which}scenario with an answer_key (or unanswerable: true) in "
                          f"{', '.join(map(str, paths))}")
    return found


def unrecorded(cases: list[tuple[Path, Scenario]], recording: str | None = None) -> list[str]:
    """Scenarios with no cassette to replay (of the model `recording` names, if given):
    they can only run live (--model)."""
    return [s.name for f, s in cases if not (recording_of(f, recording) / CASSETTE_FILE).is_file()]


def run_case(folder: Path, scenario: Scenario, *, context: str, repeat: int, model: str | None,
             settings: Settings, out_root: Path, recorded: Recorded | None = None) -> CaseResult:
    """One run of one scenario, scored: live with `model`, else a replay of `recorded`
    (its own recording, or another model's). A run that fails is a result too (scored as
    nothing)."""
    from briefroom.errors import BriefroomError
    from briefroom.models.cassette import Cassette
    from briefroom.run import ResearchRequest, run_research

    run_dir = out_root / f"{scenario.name}-{context}-{repeat}"
    replaying = model is None
    if replaying and recorded is None:
        recorded = load_recorded(folder)
    if recorded is not None:
        scenario = recorded.scenario
    request = ResearchRequest(question=scenario.question, corpus=[scenario.corpus_dir(folder)], out=run_dir,
                              constraints=scenario.constraints, acceptance_criteria=scenario.acceptance_criteria,
                              roles_dirs=scenario.role_dirs(folder))
    if recorded is not None:
        request.cassette = Cassette.load(recorded.recording)
        request.replay_handles = scenario.handles
        request.scenario = recorded.recording.resolve()
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
    result = CaseResult(scenario.name, context, repeat, label, str(run_dir), None, error, round(wall, 2),
                        split=scenario.split, language=scenario.language)
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
    return score_markdown(report, folder, scenario, set(load_sources(run_dir).sources))


def run_suite(paths: list[Path], *, contexts: list[str], repeat: int, model: str | None, settings: Settings,
              out_root: Path | None = None, progress: Callable[[str], None] | None = None,
              split: SplitChoice = "all", recording: str | None = None) -> list[CaseResult]:
    """Every case's result. Replaying (no model), scenarios without a recording (of the
    model `recording` names, if given) are left out; when none has one, that is an error
    naming them."""
    if recording is not None and model is not None:
        raise ConfigError("a recording is replayed, a model runs live: give --recording or --model, not both")
    cases = discover(paths, split)
    if model is None:
        missing = unrecorded(cases, recording)
        if len(missing) == len(cases):
            of = f" by {recording}" if recording else ""
            raise ConfigError(f"no recording{of} to replay for {', '.join(missing)}: give --model to run it live")
        cases = [(f, s) for f, s in cases if s.name not in missing]
    out_root = out_root or Path(tempfile.mkdtemp(prefix="briefroom-eval-"))
    results = []
    for folder, scenario in cases:
        recorded = load_recorded(recording_of(folder, recording)) if model is None else None
        for context in [recorded.scenario.context] if recorded is not None else contexts:
            for n in range(1, repeat + 1):
                if progress:
                    progress(f"{scenario.name} · {context} · {n}/{repeat}")
                results.append(run_case(folder, scenario, context=context, repeat=n, model=model,
                                        settings=settings, out_root=out_root, recorded=recorded))
    return results
