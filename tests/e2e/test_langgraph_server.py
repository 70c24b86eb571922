"""`langgraph dev` serves the research graph: a real server process on loopback, driven
with langgraph-sdk, the test model answering. The server must need no network: a
guard loaded into its process (sitecustomize) refuses and records every connection
and name lookup that is not loopback, and the test fails if there was any.

Its clients are hostile: they name role files planted to write a marker, run
directories with `../`, corpora outside the server's allow-list, inputs of the wrong
type, and call from another origin. The same guard's audit hook records every file the
server opens, lists, creates, imports or executes under the planted folder (outside the
allow-lists), and the last test counts them: there must be none."""

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

# Every file event under the folder no client may reach: opened, listed, made, moved,
# removed, imported or executed. stat() raises no audit event, and needs none: it reads
# no file's content. The server patches blocking calls (blockbuster) after this runs, so
# the hook keeps its own references to the functions it needs.
import sys

_OUTSIDE = os.environ["BRIEFROOM_TEST_OUTSIDE"]
_FS_LOG = os.environ["BRIEFROOM_TEST_FS_LOG"]
_CWD = os.getcwd()
_os_open, _os_write, _os_close, _fsdecode = os.open, os.write, os.close, os.fsdecode
_join, _isabs, _normpath = os.path.join, os.path.isabs, os.path.normpath
_WATCHED = frozenset({"open", "os.listdir", "os.scandir", "os.mkdir", "os.rename", "os.replace", "os.remove",
                      "os.rmdir", "os.symlink", "os.link", "os.chmod", "os.chown", "os.utime", "os.truncate",
                      "shutil.copyfile", "shutil.rmtree", "import", "subprocess.Popen", "os.exec",
                      "os.posix_spawn", "os.spawn", "os.system"})
_busy = False


def _paths(value):
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _paths(item)
    elif isinstance(value, (str, bytes, os.PathLike)):
        try:
            text = _fsdecode(value)
        except (TypeError, ValueError):
            return
        yield _normpath(text if _isabs(text) else _join(_CWD, text))


def _audit(event, args):
    global _busy
    if event not in _WATCHED or _busy:
        return
    touched = [p for p in _paths(args) if p == _OUTSIDE or p.startswith(_OUTSIDE + os.sep)]
    if touched:
        _busy = True  # writing the log is itself an "open" event
        try:
            fd = _os_open(_FS_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                _os_write(fd, f"{event} {touched[0]}\n".encode())
            finally:
                _os_close(fd)
        finally:
            _busy = False


sys.addaudithook(_audit)
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
    """`langgraph dev` in its own folder and process group, stopped by `stop`; `env`
    adds to the environment it starts with (the operator's allow-lists)."""

    def __init__(self, folder: Path, outside: Path, env: dict[str, str]):
        self.folder = folder
        self.outside = outside
        self.env = env
        self.log = folder / "server.log"
        self.net_log = folder / "network-attempts.log"
        self.fs_log = folder / "outside-touched.log"
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
               "BRIEFROOM_TEST_NET_LOG": str(self.net_log), "BRIEFROOM_TEST_FS_LOG": str(self.fs_log),
               "BRIEFROOM_TEST_OUTSIDE": str(self.outside), **self.env}
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


