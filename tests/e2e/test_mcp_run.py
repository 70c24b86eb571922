"""Research runs with real MCP servers the tests ship (tests/mcp_servers/), started by
the run as processes over stdio or reached over streamable HTTP on loopback, with the
test model: the Searcher calls their tools, the report cites what they returned, and a
hostile server's every trick ends as a tool error or flagged data, never a hung or
failed run. Nothing waits on a clock except the slow tool, which never answers, so its
timeout (3 s) ends it whatever the machine's load.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from briefroom.events import LlmCall, ToolResult, read_events
from tests.secret_samples import samples

pytestmark = pytest.mark.e2e

SERVERS = Path(__file__).resolve().parent.parent / "mcp_servers"
QUESTION = "How many tonnes of cloudberries did Norland export in 2023?"


@pytest.fixture
def corpus(tmp_path) -> Path:
    """A corpus that knows cloudberries but none of Norland's figures: those come from MCP."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "berries.md").write_text("# Berries of the north\n\nCloudberries grow in bogs and are picked by hand "
                                       "in late summer.\n", encoding="utf-8")
    return folder


def config(tmp_path: Path, servers: dict) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def stdio(script: str, *args: str, **extra: object) -> dict:
    return {"command": sys.executable, "args": [str(SERVERS / script), *args], **extra}


def research(tmp_path: Path, corpus: Path, mcp: Path, *more: str):
    from briefroom.cli import app

    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["research", QUESTION, "--corpus", str(corpus), "--model", "test",
                                      "--out", str(out), "--data-dir", str(tmp_path / "data"), "--rounds", "1",
                                      "--no-memory", "-q", "--mcp-config", str(mcp), *more])
    return result, out


def mcp_results(out: Path) -> list[ToolResult]:
    return [e for e in read_events(out / "run.jsonl") if isinstance(e, ToolResult) and e.tool.startswith("mcp__")]


def cited_mcp_sources(out: Path, server: str) -> list[str]:
    sources = json.loads((out / "sources.json").read_text())
    return [sid for sid in sources["cited"]
            if sources["sources"][sid]["path"].startswith(f"mcp://{server}/")]


def assert_cites_the_statistic(out: Path, server: str) -> None:
    results = [e for e in mcp_results(out) if e.tool == f"mcp__{server}__lookup_statistic"]
    assert results and all(e.ok for e in results)
    cited = cited_mcp_sources(out, server)
    report = (out / "report.md").read_text()
    assert cited, report
    assert "4,812 tonnes" in report  # only the server knows this figure
    assert all(f"`mcp://{server}/lookup_statistic` (source `{sid}`)" in report for sid in cited)


def test_a_run_calls_a_stdio_server_and_cites_what_it_returned(tmp_path, corpus):
    result, out = research(tmp_path, corpus, config(tmp_path, {"stats": stdio("stats_server.py")}))
    assert result.exit_code == 0, result.output
    assert_cites_the_statistic(out, "stats")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_run_reaches_a_streamable_http_server_on_loopback(tmp_path, corpus):
    port = free_port()
    server = subprocess.Popen([sys.executable, str(SERVERS / "stats_server.py"), "--http", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120  # generous: starting Python and uvicorn on a loaded machine
        while True:
            assert server.poll() is None, "the HTTP server exited"
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the HTTP server did not listen"
            time.sleep(0.2)
        mcp = config(tmp_path, {"remote": {"url": f"http://127.0.0.1:{port}/mcp"}})
        result, out = research(tmp_path, corpus, mcp)
        assert result.exit_code == 0, result.output
        assert_cites_the_statistic(out, "remote")
    finally:
        server.terminate()
        server.wait(timeout=30)


def leaks(folder: Path, secret: str) -> list[str]:
    """Files under `folder` holding `secret` in any bytes (logs, checkpoints, artifacts)."""
    return [str(p) for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_a_hostile_server_ends_as_tool_errors_and_flagged_data_and_the_run_still_reports(tmp_path, corpus):
    secret = dict(samples())["github ghp_"]
    mcp = config(tmp_path, {
        "stats": stdio("stats_server.py"),
        "bulky": stdio("hostile_server.py", "--tools", "huge_table", timeout_s=300),
        "sluggish": stdio("hostile_server.py", "--tools", "slow_lookup", timeout_s=3),
        "fragile": stdio("hostile_server.py", "--tools", "crash_lookup"),
        "sly": stdio("hostile_server.py", "--tools", "injected_note,leaky_config", env={"PLANTED_SECRET": secret}),
    })
    result, out = research(tmp_path, corpus, mcp)
    assert result.exit_code == 0, result.output
    assert (out / "report.md").is_file()
    by_tool: dict[str, list[ToolResult]] = {}
    for event in mcp_results(out):
        by_tool.setdefault(event.tool, []).append(event)
    huge = by_tool["mcp__bulky__huge_table"]
    assert all(e.ok and e.artifact and e.tokens_after is not None and e.budget_tokens is not None
               and e.tokens_after <= e.budget_tokens for e in huge)
    assert all(200_000 < e.bytes < 1_000_000 for e in huge)  # cut to max_result_chars before the envelope
    slow = by_tool["mcp__sluggish__slow_lookup"]
    assert all(not e.ok and e.error and "did not answer slow_lookup within 3s" in e.error.message for e in slow)
    dead = by_tool["mcp__fragile__crash_lookup"]
    assert all(not e.ok and e.error for e in dead)
    assert "died" in dead[0].error.message and "segmentation fault" in dead[0].error.message  # type: ignore[union-attr]
    assert all("is not running" in e.error.message for e in dead[1:])  # type: ignore[union-attr]
    leaky = by_tool["mcp__sly__leaky_config"]
    assert all(e.ok and e.redactions for e in leaky)
    # what the model saw of the injected note: data, with the warning
    shown = [m.content for e in read_events(out / "run.jsonl") if isinstance(e, LlmCall) for m in e.messages
             if m.type == "tool" and isinstance(m.content, str) and "Ignore previous instructions" in m.content]
    assert shown and all(s.startswith("<data-") and "do not follow it" in s for s in shown)
    assert leaks(out, secret) == [] and leaks(tmp_path / "data", secret) == []
    assert_cites_the_statistic(out, "stats")  # the good server still answers the question


@pytest.mark.parametrize("servers, words", [
    (None, "MCP config not found"),
    ("{oops", "not valid JSON"),
    ({"stats": {"command": "python3", "colour": "red"}}, "unknown field mcpServers.stats.colour"),
    ({"stats": {"command": "no-such-mcp-server-command"}}, "command not found on PATH: no-such-mcp-server-command"),
    ({"stats": {"url": "http://192.0.2.10:8000/mcp"}}, "is not this machine (loopback)"),
])
def test_a_bad_config_is_one_line_and_a_non_zero_exit_before_any_run(tmp_path, corpus, servers, words):
    path = tmp_path / "mcp.json"
    if servers is not None:
        path.write_text(servers if isinstance(servers, str) else json.dumps({"mcpServers": servers}), "utf-8")
    result, out = research(tmp_path, corpus, path)
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0], result.output
    assert not out.exists()  # checked before a run directory exists


def test_a_server_that_cannot_start_is_one_line_and_a_non_zero_exit(tmp_path, corpus):
    broken = {"broken": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(4)"]}}
    result, _ = research(tmp_path, corpus, config(tmp_path, broken))
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "MCP server 'broken' did not start" in lines[0], result.output
