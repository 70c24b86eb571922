"""A run's MCP servers: started together, their tools given to the roles the config
names, closed with the run.

    servers = stack.enter_context(open_servers(settings.mcp_config))   # before the graph
    roles = servers.offer_to(roles)                                    # roles see the tools
    tools.update(servers.tools(index))                                 # where tools are assembled

A role is offered a server's tools as optional tools (`Role.optional_tools`): it uses
them when the run has them, and a run without `--mcp-config` is unchanged.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from briefroom.errors import ConfigError
from briefroom.mcp.client import McpConnection, RemoteTool
from briefroom.mcp.config import SEARCH, McpConfig, load_mcp_config
from briefroom.mcp.tools import IndexForSources, make_tool, tool_name

if TYPE_CHECKING:
    from briefroom.protocol.tools import Tool


class TakesTools(Protocol):
    """What a role is to the servers (`agents.base.Role` is one): a name the config uses,
    the optional tools it may call, and its capabilities (a server naming no roles serves
    the one with SEARCH). A dataclass, so `offer_to` can copy it."""

    @property
    def name(self) -> str: ...

    @property
    def optional_tools(self) -> tuple[str, ...]: ...

    @property
    def capabilities(self) -> tuple[str, ...]: ...


R = TypeVar("R", bound=TakesTools)


@dataclass
class McpServers:
    config_path: Path | None = None
    connections: list[McpConnection] = field(default_factory=list)
    listed: dict[str, list[RemoteTool]] = field(default_factory=dict)  # server -> the tools offered
    names: dict[tuple[str, str], str] = field(default_factory=dict)  # (server, tool) -> the run's tool name

    def offer_to(self, roles: list[R]) -> list[R]:
        """The roles, each with the tools of the servers that name it as optional tools."""
        if not self.connections:
            return roles
        by_name = {r.name: r for r in roles}
        extra: dict[str, list[str]] = {}
        for connection in self.connections:
            default = [r.name for r in roles if SEARCH in r.capabilities]
            for role in connection.server.roles or default:
                if role not in by_name:
                    raise ConfigError(f"MCP config {self.config_path}: server {connection.name!r} names role "
                                      f"{role!r}, which this team does not have (roles: {', '.join(by_name)})")
                extra.setdefault(role, []).extend(self.names[(connection.name, t.name)]
                                                  for t in self.listed[connection.name])
        return [cast(R, dataclasses.replace(cast(Any, r), optional_tools=(*r.optional_tools, *extra[r.name])))
                if r.name in extra else r for r in roles]

    def tools(self, index: object, addressees: tuple[str, ...] = ()) -> dict[str, "Tool"]:
        """The servers' tools by the run's names; their results become sources in `index`
        (`addressees`: the team's role names, which a result may not address)."""
        if not self.connections:
            return {}
        if not (hasattr(index, "add_document") and hasattr(index, "passages")):
            raise ConfigError("--mcp-config needs the run's own index (it does not work with --database-url yet): "
                              "MCP results are stored as sources there")
        store: IndexForSources = index  # type: ignore[assignment]
        return {self.names[(c.name, t.name)]: make_tool(c, t, self.names[(c.name, t.name)], store, addressees)
                for c in self.connections for t in self.listed[c.name]}

    def close(self) -> None:
        with ThreadPoolExecutor(max_workers=max(1, len(self.connections))) as pool:
            list(pool.map(McpConnection.close, self.connections))
        self.connections = []


@contextlib.contextmanager
def open_servers(config_path: Path | None) -> Iterator[McpServers]:
    """Start every server of the file at once (a slow one does not delay the others),
    or none: the first that cannot start is a ConfigError and the others are stopped."""
    servers = McpServers(config_path)
    if config_path is None:
        yield servers
        return
    config = load_mcp_config(config_path)
    try:
        _start(servers, config, config_path)
        yield servers
    finally:
        servers.close()


def _start(servers: McpServers, config: McpConfig, config_path: Path) -> None:
    connections = [McpConnection(name, server, config_path) for name, server in config.mcpServers.items()]
    servers.connections = connections  # closed by the caller, started or not
    with ThreadPoolExecutor(max_workers=max(1, len(connections))) as pool:
        started = list(pool.map(_try_start, connections))
    for connection, outcome in zip(connections, started):
        if isinstance(outcome, ConfigError):
            raise outcome
        wanted = connection.server.tools
        if wanted is not None:
            missing = sorted(set(wanted) - {t.name for t in outcome})
            if missing:
                raise ConfigError(f"MCP config {config_path}: server {connection.name!r} has no tool "
                                  f"{', '.join(missing)} (it offers {', '.join(t.name for t in outcome) or 'none'})")
            outcome = [t for t in outcome if t.name in wanted]
        servers.listed[connection.name] = outcome
    taken: set[str] = set()
    for connection in connections:
        for remote in servers.listed[connection.name]:
            name = tool_name(connection.name, remote.name, taken)
            taken.add(name)
            servers.names[(connection.name, remote.name)] = name


def _try_start(connection: McpConnection) -> list[RemoteTool] | ConfigError:
    try:
        return connection.start()
    except ConfigError as exc:
        return exc
