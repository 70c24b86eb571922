"""The workbench's read-mostly panels: corpus folders, past runs, comparing two runs,
long-term memory, the job queue. Each returns JSON-ready data, or raises `Refused`
with one line for the user."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

from briefroom import runs
from briefroom.config import Settings
from briefroom.corpus.documents import HTML_SUFFIXES, PDF_SUFFIXES, TEXT_SUFFIXES
from briefroom.errors import BriefroomError, ConfigError
from briefroom.memory.namespace import Scope
from briefroom.memory.zones import ZONES, MemoryBackend
from briefroom.runpage import report_fragment
from briefroom.workbench.guard import Refused

MAX_FOLDERS = 200
READABLE = TEXT_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES
MAX_DIRS_VISITED = 5000


def corpus_folders(root: Path, skip: Path | None = None) -> list[str]:
    """Folders under `root` (itself included) that hold documents a run can read, a few
    levels deep: what the start form offers. Hidden folders and the runs folder are skipped."""
    base, found, visited = root.resolve(), list[str](), 0
    skipped = skip.resolve() if skip is not None else None
    for here, dirs, files in os.walk(base):
        visited += 1
        depth = len(Path(here).relative_to(base).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__")
                         and (Path(here) / d).resolve() != skipped) if depth < 4 else []
        if any(Path(f).suffix.lower() in READABLE for f in files):
            found.append(str(Path(here).relative_to(base)) or ".")
        if len(found) >= MAX_FOLDERS or visited >= MAX_DIRS_VISITED:
            break
    return found


def run_list(runs_root: Path) -> list[dict[str, Any]]:
    if not runs_root.is_dir():
        return []
    out = []
    for run_dir, record in runs.find_runs(runs_root):
        if run_dir.resolve() == runs_root.resolve():
            continue  # --runs-dir is one run's folder: not a list of runs
        out.append({"name": run_dir.name, "status": record.status if record else "unknown",
                    "question": record.question if record else None, "round": record.round if record else None,
                    "max_rounds": record.settings.get("rounds") if record else None,
                    "updated": record.updated if record else None,
                    "report": (run_dir / "report.md").is_file()})
    return out


def run_summary(run_dir: Path) -> dict[str, Any]:
    """`briefroom runs show`'s numbers, the plan as the charter now holds it."""
    try:
        record = runs.load(run_dir)
        summary = runs.summarize(run_dir, record).model_dump(mode="json")
    except ConfigError as exc:
        raise Refused(422, str(exc)) from None
    summary["report_ready"] = (run_dir / "report.md").is_file()
    summary["name"] = run_dir.name
    summary["budget"] = record.settings.get("max_tokens")
    return summary


def report(run_dir: Path) -> dict[str, Any]:
    try:
        return {"ready": (run_dir / "report.md").is_file(), "html": report_fragment(run_dir)}
    except ConfigError as exc:  # a damaged sources.json: said, not hidden
        raise Refused(422, str(exc)) from None


KEY_NUMBERS = ("status", "round", "model_calls", "prompt_tokens", "completion_tokens", "tool_calls", "messages",
               "memory_written", "resumes")


def compare(a: Path, b: Path) -> dict[str, Any]:
    """Two runs side by side: their questions, key numbers and reports."""
    sides = []
    for run_dir in (a, b):
        summary = run_summary(run_dir)
        text = (run_dir / "report.md").read_text(encoding="utf-8") if summary["report_ready"] else ""
        numbers = {k: summary[k] for k in KEY_NUMBERS}
        numbers["report_words"] = len(text.split())
        numbers["cited_sources"] = text.count("(source `")
        sides.append({"name": run_dir.name, "question": summary["question"], "numbers": numbers,
                      "html": report(run_dir)["html"]})
    return {"runs": sides}


@contextmanager
def memory(settings: Settings) -> Iterator[tuple[MemoryBackend, Any]]:
    """The memory store of the ui's data directory (or database) and its namespace, as
    `briefroom memory` opens them; held like a run holds the data directory, so a run
    of another process is waited for rather than read half-written."""
    from briefroom.corpus.embeddings import make_embedder
    from briefroom.memory.namespace import Namespace, default_user
    from briefroom.run import data_dir_in_use
    from briefroom.stores import open_memory

    ns = Namespace(settings.user or default_user(), settings.session)
    try:
        with data_dir_in_use(settings.data_dir, wait=2.0) if not settings.database_url else _nothing():
            store = open_memory(settings, make_embedder(settings.embedder))
            try:
                yield store, ns
            finally:
                store.close()  # type: ignore[attr-defined]
    except BriefroomError as exc:
        raise Refused(409, str(exc)) from None


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def memory_items(settings: Settings, zone: str | None) -> dict[str, Any]:
    if zone is not None and zone not in ZONES:
        raise Refused(400, f"zone must be one of {', '.join(ZONES)}")
    with memory(settings) as (store, ns):
        items = store.items(ns, cast(Scope, settings.memory_scope), zone)
    return {"namespace": f"{ns.user}/{ns.session}", "scope": settings.memory_scope, "items": items}


def forget(settings: Settings, item_id: Any) -> dict[str, Any]:
    if not isinstance(item_id, str) or not item_id.strip() or len(item_id) > 200:
        raise Refused(400, "give the memory's id (from the list) as a string")
    with memory(settings) as (store, ns):
        removed = store.forget(item_id, ns, cast(Scope, settings.memory_scope))
    if not removed:
        raise Refused(404, f"no memory {item_id[:80]!r} in this namespace")
    return {"forgot": item_id, "rows": removed}


def jobs(database_url: str | None) -> dict[str, Any]:
    """The job queue's jobs (`briefroom jobs list`), or why there is none to show."""
    if not database_url:
        return {"configured": False, "message": "no job queue: start the workbench with --database-url "
                                                "(or BRIEFROOM_DATABASE_URL) to see the jobs `briefroom submit` queued"}
    try:
        from briefroom import jobs as queue
    except ImportError as exc:
        return {"configured": False, "message": f"the job queue needs the server extra ({exc.name} is missing)"}
    try:
        rows = queue.list_jobs(database_url)
    except BriefroomError as exc:
        raise Refused(502, str(exc)) from None
    except Exception as exc:  # the database's own errors: one line, without the URL's password
        from briefroom.database import public_url

        raise Refused(502, f"the job queue's database did not answer ({public_url(database_url)}): "
                           f"{type(exc).__name__}") from None
    return {"configured": True, "jobs": [asdict(r) for r in rows]}
