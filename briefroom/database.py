"""PostgreSQL URLs as briefroom shows and checks them: one place that knows the schemes,
takes the password out of a URL for messages and run.json, and takes it out of a
driver's error text too (psycopg repeats a badly encoded password in its message)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(url: str | Path | None) -> bool:
    return isinstance(url, str) and url.startswith(POSTGRES_SCHEMES)


def public_url(url: str) -> str:
    """The URL without its password or query (which may carry one), IPv6 hosts bracketed."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:  # not a URL a driver would accept either: show only its scheme
        return url.split("://", 1)[0] + "://…" if "://" in url else "…"
    if ":" in host:
        host = f"[{host}]"
    netloc = (f"{parts.username}@" if parts.username else "") + host + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def scrub(text: str, url: str | None) -> str:
    """`text` (an error message) without the URL's password, raw or decoded, and
    without the URL itself."""
    if not url:
        return text
    out = text.replace(url, public_url(url))
    try:
        raw = urlsplit(url).netloc.rpartition("@")[0].partition(":")[2]
    except ValueError:
        raw = ""
    for secret in {raw, unquote(raw)} - {""}:
        # as a whole token only: a short password ("p") must not turn "port" into "***ort"
        out = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", "***", out)
    return out


def first_line(exc: BaseException, url: str | None = None) -> str:
    """An exception as one line for a user: its first line (its type when it says
    nothing), with the database password taken out."""
    lines = str(exc).strip().splitlines()
    return scrub(f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__, url)


def connection_lost(exc: BaseException) -> bool:
    """True when `exc`, or what caused it, is PostgreSQL going away under a run that had
    connected (a restart, a dropped link, a pool that cannot reconnect): the run stopped
    through no fault of its own and can go on from its checkpoint."""
    try:
        from psycopg import OperationalError
    except ImportError:  # no server extra: no PostgreSQL connection to lose
        return False
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OperationalError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
