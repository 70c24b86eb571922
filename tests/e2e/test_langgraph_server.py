"""`langgraph dev` serves the research graph: a real server process on loopback, driven
with langgraph-sdk, the test model answering. The server must need no network: a
guard loaded into its process (sitecustomize) refuses and records every connection
and name lookup that is not loopback, and the test fails if there was any."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from briefroom.corpus.documents import load_corpus
from briefroom.report.checks import markdown_problems, split_report
from tests.conftest import REPO

pytestmark = pytest.mark.e2e

START_DEADLINE_S = 180  # only bounds a server that never answers; a healthy one starts in seconds
QUESTION = "How big is the 2026 public cloud market and who is growing fastest?"
ROLES = {"planner", "searcher", "critic", "writer", "round_end"}

# Loaded by the server's interpreter: every connection or name lookup off loopback is
# refused and written down, so the test sees what the server tried to reach.
GUARD = r'''
import ipaddress, os, socket

_LOG = os.environ["BRIEFROOM_TEST_NET_LOG"]


def _loopback(host):
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _refuse(what):
    with open(_LOG, "a", encoding="utf-8") as fh:
        fh.write(what + "\n")
    raise OSError(f"network blocked by the test: {what}")


_connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo


def connect(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
        _refuse(f"connect {address!r}")
    return _connect(sock, address)


def connect_ex(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
        _refuse(f"connect {address!r}")
    return _connect_ex(sock, address)


def getaddrinfo(host, *args, **kwargs):
    name = host.decode() if isinstance(host, bytes) else host
    if not _loopback(name):
        _refuse(f"resolve {name!r}")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
'''


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/ok", timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


class Server:
    """`langgraph dev` in its own folder and process group, stopped by `stop`."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.log = folder / "server.log"
        self.net_log = folder / "network-attempts.log"
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.start_seconds = 0.0

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def start(self) -> None:
        cli = Path(sys.executable).with_name("langgraph")
        if not cli.exists():
            pytest.fail(f"langgraph-cli is not installed ({cli} missing): pip install -e '.[serve]'")
        guard = self.folder / "guard"
        guard.mkdir()
        (guard / "sitecustomize.py").write_text(GUARD, encoding="utf-8")
        port = free_port()
        env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "PYTHONUNBUFFERED": "1", "NO_COLOR": "1",
               "PYTHONPATH": os.pathsep.join([str(guard), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               "BRIEFROOM_TEST_NET_LOG": str(self.net_log)}
        started = time.monotonic()
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [str(cli), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port),
                 "--config", str(REPO / "langgraph.json")],
                cwd=self.folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = started + START_DEADLINE_S
        while True:
            if self.proc.poll() is not None:
                pytest.fail(f"langgraph dev exited with code {self.proc.returncode} before answering:\n"
                            f"{self.output()[-4000:]}")
            # langgraph dev moves to another port, saying so, when the one asked for is taken
            announced = re.search(r"API: \S*?(http://127\.0\.0\.1:\d+)", self.output())
            if announced and answers(announced.group(1)):
                self.url = announced.group(1)
                self.start_seconds = time.monotonic() - started
                return
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev did not answer on {port} within {START_DEADLINE_S} s:\n"
                            f"{self.output()[-4000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for this file's tests; the last test stops it and reads the guard's log."""
    srv = Server(tmp_path_factory.mktemp("server"))
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()


def test_langgraph_dev_serves_the_research_graph_offline(server, small_corpus, data_dir, tmp_path):
    from langgraph_sdk import get_sync_client

    print(f"\nlanggraph dev answered after {server.start_seconds:.1f} s")
    client = get_sync_client(url=server.url)
    assert any(a["graph_id"] == "research" for a in client.assistants.search(graph_id="research"))
    thread = client.threads.create()
    parts = list(client.runs.stream(
        thread["thread_id"], "research",
        input={"question": QUESTION, "corpus": [str(small_corpus)]},
        context={"model": "test", "data_dir": str(data_dir), "runs_dir": str(tmp_path / "runs"), "rounds": 2},
        stream_mode=["updates", "custom"], stream_subgraphs=True))
    errors = [p.data for p in parts if p.event == "error"]
    assert not errors, f"the run failed: {errors}\n{server.output()[-4000:]}"

    # every role's node update arrives as it happens, from the research subgraph
    updates = [p for p in parts if p.event.startswith("updates|research:")]
    assert ROLES <= {node for p in updates for node in p.data}, [p.event for p in parts]
    progress = [p.data["progress"] for p in parts if p.event.startswith("custom") and "progress" in p.data]
    assert {"index", "planner", "searcher", "writer"} <= {step["agent"] for step in progress}
    assert progress[-1]["tokens_used"] > 0
    # the served graph's own update comes last, after the research graph's
    assert parts[-1].event == "updates" and "research" in parts[-1].data

    runs = client.runs.list(thread["thread_id"])
    assert [r["status"] for r in runs] == ["success"]
    state = client.threads.get_state(thread["thread_id"])
    assert state["next"] == []
    values = state["values"]
    report = values["report"]
    assert report.startswith("# ") and values["accepted"] is True and values["rounds"] >= 1
    assert values["tokens_used"] > 0

    # cited as a corpus run is: every [n] resolves to a retrieved source, every number checks
    body, mapping = split_report(report)
    cited_numbers = set(re.findall(r"\[(\d+)\]", body))
    assert cited_numbers, report
    assert cited_numbers <= set(mapping), (cited_numbers, mapping)
    assert [mapping[n] for n in sorted(mapping, key=int)] == values["cited"]
    assert set(values["cited"]) <= set(values["sources"])
    texts = {d.source_id: d.text for d in load_corpus(small_corpus)}
    assert markdown_problems(report, texts) == []
    assert "723 billion USD" in report

    # the run directory holds what `briefroom research` leaves: report, sources, log, run.json
    run_dir = Path(values["run_dir"])
    assert run_dir.parent == tmp_path / "runs"
    assert (run_dir / "report.md").read_text(encoding="utf-8") == report
    assert json.loads((run_dir / "sources.json").read_text(encoding="utf-8"))["cited"] == values["cited"]
    assert json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["status"] == "done"
    kinds = [json.loads(line)["event"] for line in (run_dir / "run.jsonl").read_text(encoding="utf-8").splitlines()]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"


def test_a_run_that_cannot_start_fails_with_the_reason(server, tmp_path):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server.url)
    thread = client.threads.create()
    parts = list(client.runs.stream(thread["thread_id"], "research",
                                    input={"question": QUESTION, "corpus": [str(tmp_path / "missing")]},
                                    context={"model": "test", "runs_dir": str(tmp_path / "runs")},
                                    stream_mode=["updates"]))
    errors = [p.data for p in parts if p.event == "error"]
    assert len(errors) == 1 and "corpus folder not found on the server" in json.dumps(errors[0]), parts
    assert [r["status"] for r in client.runs.list(thread["thread_id"])] == ["error"]


def test_the_server_reached_nothing_but_loopback(server):
    server.stop()
    assert server.proc is not None and server.proc.poll() is not None
    attempts = server.net_log.read_text(encoding="utf-8") if server.net_log.exists() else ""
    assert attempts == "", f"the server tried to reach the network:\n{attempts}"
