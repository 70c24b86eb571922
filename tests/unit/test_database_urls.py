"""Database URLs in messages and run.json: never the password, in any spelling."""

from __future__ import annotations

from briefroom.database import first_line, is_postgres_url, public_url, scrub


def test_public_url_drops_the_password_and_the_query_and_keeps_ipv6_valid():
    assert public_url("postgresql://app:s3cret@db.internal:5432/briefroom") == "postgresql://app@db.internal:5432/briefroom"
    assert "s3cret" not in public_url("postgresql://app@db/briefroom?password=s3cret")
    assert public_url("postgresql://app:pw@[::1]:5432/db") == "postgresql://app@[::1]:5432/db"
    assert "pw" not in public_url("postgresql://app:pw@[::1:bad/db")  # unparseable: scheme only


def test_a_driver_error_repeating_the_password_is_scrubbed():
    url = "postgresql://app:s3cret%zz@127.0.0.1:1/db"
    error = ValueError('invalid percent-encoded token: "s3cret%zz"\nmore lines')
    line = first_line(error, url)
    assert "s3cret" not in line and line.startswith("ValueError: invalid percent-encoded token")
    assert "\n" not in line
    assert first_line(RuntimeError(), url) == "RuntimeError"
    assert scrub(f"cannot reach {url}", url) == "cannot reach postgresql://app@127.0.0.1:1/db"
    assert is_postgres_url("postgres://x") and not is_postgres_url("sqlite:///x") and not is_postgres_url(None)