MARKER_NAME = "PLANTED-CODE-RAN"
# A role file a hostile client would have the server import: it leaves a marker.
PLANTED_ROLE = f"""
from pathlib import Path
Path(__file__).with_name({MARKER_NAME!r}).write_text("the server imported a client's role file")
"""


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    """What no client may reach: a secret corpus and a planted role file."""
    folder = tmp_path_factory.mktemp("outside")
    (folder / "secret").mkdir()
    (folder / "secret" / "vault.md").write_text("# Vault\n\nThe vault code is 4711.\n", encoding="utf-8")
    (folder / "roles").mkdir()
    (folder / "roles" / "evil.py").write_text(PLANTED_ROLE, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def allowed(tmp_path_factory, outside) -> Path:
    """BRIEFROOM_SERVE_CORPORA: the corpora the server's operator lets clients read."""
    folder = tmp_path_factory.mktemp("corpora")
    notes = folder / "notes"
    notes.mkdir()
    (notes / "market.md").write_text(
        "# Cloud market\n\nPublic cloud spending will reach 723 billion USD in 2026. "
        "Azure grew 31% while AWS grew 17%.\n", encoding="utf-8")
    (notes / "storage.txt").write_text("Battery notes\n\nGrid batteries added 92 gigawatts in 2026.\n",
                                       encoding="utf-8")
    (folder / "unreadable").mkdir()
    (folder / "unreadable" / "blob.bin").write_bytes(b"\x00\x01\x02\x03")
    (folder / "way-out").symlink_to(outside / "secret", target_is_directory=True)
    (folder / "tricky").mkdir()
    (folder / "tricky" / "notes.md").symlink_to(outside / "secret" / "vault.md")
    return folder


@pytest.fixture(scope="module")
def server(tmp_path_factory, outside, allowed, data_dir):
    """One server for this file's tests; the last test stops it and reads the guard's logs."""
    folder = tmp_path_factory.mktemp("server")
    srv = Server(folder, outside, {"BRIEFROOM_SERVE_CORPORA": str(allowed),
                                   "BRIEFROOM_SERVE_RUNS_DIR": str(folder / "runs"),
                                   "BRIEFROOM_DATA_DIR": str(data_dir)})
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()


def _stream(client, thread_id: str, input: dict, **kwargs) -> list:
    return list(client.runs.stream(thread_id, "research", input=input, stream_mode=["updates"], **kwargs))


def _refusal(client, input: dict, **kwargs) -> str:
    """The one error a refused run streams; its run ends `error` and leaves no run directory."""
    thread = client.threads.create()
    parts = _stream(client, thread["thread_id"], input, **kwargs)
    errors = [p.data for p in parts if p.event == "error"]
    assert len(errors) == 1, parts
    assert [r["status"] for r in client.runs.list(thread["thread_id"])] == ["error"]
    return errors[0]["message"]


def test_langgraph_dev_serves_the_research_graph_offline(server, allowed):
    from langgraph_sdk import get_sync_client

    print(f"\nlanggraph dev answered after {server.start_seconds:.1f} s")
    client = get_sync_client(url=server.url)
    assert any(a["graph_id"] == "research" for a in client.assistants.search(graph_id="research"))
    thread = client.threads.create()
    parts = list(client.runs.stream(
        thread["thread_id"], "research",
        input={"question": QUESTION, "corpus": [str(allowed / "notes")]},
        context={"model": "test", "rounds": 2},
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
    texts = {d.source_id: d.text for d in load_corpus(allowed / "notes")}
    assert markdown_problems(report, texts) == []
    assert "723 billion USD" in report

    # the run directory, named by the server under its runs dir, holds what `briefroom
    # research` leaves: report, sources, log, run.json
    run_dir = Path(values["run_dir"])
    assert run_dir.parent == server.folder / "runs"
    assert (run_dir / "report.md").read_text(encoding="utf-8") == report
    assert json.loads((run_dir / "sources.json").read_text(encoding="utf-8"))["cited"] == values["cited"]
    assert json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["status"] == "done"
    kinds = [json.loads(line)["event"] for line in (run_dir / "run.jsonl").read_text(encoding="utf-8").splitlines()]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"


def _waiting(client, thread_id: str) -> dict:
    """The question a paused served run asks its client: the thread's one interrupt."""
    state = client.threads.get_state(thread_id)
    assert state["next"] == ["review"], state["next"]
    (waiting,) = [i for task in state["tasks"] for i in task["interrupts"]]
    return waiting["value"]


def test_a_served_run_pauses_for_its_plan_review_and_resumes_with_the_clients_answer(server, allowed):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server.url)
    thread_id = client.threads.create()["thread_id"]
    parts = _stream(client, thread_id, {"question": QUESTION, "corpus": [str(allowed / "notes")]},
                    context={"model": "test", "rounds": 1, "review_plan": True})
    assert not [p for p in parts if p.event == "error"], server.output()[-4000:]
    streamed = [p.data["__interrupt__"] for p in parts if p.event == "updates" and "__interrupt__" in p.data]
    asked = _waiting(client, thread_id)
    assert streamed and streamed[-1][0]["value"] == asked  # a streaming client sees the question as it comes
    assert asked["kind"] == "plan_review" and asked["tasks"] and asked["tasks"][0]["task_id"].startswith("t1.")
    first = asked["tasks"][0]["task_id"]  # (t1.1 may be answered from the memory of the run before)
    run_dir = Path(client.threads.get_state(thread_id)["values"]["run_dir"])
    assert json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["status"] == "paused"

    # a hostile answer is refused with the reason, asked again; the run stays paused
    parts = _stream(client, thread_id, None, command={"resume": {"drop": ["t9.9"], "sudo": True}})
    assert "sudo" in _waiting(client, thread_id)["error"]
    edited = "What will public cloud spending be in 2026 worldwide?"
    parts = _stream(client, thread_id, None, command={"resume": {"edit": {first: edited}, "note": "worldwide"}})
    assert not [p for p in parts if p.event == "error"], server.output()[-4000:]
    state = client.threads.get_state(thread_id)
    assert state["next"] == [] and state["values"]["report"].startswith("# ")
    assert json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["status"] == "done"
    reviews = [json.loads(line) for line in (run_dir / "run.jsonl").read_text(encoding="utf-8").splitlines()
               if json.loads(line)["event"] == "plan_review"]
    assert len(reviews) == 1 and reviews[0]["after"][0]["question"] == edited and reviews[0]["note"] == "worldwide"


def test_a_run_that_cannot_start_fails_with_the_reason(server, allowed):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server.url)
    message = _refusal(client, {"question": QUESTION, "corpus": [str(allowed / "missing")]},
                       context={"model": "test"})
    assert "corpus folder not found on the server" in message, message


def test_a_run_that_fails_ends_with_its_error_in_the_log_and_the_reason_at_the_client(server):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server.url)
    before = set((server.folder / "runs").iterdir())
    thread = client.threads.create()
    parts = _stream(client, thread["thread_id"], {"question": QUESTION, "corpus": ["unreadable"]},
                    context={"model": "test"})
    errors = [p.data for p in parts if p.event == "error"]
    assert len(errors) == 1 and errors[0]["message"].startswith("no readable documents"), parts
    assert [r["status"] for r in client.runs.list(thread["thread_id"])] == ["error"]
    [run_dir] = set((server.folder / "runs").iterdir()) - before
    assert json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["status"] == "failed"
    events = [json.loads(line) for line in (run_dir / "run.jsonl").read_text(encoding="utf-8").splitlines()]
    assert events[-1]["event"] == "error" and events[-1]["message"].startswith("no readable documents"), events
    assert events[-1]["traceback"]


