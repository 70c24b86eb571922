"""The `briefroom` command: parse, call the library, print. Errors are one line.

This module composes the command line from its parts, in the order `--help` lists
them: running research (`research.py`), the job queue (`queue.py`), reading runs
back (`reading.py`), benchmarks and the model catalog, memory (`memory.py`),
replays and evaluation (`evaluation.py`); `common.py` holds what they share.
"""

from __future__ import annotations

import signal
import sys

import typer

from briefroom.cli import evaluation, memory, queue, reading, research, ui
from briefroom.cli.common import ABORT, EXIT, USAGE, _fail, _print_result, err
from briefroom.errors import BriefroomError
from briefroom.models.catalog_cli import models_app  # its commands live beside the catalog they use

__all__ = ["app", "main", "install_stop_signals", "_print_result"]

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="briefroom: a team of LLM agents that writes cited research reports.")
app.command()(research.research)
app.command("export")(research.export_report)
app.command()(research.resume)
app.command()(queue.submit)
app.command()(queue.worker)
app.command()(queue.migrate)
app.add_typer(queue.jobs_app, name="jobs")
app.add_typer(reading.runs_app, name="runs")
app.command()(reading.index)
app.command()(reading.inspect)
app.add_typer(evaluation.bench_app, name="bench")
app.add_typer(models_app, name="models")
app.add_typer(memory.memory_app, name="memory")
app.command()(reading.roles)
app.command()(evaluation.replay)
app.command("eval")(evaluation.eval_)
app.command()(ui.ui)


def _stop_like_ctrl_c(*_: object) -> None:
    raise KeyboardInterrupt


def install_stop_signals() -> None:
    """SIGTERM and SIGHUP (a closed terminal) end the run like Ctrl-C does: checkpointed,
    run.json says "interrupted", context managers stop the model server."""
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stop_like_ctrl_c)


def main() -> None:
    install_stop_signals()
    try:
        # Not standalone, click returns a command's exit code instead of exiting
        # (typer turns Ctrl-C into 130): pass it on, or every error would exit 0.
        code = app(standalone_mode=False)
        if code == 130:
            raise KeyboardInterrupt
        if isinstance(code, int) and code:
            sys.exit(code)
    except EXIT as exc:
        sys.exit(exc.exit_code)
    except USAGE as exc:  # bad flags, missing arguments: click's own message
        exc.show()
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, *ABORT):  # run commands say more (`_run_errors`)
        err.print("interrupted")
        sys.exit(130)
    except BriefroomError as exc:
        _fail(str(exc))
        sys.exit(1)
    except OSError as exc:  # the machine said no: a path that is a file, no permission, a full disk
        where = f" ({exc.filename})" if exc.filename else ""
        _fail(f"{exc.strerror or type(exc).__name__}{where}: check the paths given (--out, --data-dir, "
              "--corpus) and free disk space")
        sys.exit(1)
    except Exception as exc:  # a bug: still one line for the user; the run log has the details
        from briefroom.protocol.redaction import redact_text

        first = redact_text(str(exc).splitlines()[0][:300]) if str(exc) else ""
        err.print(f"[bold red]error:[/] internal error (a bug in briefroom, please report it): "
                  f"{type(exc).__name__}: {first}", soft_wrap=True)
        sys.exit(1)

