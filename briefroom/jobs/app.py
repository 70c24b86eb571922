"""The procrastinate App on the queue's database, with briefroom's research task
registered (`_app`), and the queue for short synchronous work (`queue`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from briefroom.database import is_postgres_url
from briefroom.errors import ConfigError
from briefroom.job_review import columns_ddl, retry_strategy
from briefroom.jobs.base import _OUTCOMES_DDL, OUTCOMES_TABLE, QUEUE, TASK, JobInterruptedError
from briefroom.jobs.lease import _fenced_manager
from briefroom.jobs.running import _run_job


def _app(database_url: str, *, sync: bool) -> Any:
    """A procrastinate App on `database_url` with briefroom's research task registered."""
    if not is_postgres_url(database_url):  # the URL may hold a password: not repeated
        raise ConfigError("the job queue needs a PostgreSQL URL (postgresql://...)")
    try:
        import procrastinate
    except ImportError:
        raise ConfigError("the job queue needs the server extra: pip install 'briefroom[server]'") from None
    connector = (procrastinate.SyncPsycopgConnector(conninfo=database_url) if sync
                 else procrastinate.PsycopgConnector(conninfo=database_url))
    app = procrastinate.App(connector=connector)
    if not sync:
        app.job_manager = _fenced_manager(connector, database_url)
    # An interrupted run goes back to the queue as often as it is interrupted; an error
    # does not (it would fail again); a run waiting for its user waits there.
    retry = retry_strategy(JobInterruptedError)

    @app.task(name=TASK, queue=QUEUE, pass_context=True, retry=retry)
    def research(context: Any, question: str, corpus: list[str], runs_root: str, settings: dict[str, Any],
                 review: dict[str, bool] | None = None) -> str:
        return _run_job(context, question, corpus, Path(runs_root), settings, database_url, review)

    return app


@contextlib.contextmanager
def queue(database_url: str) -> Iterator[Any]:
    """The queue for short synchronous work (submit, list, cancel); creates its schema
    the first time."""
    app = _app(database_url, sync=True)
    with app.open():
        _ensure_schema(app)
        yield app


def _ensure_schema(app: Any) -> None:
    row = app.connector.execute_query_one("SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS present")
    if not row["present"]:
        app.schema_manager.apply_schema()
    app.connector.execute_query(_OUTCOMES_DDL)
    app.connector.execute_query(columns_ddl(OUTCOMES_TABLE))