@pytest.mark.parametrize("input, expected", [
    ({"question": 12345, "corpus": ["notes"]}, "invalid run: question: Input should be a valid string"),
    ({"question": QUESTION, "corpus": "/a/b"}, "invalid run: corpus: Input should be a valid list"),
    ({"question": QUESTION, "corpus": [1, 2]}, "invalid run: corpus.0: a corpus folder is a path as text, not int"),
    ({"question": "", "corpus": ["notes"]}, "invalid run: question: the question is empty"),
    ({"question": QUESTION}, "no corpus: give 'corpus'"),
])
def test_inputs_of_the_wrong_type_are_refused_in_one_line(server, input, expected):
    from langgraph_sdk import get_sync_client

    message = _refusal(get_sync_client(url=server.url), input, context={"model": "test"})
    assert message.startswith(expected) and "\n" not in message, message


def test_a_client_names_no_role_files_run_directory_or_data_directory(server, outside):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server.url)
    ask = {"question": QUESTION, "corpus": ["notes"]}
    roles = str(outside / "roles")
    assert "roles_dirs: the server decides this" in _refusal(client, ask, context={"roles_dirs": [roles]})
    # the server mirrors a run's configurable into its context: no way round it there
    assert "roles_dirs: the server decides this" in _refusal(
        client, ask, config={"configurable": {"model": "test", "roles_dirs": [roles]}})
    assert "runs_dir: the server decides this" in _refusal(
        client, ask, context={"model": "test", "runs_dir": f"../../{outside.name}"})
    assert "data_dir: the server decides this" in _refusal(client, ask, context={"data_dir": str(outside)})
    assert "model: a model name" in _refusal(client, ask, context={"model": str(outside / "roles" / "x.gguf")})
    assert not (outside / "roles" / MARKER_NAME).exists()


