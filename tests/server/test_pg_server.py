"""The test server itself: loopback only, pgvector, password, gone after use."""

from __future__ import annotations

import psycopg
import pytest

from briefroom.postgres.server import PostgresUnavailable, find_bin, local_postgres


def test_server_listens_on_loopback_only_with_pgvector_and_a_password(pg_server):
    with psycopg.connect(pg_server.url, autocommit=True) as conn:
        assert conn.execute("SHOW listen_addresses").fetchone()[0] == "127.0.0.1"
        assert conn.execute("SHOW unix_socket_directories").fetchone()[0] == ""
        assert str(conn.execute("SELECT inet_server_addr()").fetchone()[0]) == "127.0.0.1"
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        assert conn.execute("SELECT '[1,0]'::vector <=> '[2,0]'::vector").fetchone()[0] == pytest.approx(0.0)
        assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0] >= "0.8"
    wrong = pg_server.url.replace(pg_server.password, "not-the-password")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(wrong)


def test_a_server_is_stopped_and_its_files_deleted_on_exit():
    with local_postgres() as pg:
        assert pg.pgdata.joinpath("PG_VERSION").is_file() and pg.process.poll() is None
        root, process = pg.root, pg.process
    assert process.poll() is not None and not root.exists()


def test_a_server_that_cannot_start_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("BRIEFROOM_PG_BIN", str(tmp_path))
    with pytest.raises(PostgresUnavailable, match="no postgres and initdb in"):
        find_bin()
    with pytest.raises(PostgresUnavailable, match="no postgres and initdb"), local_postgres():
        pass
