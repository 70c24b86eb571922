"""`replay`, `eval` and `bench`: replaying recordings, scoring reports, benchmarks."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from briefroom.cli.common import (
    DataDir,
    Json,
    Quiet,
    _fail,
    _print_result,
    _progress,
    _run_errors,
    _settings,
    err,
    stdout,
)
from briefroom.config import parse_role_models
from briefroom.errors import BriefroomError

bench_app = typer.Typer(help="Benchmarks (need a source checkout: the code lives in bench/).")


@bench_app.command("context")
def bench_context(
    rounds: Annotated[list[int], typer.Option("--rounds", min=1, max=200, help="rounds (repeatable)")] = [10, 30],
    window: Annotated[int, typer.Option("--window", min=8_000, max=2_000_000,
                                        help="model context window in tokens")] = 128_000,
    as_json: Json = False,
) -> None:
    """Layered vs naive prompts over a long synthetic run: tokens, slope, fact recall, build time."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "bench" / "context.py"
    if not path.is_file():
        raise _fail("the benchmarks live in bench/ of a source checkout; clone the repository to run them")
    spec = importlib.util.spec_from_file_location("briefroom_bench_context", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    for n in rounds:
        result = module.run(n, window)
        if as_json:
            sys.stdout.write(json.dumps(result) + "\n")
        else:
            stdout.print(f"{n} rounds: layered {result['layered_prompt_tokens']:,} vs naive "
                         f"{result['naive_prompt_tokens']:,} prompt tokens (ratio {result['ratio']}); fact recall "
                         f"{result['fact_recall']:.0%} vs {result['naive_fact_recall']:.0%}; slope "
                         f"{result['per_round_slope_pct_of_budget']}% of budget/round; build p95 "
                         f"{result['build_ms_p95']} ms at 10k messages")



def replay(
    scenario_dir: Annotated[Path, typer.Argument(help="a scenario folder (scenario.yaml, corpus/, cassette.jsonl), "
                                                 "or one of its recordings/TAG folders")],
    check: Annotated[bool, typer.Option("--check", help="exit 1 unless the recorded report is reproduced")] = False,
    out: Annotated[Optional[Path], typer.Option(help="run directory for the replay")] = None,
    until_round: Annotated[Optional[int], typer.Option("--until-round", min=1, help="replay rounds 1..K from the "
                                                       "cassette, then go on with a live model (--model)")] = None,
    model: Annotated[Optional[str], typer.Option(help="the live model after --until-round")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="its OpenAI-compatible endpoint")] = None,
    role_model: Annotated[list[str], typer.Option("--role-model", help="per-role live model, ROLE=MODEL")] = [],
    data_dir: DataDir = None,
    as_json: Json = False,
    quiet: Quiet = False,
) -> None:
    """Re-run a recorded scenario with its recorded model responses (no model needed);
    with --until-round K, only up to round K, then a live model takes over."""
    from briefroom.models.cassette import ReplayDivergence
    from briefroom.replay import replay_scenario
    from briefroom.scenario import report_diff

    with _run_errors() as run:
        if until_round is not None and check:
            raise BriefroomError("--check compares a whole replay with its recording; drop it with --until-round")
        run.dir = out or Path(tempfile.mkdtemp(prefix=f"briefroom-replay-{scenario_dir.name}-"))
        live = {"model": model, "base_url": base_url, "role_models": parse_role_models(role_model) or None}
        try:
            replayed = replay_scenario(scenario_dir, _settings(data_dir=data_dir), run.dir, until_round=until_round,
                                       live=live, progress=_progress(quiet, as_json), on_handover=err.print)
        except ReplayDivergence as exc:
            err.print(exc.diff, markup=False)
            raise
    result = replayed.result
    if check:
        problems = replayed.check()
        if problems:
            if replayed.recorded_report is not None and result.report != replayed.recorded_report:
                err.print(report_diff(replayed.recorded_report, result.report or ""), markup=False)
            raise _fail(problems[0] if replayed.recorded_report is None else "; ".join(problems))
        err.print(f"[green]ok:[/] {replayed.scenario.name} reproduced its recorded report "
                  f"({len(replayed.cassette.entries)} calls)")
    elif as_json or until_round is not None:
        _print_result(result, as_json)
    else:
        sys.stdout.write(result.report or "")
    err.print(f"run directory: {result.run_dir}")


