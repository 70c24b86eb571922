"""`memory list|search|show|forget|export`: long-term memory, per namespace."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from briefroom.cli.common import DatabaseUrl, DataDir, Json, Session, User, _fail, _settings, err, stdout
from briefroom.errors import BriefroomError

memory_app = typer.Typer(help="Long-term memory: list, search, show, forget, export (per namespace).")
Zone = Annotated[Optional[str], typer.Option("--zone", help="vector | fact | skill (default: all)")]
Scope_ = Annotated[str, typer.Option("--scope", help="user (all sessions) | session")]


@contextlib.contextmanager
def _memory(data_dir: Path | None, user: str | None, session: str | None, scope: str, zone: str | None = None,
            database_url: str | None = None):
    """The store (the data directory's, or PostgreSQL's with --database-url: the memory
    runs read and write), namespace and scope for a memory command; closed after, errors
    as one line."""
    from briefroom.corpus.embeddings import make_embedder
    from briefroom.memory.namespace import Namespace, default_user
    from briefroom.memory.zones import ZONES
    from briefroom.stores import open_memory

    try:
        overrides = {"database_url": database_url} if database_url else {}
        settings = _settings(data_dir=data_dir, user=user, session=session, memory_scope=scope, **overrides)
        if zone is not None and zone not in ZONES:
            raise BriefroomError(f"--zone must be one of {', '.join(ZONES)}")
        ns = Namespace(settings.user or default_user(), settings.session)
        store = open_memory(settings, make_embedder(settings.embedder))
        try:
            yield store, ns, settings.memory_scope
        finally:
            store.close()
    except BriefroomError as exc:
        raise _fail(str(exc)) from None


def _print_items(items: list[dict], as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(items, indent=1, ensure_ascii=False) + "\n")
        return
    if not items:
        err.print("no memories in this namespace")
    for item in items:
        status = f" [{item['status']}]" if item.get("status") else ""
        head = f"{item['id']}  {item['zone']}{status}"
        stdout.print(f"[bold]{head}[/]  {item.get('entity', '') or item.get('kind', '')}", markup=True)
        stdout.print("    " + str(item["text"]).replace("\n", "\n    "), markup=False)


@memory_app.command("list")
def memory_list(data_dir: DataDir = None, user: User = None, session: Session = None, zone: Zone = None,
                scope: Scope_ = "user", database_url: DatabaseUrl = None,
                as_json: Json = False) -> None:
    """Every memory in the namespace, oldest first."""
    with _memory(data_dir, user, session, scope, zone, database_url) as (store, ns, scope):
        items = store.items(ns, scope, zone)
    _print_items(items, as_json)


@memory_app.command("search")
def memory_search(query: Annotated[str, typer.Argument(help="what to look for")], data_dir: DataDir = None,
                  user: User = None, session: Session = None, scope: Scope_ = "user",
                  database_url: DatabaseUrl = None,
                  threshold: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.5,
                  as_json: Json = False) -> None:
    """Memories and skills similar to QUERY (what a run would recall), best first."""
    with _memory(data_dir, user, session, scope, None, database_url) as (store, ns, scope):
        found = [*store.recall(query, ns, scope, threshold=threshold),
                 *store.skills_for(query, ns, scope, threshold=threshold)]
    _print_items([{"id": r.item_id, "zone": r.zone, "text": r.text, "similarity": r.similarity, "score": r.score,
                   "provenance": r.provenance} for r in found], as_json)


@memory_app.command("show")
def memory_show(item_id: Annotated[str, typer.Argument(help="a memory id from list or search")],
                data_dir: DataDir = None, user: User = None, session: Session = None, scope: Scope_ = "user",
                database_url: DatabaseUrl = None) -> None:
    """One memory with its provenance, as JSON."""
    with _memory(data_dir, user, session, scope, None, database_url) as (store, ns, scope):
        items = [i for i in store.items(ns, scope) if i["id"] == item_id]
        if not items:
            raise BriefroomError(f"no memory {item_id!r} in this namespace")
    sys.stdout.write(json.dumps(items[0], indent=1, ensure_ascii=False) + "\n")


@memory_app.command("forget")
def memory_forget(item_id: Annotated[str, typer.Argument(help="a memory id from list or search")],
                  data_dir: DataDir = None, user: User = None, session: Session = None,
                  scope: Scope_ = "user", database_url: DatabaseUrl = None) -> None:
    """Remove a memory from every zone and compact the stores (no plaintext left on disk)."""
    with _memory(data_dir, user, session, scope, None, database_url) as (store, ns, scope):
        removed = store.forget(item_id, ns, scope)
        if not removed:
            raise BriefroomError(f"no memory {item_id!r} in this namespace")
    err.print(f"forgot {item_id} ({removed} row(s), history included)")


@memory_app.command("export")
def memory_export(data_dir: DataDir = None, user: User = None, session: Session = None, zone: Zone = None,
                  scope: Scope_ = "user", database_url: DatabaseUrl = None) -> None:
    """The namespace's memories as JSON lines, one per memory (to back up or move)."""
    with _memory(data_dir, user, session, scope, zone, database_url) as (store, ns, scope):
        items = store.items(ns, scope, zone)
    for item in items:
        sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")
