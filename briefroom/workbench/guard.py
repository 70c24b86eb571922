"""What the workbench refuses before any handler runs, and the paths it will touch.

The workbench is a network service even on loopback: any page the user's browser opens
can send it requests. So a request must name this server in `Host` (a DNS-rebinding
page names its own host), a request that carries an `Origin` or `Sec-Fetch-Site` must
come from this server's own page, and a request that changes something must say so
with its `Origin` and a JSON body (a cross-site form cannot send `application/json`
without a CORS preflight, which the server never grants). Paths come from the user
only as names under the folders the ui was started with (`--corpus-root`,
`--runs-dir`), checked after symlinks are resolved.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_BODY_BYTES = 64 * 1024  # an answer or a question; nothing the workbench takes is larger
_RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class Refused(Exception):
    """A request the workbench will not serve: an HTTP status and one line saying why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


@dataclass(frozen=True)
class Origin:
    """The addresses this server answers to: `host:port` forms a browser puts in `Host`."""

    host: str
    port: int

    @property
    def hosts(self) -> frozenset[str]:
        names = {self.host, f"[{self.host}]" if ":" in self.host else self.host}
        if self.host in ("127.0.0.1", "::1", "localhost"):  # loopback: its usual names too
            names.update(LOOPBACK_NAMES)
        return frozenset(f"{n}:{self.port}" for n in names)

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{h}" for h in self.hosts)


def check_request(method: str, headers: Mapping[str, str], origin: Origin) -> None:
    """Refuse a request that is not from this server's own page (403), or a change
    sent without a JSON body (415)."""
    host = headers.get("host", "")
    if host.lower() not in origin.hosts:
        raise Refused(403, f"refused: Host {host[:80]!r} is not this workbench "
                           f"({sorted(origin.hosts)[0]}); open it at its own address")
    sent_from = headers.get("origin")
    if sent_from is not None and sent_from.lower() not in origin.origins:
        raise Refused(403, f"refused: a request from another site ({sent_from[:80]!r})")
    if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        raise Refused(403, f"refused: a {headers['sec-fetch-site'][:20]} request")
    if method not in ("GET", "POST"):
        raise Refused(405, f"{method[:10]} is not a method the workbench takes (GET or POST)")
    if method == "POST":
        if sent_from is None:  # browsers send Origin on every POST; a page of this server did
            raise Refused(403, "refused: a change needs the Origin header of this workbench's page")
        kind = headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise Refused(415, "send the request body as application/json")


def json_body(raw: bytes) -> dict[str, Any]:
    """A request body as a JSON object, or a 400 saying what is wrong with it."""
    if len(raw) > MAX_BODY_BYTES:
        raise Refused(413, f"the request body is {len(raw):,} bytes; at most {MAX_BODY_BYTES:,}")
    try:
        value = json.loads(raw.decode("utf-8") or "{}")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Refused(400, f"the request body is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise Refused(400, f"the request body is a JSON {type(value).__name__}, not an object")
    return value


def inside(root: Path, relative: str, what: str) -> Path:
    """`relative` resolved under `root`, or a 400/404: an absolute path, `..` or a symlink
    out of the root is refused, whatever it points to."""
    if not isinstance(relative, str) or not relative.strip():
        raise Refused(400, f"give the {what} as a folder name under {root}")
    if "\x00" in relative or Path(relative).is_absolute():
        raise Refused(400, f"the {what} must be a folder under {root}, not an absolute path")
    base = root.resolve()
    path = (base / relative).resolve()
    if path != base and base not in path.parents:
        raise Refused(403, f"the {what} {relative[:80]!r} is outside {root}")
    if not path.is_dir():
        raise Refused(404, f"no such {what}: {relative[:80]!r} (under {root})")
    return path


def run_dir(runs_root: Path, name: str) -> Path:
    """A run directory by its name under `--runs-dir`; nothing else is a run here."""
    if not isinstance(name, str) or not _RUN_NAME.fullmatch(name) or name in (".", ".."):
        raise Refused(400, f"not a run name: {str(name)[:80]!r}")
    path = (runs_root / name).resolve()
    if path.parent != runs_root.resolve():  # a symlinked run folder pointing elsewhere
        raise Refused(403, f"the run {name!r} is outside {runs_root}")
    if not (path / "run.json").is_file():
        raise Refused(404, f"no run {name!r} under {runs_root}")
    return path
