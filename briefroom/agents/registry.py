"""Role registry: discovers roles from this package, plugin files and entry points.

A role is one Python file defining `ROLE = Role(...)` plus its prompt file. Built-in
roles live in this package; users add theirs with `--roles-dir DIR` (every *.py in it)
or an installed package exposing the `briefroom.roles` entry point group.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

from briefroom.agents.base import Role
from briefroom.errors import ConfigError
from briefroom.protocol.bus import Bus
from briefroom.protocol.messages import MsgType, message_types

_NOT_ROLES = {"base", "registry", "run_context", "model_calls", "prompting", "structured", "tool_loop"}


def builtin_roles() -> list[Role]:
    import briefroom.agents as package

    roles = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name in _NOT_ROLES:
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        if isinstance(getattr(module, "ROLE", None), Role):
            roles.append(module.ROLE)
    return roles


def load_role_file(path: Path) -> Role:
    if not path.is_file():
        raise ConfigError(f"role file not found: {path}")
    spec = importlib.util.spec_from_file_location(f"briefroom_role_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load role file {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered first, as an import would: pydantic resolves a role file's postponed
    # annotations (`from __future__ import annotations`) through sys.modules.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(spec.name, None)
        raise ConfigError(f"role file {path} failed to load: {type(exc).__name__}: {exc}") from exc
    role = getattr(module, "ROLE", None)
    if not isinstance(role, Role):
        raise ConfigError(f"role file {path} does not define ROLE = Role(...)")
    return role


def discover(roles_dirs: list[Path] | None = None, *, entry_point_group: str = "briefroom.roles") -> list[Role]:
    """All roles, in speaking order; a later definition of a name replaces an earlier one."""
    found = {r.name: r for r in builtin_roles()}
    for ep in entry_points(group=entry_point_group):
        role = ep.load()
        if isinstance(role, Role):
            found[role.name] = role
    for directory in roles_dirs or []:
        if not directory.is_dir():
            raise ConfigError(f"roles folder not found: {directory}")
        for path in sorted(directory.glob("*.py")):
            role = load_role_file(path)
            found[role.name] = role
    return speaking_order(list(found.values()))


def speaking_order(roles: list[Role]) -> list[Role]:
    """`roles` in the order they speak, derived from what they declare (`Role.after`,
    `Role.before`, `Role.guards`): each role comes after every role it must follow. Of
    the roles free to go next, the one found first goes (built-in roles, then entry
    points, then role files), so a role declaring nothing speaks after the built-in team.
    Declarations that contradict each other fail, naming the roles."""
    return _in_order(roles, _must_follow(roles))


def _must_follow(roles: list[Role]) -> dict[str, set[str]]:
    """Role -> the roles that speak before it, from every role's declarations."""
    team = _Team.of(roles)
    first: dict[str, set[str]] = {r.name: set() for r in roles}
    for role in roles:
        for entry in role.after:
            first[role.name].update(n for n in team.named(entry, team.publishers) if n != role.name)
        for entry in role.before:
            for later in team.named(entry, team.readers):
                if later != role.name:
                    first[later].add(role.name)
        for guarded in role.guards:  # between what it guards and who reads it, other guards aside
            others = team.guards[guarded]
            first[role.name].update(n for n in team.publishers[guarded] if n not in others)
            for later in team.readers[guarded]:
                if later not in others:
                    first[later].add(role.name)
    return first


@dataclass(frozen=True)
class _Team:
    """Who holds each capability, and who publishes, reads and guards each message type."""

    holders: dict[str, str]
    publishers: dict[MsgType, list[str]]
    readers: dict[MsgType, list[str]]
    guards: dict[MsgType, set[str]]

    @classmethod
    def of(cls, roles: list[Role]) -> "_Team":
        return cls(holders={capability: r.name for r in roles for capability in r.capabilities},
                   publishers={t: [r.name for r in roles if t in r.publications] for t in message_types()},
                   readers={t: [r.name for r in roles if any(s.msg_type is t for s in r.subscriptions)]
                            for t in message_types()},
                   guards={t: {r.name for r in roles if t in r.guards} for t in message_types()})

    def named(self, entry: str, who: dict[MsgType, list[str]]) -> list[str]:
        """The roles an `after=`/`before=` entry names: a message type's publishers or
        readers (`who`), or a capability's holder (none when this team lacks it)."""
        if entry in who:
            return who[MsgType.of(entry)]
        return [self.holders[entry]] if entry in self.holders else []


def _in_order(roles: list[Role], first: dict[str, set[str]]) -> list[Role]:
    """The roles with each after those it must follow; of those free to go, the one found first."""
    placed: list[Role] = []
    done: set[str] = set()
    waiting = list(roles)
    while waiting:
        ready = next((r for r in waiting if first[r.name] <= done), None)
        if ready is None:
            stuck = ", ".join(f"{r.name} (after {', '.join(sorted(first[r.name] - done))})" for r in waiting)
            raise ConfigError(f"the roles' speaking order contradicts itself: {stuck}; "
                              "check their after=, before= and guards=")
        placed.append(ready)
        done.add(ready.name)
        waiting.remove(ready)
    return placed


def bus_for(roles: list[Role]) -> Bus:
    """The bus for a team given in speaking order: several guards of one type pass a
    message on in that order."""
    return Bus({r.name: r.subscriptions for r in roles}, {r.name: r.publications for r in roles},
               capabilities={r.name: r.capabilities for r in roles}, guards={r.name: r.guards for r in roles})
