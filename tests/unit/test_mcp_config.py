"""The MCP servers file: what it accepts, and one line for each way it can be wrong."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from briefroom.config import Settings
from briefroom.errors import ConfigError
from briefroom.mcp.config import is_loopback, load_mcp_config


def write(tmp_path: Path, content: object, name: str = "mcp.json") -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_mcp_config(path)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_claude_desktop_shape_in_json_and_yaml(tmp_path):
    servers = {"stats": {"command": sys.executable, "args": ["server.py"], "env": {"LEVEL": "1"}},
               "wiki": {"url": "http://127.0.0.1:8765/mcp", "roles": ["searcher"], "timeout_s": 5}}
    config = load_mcp_config(write(tmp_path, {"mcpServers": servers}))
    assert config.mcpServers["stats"].transport == "stdio" and config.mcpServers["stats"].roles is None
    assert config.mcpServers["wiki"].transport == "streamable-http" and config.mcpServers["wiki"].timeout_s == 5
    yaml_text = f"mcpServers:\n  stats:\n    command: {sys.executable}\n    args: [server.py]\n"
    assert load_mcp_config(write(tmp_path, yaml_text, "mcp.yaml")).mcpServers["stats"].args == ["server.py"]


@pytest.mark.parametrize("content, expected", [
    ("{not json", "not valid JSON"),
    ({"mcpServers": {"s": {"command": "python3", "colour": "red"}}}, "unknown field mcpServers.s.colour"),
    ({"servers": {}}, "unknown field servers"),
    ({"mcpServers": {"s": {"command": "no-such-command-for-briefroom"}}}, "command not found on PATH"),
    ({"mcpServers": {"s": {"command": "./missing/server.py"}}}, "command not found: ./missing/server.py"),
    ({"mcpServers": {"s": {"url": "http://203.0.113.7:8000/mcp"}}}, "is not this machine (loopback)"),
    ({"mcpServers": {"s": {"url": "https://mcp.example.com/mcp"}}}, "is not this machine (loopback)"),
    ({"mcpServers": {"s": {"url": "ftp://127.0.0.1/mcp"}}}, "must be http(s)"),
    ({"mcpServers": {"s": {"command": "python3", "url": "http://127.0.0.1/mcp"}}}, "either command"),
    ({"mcpServers": {"s": {}}}, "either command"),
    ({"mcpServers": {"bad name!": {"command": "python3"}}}, "server name"),
    ({"mcpServers": {"s": {"command": "python3", "timeout_s": 0}}}, "mcpServers.s.timeout_s"),
    ([1, 2], "expected an object with mcpServers"),
])
def test_each_bad_config_is_one_line_naming_the_problem(tmp_path, content, expected):
    message = error_of(write(tmp_path, content))
    assert expected in message and str(tmp_path / "mcp.json") in message


def test_missing_file_and_bad_yaml(tmp_path):
    assert "MCP config not found" in error_of(tmp_path / "nope.json")
    assert "not valid YAML at line" in error_of(write(tmp_path, "mcpServers: [unclosed\n  x: 1", "mcp.yml"))


def test_a_remote_url_needs_allow_remote(tmp_path):
    path = write(tmp_path, {"mcpServers": {"s": {"url": "https://mcp.example.com/mcp", "allow_remote": True}}})
    assert load_mcp_config(path).mcpServers["s"].allow_remote


def test_loopback_by_name_not_by_resolver():
    assert all(is_loopback(h) for h in ("localhost", "127.0.0.1", "127.5.6.7", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("localhost.example.com", "10.0.0.1", "0.0.0.0", "example.com"))


def test_settings_check_the_file_before_a_run_starts(tmp_path):
    with pytest.raises(ConfigError, match="MCP config not found"):
        Settings.from_env({}, mcp_config=tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="unknown field"):
        Settings.from_env({"BRIEFROOM_MCP_CONFIG": str(write(tmp_path, {"mcpServers": {}, "x": 1}))})
    good = write(tmp_path, {"mcpServers": {}}, "good.json")
    assert Settings.from_env({}, mcp_config=good).mcp_config == good.resolve()
