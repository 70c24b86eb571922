"""Replaying a recorded scenario: its cassette instead of a model, optionally only up
to a round, after which a live model goes on from the checkpoint.

The CLI's `replay` command is this module plus printing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from briefroom.config import Settings
from briefroom.errors import BriefroomError
from briefroom.models.cassette import Cassette
from briefroom.run import Progress, ResearchRequest, RunResult, resume_research, run_research
from briefroom.scenario import Scenario, load_recorded


@dataclass(frozen=True)
class Replayed:
    result: RunResult
    scenario: Scenario
    cassette: Cassette
    recorded_report: str | None  # the scenario's report.md, if it has one

    def check(self) -> list[str]:
        """Why this replay does not reproduce its recording (empty: it does)."""
        if self.recorded_report is None:
            return ["no recorded report.md in the scenario"]
        problems = []
        if self.result.report != self.recorded_report:
            problems.append("replayed report differs from the recorded one")
        if self.cassette.unused():
            problems.append(f"{self.cassette.unused()} recorded call(s) were never replayed")
        return problems


def replay_scenario(scenario_dir: Path, settings: Settings, out: Path, *, until_round: int | None = None,
                    live: dict[str, Any] | None = None, progress: Callable[[Progress], None] | None = None,
                    on_handover: Callable[[str], None] | None = None) -> Replayed:
    """Run `scenario_dir` (a scenario folder, or one of its `recordings/<tag>/`) from its
    cassette into `out`. With `until_round` K, rounds 1..K come from the cassette and
    `live` (model, base_url, role_models) goes on from there."""
    live = {k: v for k, v in (live or {}).items() if v}
    if until_round is None and live:
        raise BriefroomError("--model, --base-url and --role-model go with --until-round")
    recorded = load_recorded(scenario_dir)
    scenario, folder = recorded.scenario, recorded.folder
    cassette = Cassette.load(recorded.recording)
    settings = settings.model_copy(update={"rounds": scenario.rounds, "max_revisions": scenario.max_revisions,
                                           "parallel": scenario.parallel})
    if until_round is not None:
        if not (live.get("model") or live.get("role_models") or settings.model):
            raise BriefroomError("--until-round needs the live model that continues: --model (or BRIEFROOM_MODEL)")
        if until_round >= scenario.rounds:
            raise BriefroomError(f"--until-round must be below the scenario's {scenario.rounds} rounds")
    request = ResearchRequest(question=scenario.question, corpus=[scenario.corpus_dir(folder)], out=out,
                              constraints=scenario.constraints, acceptance_criteria=scenario.acceptance_criteria,
                              cassette=cassette, replay_handles=scenario.handles,
                              scenario=recorded.recording.resolve(), roles_dirs=scenario.role_dirs(folder))
    result = run_research(request, settings, progress=progress, stop_after_round=until_round)
    if until_round is not None:
        if on_handover:
            on_handover(f"replayed rounds 1-{until_round} from the cassette; a live model goes on from here")
        result = resume_research(out, {"model": None, "base_url": None, "role_models": None, **live},
                                 progress=progress, live=True)
    report = recorded.recording / "report.md"
    return Replayed(result, scenario, cassette, report.read_text(encoding="utf-8") if report.is_file() else None)