def eval_(
    scenarios: Annotated[list[Path], typer.Argument(help="scenario folders, or folders of them")] = [Path("scenarios")],
    model: Annotated[Optional[str], typer.Option(help="run live with this model ('embedded', a GGUF path, a model "
                                                 "on your endpoint); without it, each scenario replays its "
                                                 "recording")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")] = None,
    context: Annotated[list[str], typer.Option("--context", help="layered and/or naive (repeat the flag to "
                                               "compare both in one run)")] = [],
    repeat: Annotated[int, typer.Option(min=1, max=20, help="runs per scenario and context; the summary shows "
                                        "each metric's mean, stdev and range over the repeats")] = 1,
    split: Annotated[str, typer.Option(help="dev (tuned on), test (held out) or all (both, reported "
                                       "apart)")] = "all",
    recording: Annotated[Optional[str], typer.Option(help="replay each scenario's recording by another model "
                                                     "(scenarios/NAME/recordings/TAG) instead of its own")] = None,
    score: Annotated[Optional[Path], typer.Option("--score", help="score this Markdown report (a peer's, say) "
                                                  "against the one scenario given, instead of running")] = None,
    out: Annotated[Optional[Path], typer.Option(help="folder for the run directories (default: a temp folder)")] = None,
    html_file: Annotated[Optional[Path], typer.Option("--html", help="also write an offline page with charts")] = None,
    min_recall: Annotated[Optional[float], typer.Option(min=0, max=1, help="exit 1 below this mean recall")] = None,
    min_support: Annotated[Optional[float], typer.Option(min=0, max=1, help="exit 1 below this citation support")] = None,
    min_coverage: Annotated[Optional[float], typer.Option(min=0, max=1, help="exit 1 below this part coverage")] = None,
    max_unsupported: Annotated[Optional[int], typer.Option(min=0, help="exit 1 above this many unsupported "
                                                           "numbers")] = None,
    max_unretrieved: Annotated[Optional[int], typer.Option(min=0, help="exit 1 above this many citations to "
                                                           "unretrieved sources")] = None,
    data_dir: DataDir = None,
    as_json: Json = False,
    quiet: Quiet = False,
) -> None:
    """Score reports against answer keys: recall, citation support, unsupported numbers,
    coverage of the question's parts, traps in the short answer, the authoritative figure,
    language, tokens, calls and time; the dev and test splits apart (thresholds apply to each)."""
    from briefroom.evaluation import page, text
    from briefroom.evaluation.suite import SplitChoice, discover, run_suite, unrecorded
    from briefroom.evaluation.summary import rows_by_label, summarize, summarize_splits, threshold_failures

    if split not in ("dev", "test", "all"):
        raise _fail(f"--split must be dev, test or all, not {split!r}", 2)
    chosen: SplitChoice = "dev" if split == "dev" else "test" if split == "test" else "all"
    if score is not None:
        _eval_score_file(score, scenarios, as_json)
        return
    contexts = list(dict.fromkeys(context)) or ["layered"]
    for c in contexts:
        if c not in ("layered", "naive"):
            raise _fail(f"--context must be layered or naive, not {c!r}", 2)
    if recording is not None and model is not None:
        raise _fail("--recording replays a recorded model, --model runs one live: give one of them", 2)
    if model is None and (context or base_url):
        raise _fail("--context and --base-url go with --model: without a model, scenarios replay their recordings", 2)
    settings = _settings(data_dir=data_dir, **({"base_url": base_url} if base_url else {}))
    try:
        skipped = [] if model is not None else unrecorded(discover(scenarios, chosen), recording)
        results = run_suite(scenarios, contexts=contexts, repeat=repeat, model=model, settings=settings, out_root=out,
                            split=chosen, recording=recording,
                            progress=None if quiet or as_json else (lambda s: err.print(f"[dim]{s}[/]", markup=True)))
    except BriefroomError as exc:
        raise _fail(str(exc)) from None
    splits = summarize_splits(results)
    summary = summarize(results)
    if as_json:
        sys.stdout.write(json.dumps({"splits": splits, "summary": summary, "skipped_unrecorded": skipped,
                                     "runs": [r.as_dict() for r in results]}, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(text.render(results, splits, skipped))
    if html_file is not None:
        html_file.write_text(page.render(results, summary), encoding="utf-8")
        err.print(f"wrote {html_file}")
    failures = threshold_failures(rows_by_label(splits), {
        "min_recall": min_recall, "min_support": min_support, "min_coverage": min_coverage,
        "max_unsupported": max_unsupported, "max_unretrieved": max_unretrieved}, results)
    if failures:
        for line in failures:
            err.print(f"[bold red]below threshold:[/] {escape(line)}", markup=True)
        raise typer.Exit(1)


def _eval_score_file(report: Path, scenarios: list[Path], as_json: bool) -> None:
    """`eval --score REPORT.md SCENARIO`: the suite's scores for one report written anywhere."""
    from dataclasses import asdict

    from briefroom.evaluation.scoring import score_report_file

    if len(scenarios) != 1:
        raise _fail("--score needs exactly one scenario folder: briefroom eval --score REPORT.md scenarios/NAME", 2)
    try:
        s = score_report_file(report, scenarios[0])
    except BriefroomError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps({**asdict(s), "support": round(s.support, 4)}, indent=2,
                                    ensure_ascii=False) + "\n")
        return
    authoritative = {None: "-", True: "yes", False: "NO"}[s.short_answer_authoritative]
    sys.stdout.write(f"{report}: recall {s.recall:.2f}  support {s.support:.2f}  coverage {s.coverage:.2f}  "
                     f"unsupported {len(s.unsupported_numbers)}  unretrieved {s.unretrieved_citations}  "
                     f"traps {len(s.trap_hits)} (short answer {len(s.short_answer_trap_hits)})  "
                     f"authoritative {authoritative}  language {'ok' if s.language_ok else 'WRONG'}\n"
                     f"missed: {', '.join(s.missed) or '-'}\n")
