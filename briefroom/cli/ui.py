"""`briefroom ui`: the workbench, a local page in the browser (briefroom/workbench/)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from briefroom.cli.common import DatabaseUrl, DataDir, Session, User, _fail, _settings, err
from briefroom.errors import BriefroomError


def ui(
    port: Annotated[int, typer.Option(min=0, max=65535, help="port to serve on (0: a free one)")] = 8765,
    host: Annotated[str, typer.Option(help="address to bind; the default is loopback only")] = "127.0.0.1",
    corpus_root: Annotated[Path, typer.Option("--corpus-root", help="the folder whose subfolders runs may read "
                                              "(default: the current directory)")] = Path("."),
    runs_dir: Annotated[Path, typer.Option("--runs-dir", help="where runs are written and read back")] = Path("runs"),
    model: Annotated[Optional[str], typer.Option(help="the model the start form proposes: 'test', 'embedded', or "
                                                 "a model on your endpoint")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible endpoint (env OPENAI_BASE_URL); the "
                                                    "page cannot change it")] = None,
    data_dir: DataDir = None,
    user: User = None,
    session: Session = None,
    database_url: DatabaseUrl = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="log every request on stderr")] = False,
) -> None:
    """Serve the workbench: start runs, review plans, follow agents live, read cited
    reports, compare runs, browse memory and the job queue, in your browser."""
    from briefroom.workbench.api import Workbench
    from briefroom.workbench.http import make_server

    if host in ("0.0.0.0", "::", ""):  # the page answers only requests that name its address
        raise _fail(f"--host {host or repr(host)} is every address; give the one address the page is opened at", 2)
    if host not in ("127.0.0.1", "localhost", "::1"):
        err.print(f"[bold yellow]warning:[/] binding {host}: anyone who can reach it can start runs and read "
                  "your runs and memory", markup=True)
    if not corpus_root.is_dir():
        raise _fail(f"--corpus-root {corpus_root} is not a folder", 2)
    overrides = {"model": model, "base_url": base_url, "data_dir": data_dir, "user": user, "session": session,
                 "database_url": database_url}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    try:
        _settings(**overrides)  # bad settings fail here, not at the first request
    except BriefroomError as exc:
        raise _fail(str(exc), 2) from None
    runs_dir.mkdir(parents=True, exist_ok=True)
    bench = Workbench(corpus_root=corpus_root.resolve(), runs_root=runs_dir.resolve(), settings=overrides,
                      verbose=verbose)
    try:
        server = make_server(bench, host, port)
    except OSError as exc:
        raise _fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}", 1) from None
    shown = f"[{host}]" if ":" in host else host
    err.print(f"workbench: http://{shown}:{server.server_address[1]}/  (corpus root {bench.corpus_root}, runs "
              f"{bench.runs_root}; Ctrl-C stops it)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        err.print("workbench stopped")
    finally:
        bench.closing = True
        server.server_close()
