"""The MCP servers file: Claude Desktop's `mcpServers` shape, checked before a run starts.

    {"mcpServers": {
        "stats": {"command": "python", "args": ["server.py"], "env": {"LEVEL": "1"}},
        "wiki":  {"url": "http://127.0.0.1:8765/mcp"}}}

JSON, or YAML for a `.yaml`/`.yml` file. A server is started as a process (`command`,
`args`, `env`, `cwd`) and spoken to over stdio, or reached over streamable HTTP (`url`).
A URL must be on this machine (loopback) unless the server says `allow_remote: true`:
a config file copied from elsewhere must not make a run send its questions to a host
nobody chose. Besides Claude Desktop's fields a server may set which roles get its
tools (`roles`; by default the role declaring the capability "search", the Searcher), which of its tools they get (`tools`), how
long one call may take (`timeout_s`) and how much of a result is kept (`max_result_chars`).

Every problem is one ConfigError line naming the file and the field.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from briefroom.errors import ConfigError

SEARCH = "search"  # the capability whose role gets a server's tools when the server names no roles

# A server's name goes into its tools' names (`mcp__<server>__<tool>`), which an
# OpenAI-style endpoint accepts only as [A-Za-z0-9_-]{1,64}.
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,24}$")
DEFAULT_TIMEOUT_S = 30.0
# 200,000 characters is ~50,000 tokens: far more than any budget shows, enough for
# read_artifact to page through; a 10 MB answer is cut here, before the envelope.
DEFAULT_MAX_RESULT_CHARS = 200_000


class ServerConfig(BaseModel):
    """One entry of `mcpServers`: a process to start (stdio) or a URL (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = Field(default=None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = Field(default=None, min_length=1)
    allow_remote: bool = False
    # None: the role that declares the capability SEARCH (the Searcher), whatever its name
    roles: list[str] | None = Field(default=None, min_length=1)
    tools: list[str] | None = None  # offer only these of the server's tools (default: all)
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=600)
    max_result_chars: int = Field(default=DEFAULT_MAX_RESULT_CHARS, ge=1000, le=5_000_000)

    @model_validator(mode="after")
    def _one_transport(self) -> "ServerConfig":
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a process spoken to over stdio) or url (streamable HTTP)")
        if self.command is None and (self.args or self.env or self.cwd):
            raise ValueError("args, env and cwd are for a command; a url server takes none")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "streamable-http"


class McpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mcpServers: dict[str, ServerConfig] = Field(default_factory=dict)  # noqa: N815 (Claude Desktop's name)


def load_mcp_config(path: Path) -> McpConfig:
    """The file's servers, each checked (name, fields, command on PATH, URL host); a
    ConfigError line otherwise."""
    if not path.is_file():
        raise ConfigError(f"MCP config not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"MCP config {path}: cannot read it ({exc})") from None
    raw = _parse(path, text)
    try:
        config = McpConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"MCP config {path}: {_first_problem(exc)}") from None
    for name, server in config.mcpServers.items():
        if not SERVER_NAME.match(name):
            raise ConfigError(f"MCP config {path}: server name {name[:40]!r} must be 1-24 letters, digits, - or _")
        problem = _command_problem(server, path) if server.command is not None else _url_problem(server)
        if problem:
            raise ConfigError(f"MCP config {path}: server {name!r}: {problem}")
    return config


def _parse(path: Path, text: str) -> Any:
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            raise ConfigError(f"MCP config {path}: not valid YAML{where}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"MCP config {path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None


def _first_problem(exc: ValidationError) -> str:
    problem = exc.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    if problem["type"] == "extra_forbidden":
        return f"unknown field {where}"
    if problem["type"] == "model_type" and not problem["loc"]:
        return "expected an object with mcpServers"
    message = problem["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def _command_problem(server: ServerConfig, config_path: Path) -> str | None:
    """Whether the command can start: found on PATH, or a file that exists (relative
    paths are taken from the config file's folder, as `cwd` is)."""
    command = server.command or ""
    if os.sep in command or (os.altsep and os.altsep in command):
        found = Path(command) if Path(command).is_absolute() else config_path.parent / command
        if not found.is_file():
            return f"command not found: {command}"
    elif shutil.which(command) is None:
        return f"command not found on PATH: {command}"
    if server.cwd is not None and not resolve_cwd(server, config_path).is_dir():
        return f"cwd is not a folder: {server.cwd}"
    return None


def _url_problem(server: ServerConfig) -> str | None:
    url = server.url or ""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError:
        return f"not a valid URL: {url[:80]}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"url must be http(s)://host[:port]/path, got {url[:80]!r}"
    if not server.allow_remote and not is_loopback(parts.hostname):
        return (f"url host {parts.hostname!r} is not this machine (loopback); set \"allow_remote\": true "
                "to let a run send its questions there")
    return None


def is_loopback(host: str) -> bool:
    """localhost, 127.0.0.0/8 or ::1 (by name, not by what a resolver says)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def resolve_cwd(server: ServerConfig, config_path: Path) -> Path:
    """Where a stdio server runs: its `cwd`, relative to the config file, or that file's folder."""
    if server.cwd is None:
        return config_path.parent.resolve()
    return (server.cwd if server.cwd.is_absolute() else config_path.parent / server.cwd).resolve()


def resolve_command(server: ServerConfig, config_path: Path) -> str:
    """The command to start: a relative path is the config file's folder's."""
    command = server.command or ""
    if (os.sep in command) and not Path(command).is_absolute():
        return str((config_path.parent / command).resolve())
    return command
