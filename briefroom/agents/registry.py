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
from importlib.metadata import entry_points
from pathlib import Path

from briefroom.agents.base import Role
from briefroom.errors import ConfigError
from briefroom.protocol.bus import Bus

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
    """All roles, sorted by speaking order; a later definition of a name replaces an earlier one."""
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
    return sorted(found.values(), key=lambda r: (r.order, r.name))


def bus_for(roles: list[Role]) -> Bus:
    return Bus({r.name: r.subscriptions for r in roles}, {r.name: r.publications for r in roles},
               capabilities={r.name: r.capabilities for r in roles}, guards={r.name: r.guards for r in roles})
