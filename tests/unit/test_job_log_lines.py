"""The job worker's log: library records as one line each, a restart of the database said
the same way whichever part of the worker noticed it first."""

import logging

from briefroom.job_workers import _OneLine

URL = "postgresql://briefroom:hunter2secret@127.0.0.1:5432/jobs"


def line(message: str, level: int = logging.ERROR) -> str:
    record = logging.LogRecord("procrastinate.worker", level, __file__, 1, message, None, None)
    return _OneLine(URL).format(record)


def test_a_listener_that_lost_the_database_says_the_database_went_away_in_one_line():
    out = line("listener error: ConnectorException('\n    Database error.\n    ')")
    assert "the database went away" in out and "\n" not in out and "reconnects" in out


def test_other_records_keep_their_level_and_first_line_without_the_password():
    out = line(f"could not reach {URL}\nTraceback (most recent call last): ...", logging.WARNING)
    assert out.split(": ", 2)[1] == "warning" and "Traceback" not in out and "hunter2secret" not in out