@pytest.mark.parametrize("corpus", ["{outside}/secret", "../{outside_name}/secret", "notes/../../{outside_name}",
                                    "way-out", "tricky"])
def test_a_corpus_outside_the_allow_list_is_refused(server, outside, corpus):
    from langgraph_sdk import get_sync_client

    folder = corpus.format(outside=outside, outside_name=outside.name)
    message = _refusal(get_sync_client(url=server.url), {"question": QUESTION, "corpus": [folder]},
                       context={"model": "test"})
    assert "outside the folders this server may read" in message, message
    assert "4711" not in message


def _headers(request: urllib.request.Request) -> dict[str, str]:
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as refused:  # a refused preflight is an answer too
        return {k.lower(): v for k, v in refused.headers.items()}


def test_a_web_page_on_another_origin_may_not_read_the_answers(server):
    origin = "https://evil.example"
    simple = _headers(urllib.request.Request(f"{server.url}/assistants/search", data=b"{}", method="POST",
                                             headers={"Origin": origin, "Content-Type": "application/json"}))
    preflight = _headers(urllib.request.Request(
        f"{server.url}/threads", method="OPTIONS",
        headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"}))
    for headers in (simple, preflight):
        assert "access-control-allow-origin" not in headers, headers
        assert "access-control-allow-credentials" not in headers, headers


def _status(request: urllib.request.Request) -> int:
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as refused:
        return refused.code


def test_a_web_page_on_another_origin_cannot_start_a_run_blind(server):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server.url)
    threads = len(client.threads.search(limit=1000))
    # A form or a text/plain POST needs no CORS preflight: the browser sends it as is.
    run = json.dumps({"assistant_id": "research", "input": {"question": QUESTION, "corpus": ["notes"]},
                      "context": {"model": "test"}}).encode()
    for path, body in (("/threads", b"{}"), ("/runs/wait", run)):
        forged = urllib.request.Request(f"{server.url}{path}", data=body, method="POST",
                                        headers={"Origin": "https://evil.example", "Content-Type": "text/plain"})
        assert _status(forged) == 403, path
    assert len(client.threads.search(limit=1000)) == threads
    # the server's own pages (its /docs) send their own origin
    own = urllib.request.Request(f"{server.url}/threads", data=b"{}", method="POST",
                                 headers={"Origin": server.url, "Content-Type": "application/json"})
    assert _status(own) == 200
    assert len(client.threads.search(limit=1000)) == threads + 1


def test_the_server_touched_nothing_outside_its_allow_lists(server, outside):
    server.stop()
    assert server.proc is not None and server.proc.poll() is not None
    touched = server.fs_log.read_text(encoding="utf-8").splitlines() if server.fs_log.exists() else []
    print(f"\nfiles read, written or executed outside the allow-lists: {len(touched)}")
    assert touched == [], touched
    assert not (outside / "roles" / MARKER_NAME).exists()
    assert sorted(p.name for p in outside.rglob("*")) == ["evil.py", "roles", "secret", "vault.md"]


def test_the_server_reached_nothing_but_loopback(server):
    server.stop()
    assert server.proc is not None and server.proc.poll() is not None
    attempts = server.net_log.read_text(encoding="utf-8") if server.net_log.exists() else ""
    assert attempts == "", f"the server tried to reach the network:\n{attempts}"
