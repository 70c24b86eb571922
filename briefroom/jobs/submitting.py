"""`briefroom submit`: a research job queued after the checks `briefroom research` makes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from briefroom.config import Settings
from briefroom.errors import ConfigError
from briefroom.jobs.app import queue
from briefroom.jobs.base import TASK


def check_job(question: str, corpus: Sequence[Path], chosen: dict[str, Any]) -> str:
    """What `briefroom research` would refuse, refused before the job is queued, with the
    same checks: the question (returned as a run uses it), the corpus, the settings and
    the models (a model that needs an endpoint none is set for, a missing GGUF file)."""
    from briefroom.agents.registry import discover
    from briefroom.graph.summary import SUMMARIZER
    from briefroom.llm import embedded_model_file, needs_embedded_server
    from briefroom.run import clean_question

    cleaned = clean_question(question)
    if not corpus:
        raise ConfigError("no corpus: pass --corpus DIR")
    for folder in corpus:
        if not Path(folder).is_dir():
            raise ConfigError(f"corpus folder not found: {folder}")
    unknown = set(chosen) - set(Settings.model_fields) | set(chosen) & {"api_key", "database_url"}
    if unknown:
        raise ConfigError(f"a job cannot carry {', '.join(sorted(unknown))}: workers take it from their environment")
    settings = Settings.from_env(**chosen)  # this machine's environment, as `research` reads it
    roles = [r.name for r in discover([])] + [SUMMARIZER.name]
    if needs_embedded_server(settings, roles):  # raises for a model with no endpoint
        embedded_model_file(settings, roles)
    return cleaned


def submit(database_url: str, question: str, corpus: Sequence[Path], runs_root: Path,
           choices: dict[str, Any] | None = None, review: dict[str, bool] | None = None) -> int:
    """Queue one research job; returns its id (its run directory is `runs_root/job-<id>`).
    `choices`: the settings the submitter chose (model, rounds, ...); everything else,
    keys and endpoints included, comes from the worker's own environment. `review`:
    {"plan": ..., "clarify": ...}, what the run asks its user (`job_review.py`)."""
    chosen = {k: v for k, v in (choices or {}).items() if v is not None}
    cleaned = check_job(question, corpus, chosen)
    with queue(database_url) as app:
        job_id = app.tasks[TASK].defer(question=cleaned, corpus=[str(Path(p).resolve()) for p in corpus],
                                       runs_root=str(runs_root.resolve()),
                                       settings={k: str(v) if isinstance(v, Path) else v for k, v in chosen.items()},
                                       review={k: bool(v) for k, v in (review or {}).items() if k in ("plan", "clarify")})
    return int(job_id)
