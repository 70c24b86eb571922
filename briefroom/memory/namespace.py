"""Namespaces: user -> session -> task (the task is the run).

Every row carries all three; a read names a scope, and the scope becomes a filter in
the store's own query (SQL WHERE, chromadb `where`). Prefix scopes: `user` reads a
user's memories across sessions, `session` a session's across tasks, `task` one run's.
"""

from __future__ import annotations

import getpass
import os
import re
from dataclasses import dataclass
from typing import Literal

from briefroom.errors import ConfigError

Scope = Literal["user", "session", "task"]
SCOPES: tuple[Scope, ...] = ("user", "session", "task")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


def default_user() -> str:
    """BRIEFROOM_USER, else the login name."""
    if os.environ.get("BRIEFROOM_USER"):
        return os.environ["BRIEFROOM_USER"]
    try:
        name = getpass.getuser()
    except Exception:  # no login name in some containers
        name = "default"
    return name if _NAME.match(name) else "default"


@dataclass(frozen=True)
class Namespace:
    user: str
    session: str = "default"
    task: str = "default"

    def __post_init__(self) -> None:
        for level in SCOPES:
            value = getattr(self, level)
            if not _NAME.match(value):
                raise ConfigError(f"--{level} must be 1-64 letters, digits, '.', '_', '@' or '-'; got {value!r}")

    def fields(self, scope: Scope) -> dict[str, str]:
        """The namespace fields a query in `scope` must match."""
        levels = SCOPES[:SCOPES.index(scope) + 1]
        return {level: getattr(self, level) for level in levels}

    def sql(self, scope: Scope, alias: str = "") -> tuple[str, list[str]]:
        prefix = f"{alias}." if alias else ""
        fields = self.fields(scope)
        return " AND ".join(f"{prefix}{k} = ?" for k in fields), list(fields.values())
