"""The workbench's requests, answered without a socket (`Workbench.handle`): every refusal
(foreign Host or Origin, a change without Origin or JSON, bad bodies, paths out of the
folders the ui was given), the one-line errors, and a real run started, paused at its
plan, answered and finished through the handlers with the test provider."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from briefroom import runs
from briefroom.workbench import api as workbench_api
from briefroom.workbench import live as live_module
from briefroom.workbench.api import Request, Workbench
from briefroom.workbench.guard import Origin
from briefroom.workbench.tail import LogTail
from tests.conftest import SCENARIOS

PORT = 8765
HOST = f"127.0.0.1:{PORT}"
ORIGIN = f"http://{HOST}"
QUESTION = "How big is the 2026 public cloud market and who is growing fastest?"


@pytest.fixture
def bench(tmp_path, data_dir) -> Workbench:
    corpus_root = tmp_path / "docs"
    (corpus_root / "notes").mkdir(parents=True)
    (corpus_root / "notes" / "a.md").write_text("# A\n\nThe market was 5 billion USD in 2025.\n")
    (tmp_path / "runs").mkdir()
    return Workbench(corpus_root=corpus_root, runs_root=tmp_path / "runs",
                     settings={"model": "test", "data_dir": data_dir}, origin=Origin("127.0.0.1", PORT), poll_s=0.05)


def get(bench: Workbench, path: str, **headers: str):
    query = {}
    if "?" in path:
        path, raw = path.split("?", 1)
        query = dict(p.split("=", 1) for p in raw.split("&"))
    return bench.handle(Request("GET", path, query, {"host": HOST, **headers}))


def post(bench: Workbench, path: str, body: object, **headers: str):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"host": HOST, "origin": ORIGIN, "content-type": "application/json", **headers}
    return bench.handle(Request("POST", path, {}, {k: v for k, v in sent.items() if v}, raw))


def message(response) -> str:
    return json.loads(response.body)["error"]


def a_run(bench: Workbench, name: str, report: str | None = None, status: runs.Status = "done") -> Path:
    run_dir = bench.runs_root / name
    run_dir.mkdir()
    runs.save(run_dir, runs.RunRecord(question=f"question of {name}", corpus=[], thread_id=name, status=status))
    if report is not None:
        (run_dir / "report.md").write_text(report)
        (run_dir / "sources.json").write_text(json.dumps({"cited": ["S1"], "sources": {"S1": {
            "source_id": "S1", "title": "Doc", "path": "a.md",
            "passages": [{"chunk_id": "c1", "text": "The market was 5 billion USD.", "start": 0, "end": 29}]}}}))
    return run_dir


# --- who may ask ---------------------------------------------------------------------------
@pytest.mark.parametrize("host", ["evil.example:8765", "127.0.0.1:9999", "", "attacker.test"])
def test_a_host_that_is_not_this_server_is_refused(bench, host):
    response = bench.handle(Request("GET", "/api/config", {}, {"host": host}))
    assert response.status == 403 and "Host" in message(response)


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765"])
def test_loopback_names_of_the_bound_port_are_this_server(bench, host):
    assert bench.handle(Request("GET", "/api/runs", {}, {"host": host})).status == 200


def test_a_page_of_another_site_is_refused_even_for_reading(bench):
    response = get(bench, "/api/runs", origin="http://evil.example")
    assert response.status == 403 and "another site" in message(response)
    response = get(bench, "/api/runs", **{"sec-fetch-site": "cross-site"})
    assert response.status == 403


def test_a_change_needs_this_servers_origin_and_a_json_body(bench):
    body = {"question": QUESTION, "corpus": "notes"}
    assert post(bench, "/api/runs", body, origin="").status == 403
    assert post(bench, "/api/runs", body, origin="http://127.0.0.1:1").status == 403
    response = post(bench, "/api/runs", body, **{"content-type": "text/plain"})
    assert response.status == 415 and "application/json" in message(response)
    assert not any(bench.runs_root.iterdir())  # nothing was started


@pytest.mark.parametrize("raw, status, says", [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "not an object"),
    (b"\xff\xfe", 400, "not valid JSON"),
    (b"{" + b" " * 70_000 + b"}", 413, "at most"),
])
def test_bad_bodies_are_one_line_4xx(bench, raw, status, says):
    response = post(bench, "/api/runs", raw)
    assert response.status == status and says in message(response)
    assert "\n" not in message(response)


# --- what may be read ----------------------------------------------------------------------
@pytest.mark.parametrize("corpus, status", [("../", 403), ("/etc", 400), ("notes/../../..", 403), ("nope", 404),
                                            ("", 400)])
def test_a_corpus_outside_the_corpus_root_is_refused(bench, corpus, status):
    response = post(bench, "/api/runs", {"question": QUESTION, "corpus": corpus})
    assert response.status == status, message(response)
    assert not any(bench.runs_root.iterdir())


def test_a_symlink_out_of_the_corpus_root_is_refused(bench, tmp_path):
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "s.md").write_text("secret")
    os.symlink(outside, bench.corpus_root / "link")
    response = post(bench, "/api/runs", {"question": QUESTION, "corpus": "link"})
    assert response.status == 403 and "outside" in message(response)


@pytest.mark.parametrize("body, says", [
    ({"question": QUESTION, "corpus": "notes", "rounds": 0}, "rounds"),
    ({"question": QUESTION, "corpus": "notes", "base_url": "http://evil"}, "base_url"),
    ({"corpus": "notes"}, "question"),
    ({"question": " ", "corpus": "notes"}, "question is empty"),
    ({"question": QUESTION, "corpus": "notes", "max_tokens": 10}, "max_tokens"),
])
def test_a_bad_start_form_is_refused_in_one_line(bench, body, says):
    response = post(bench, "/api/runs", body)
    assert response.status == 400 and says in message(response), message(response)


@pytest.mark.parametrize("name, status", [("..", 400), ("../etc", 400), ("nope", 404), ("a b", 400)])
def test_run_names_are_names_under_the_runs_dir(bench, name, status):
    from urllib.parse import quote

    response = get(bench, f"/api/runs/{quote(name, safe='')}")
    assert response.status == status, message(response)


def test_a_symlinked_run_pointing_elsewhere_is_refused(bench, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runs.save(elsewhere, runs.RunRecord(question="q", corpus=[], thread_id="x"))
    os.symlink(elsewhere, bench.runs_root / "sneaky")
    assert get(bench, "/api/runs/sneaky").status == 403
    assert get(bench, "/runs/sneaky/page").status == 403


def test_unknown_pages_and_methods_are_refused(bench):
    assert get(bench, "/etc/passwd").status == 404
    assert get(bench, "/api/nothing").status == 404
    assert bench.handle(Request("DELETE", "/api/runs", {}, {"host": HOST, "origin": ORIGIN})).status == 405


def test_a_bug_in_a_handler_is_a_500_line_not_a_crash(bench, monkeypatch):
    def broken(root):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(workbench_api.panels, "run_list", broken)
    response = get(bench, "/api/runs")
    assert response.status == 500 and "RuntimeError: boom second line" in message(response)
    assert get(bench, "/api/config").status == 200  # and the next request is served


# --- the panels ----------------------------------------------------------------------------
def test_the_page_and_its_files_are_served_with_a_strict_policy(bench):
    page = get(bench, "/")
    assert page.status == 200 and b"/static/app.js" in page.body
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    assert b"http" not in page.body.replace(b"http-equiv", b"")  # nothing from the internet
    assert get(bench, "/static/app.js").status == 200 and get(bench, "/static/app.css").status == 200


def test_the_run_page_runs_only_its_own_script(bench):
    import base64
    import hashlib
    import re

    a_run(bench, "r1", "# R\n\nThe market was 5 billion USD. [1]\n")
    page = get(bench, "/runs/r1/page")
    assert page.status == 200
    script = re.search(rb"<script>(.*?)</script>", page.body, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script).digest()).decode()
    assert f"'sha256-{digest}'" in page.headers["Content-Security-Policy"]


def test_the_report_links_each_citation_to_its_passage(bench):
    a_run(bench, "r1", "# R\n\nThe market was 5 billion USD. [1]\n")
    report = json.loads(get(bench, "/api/runs/r1/report").body)
    assert report["ready"] and 'href="#passage-S1-0"' in report["html"] and 'id="passage-S1-0"' in report["html"]


def test_compare_takes_two_different_runs(bench):
    a_run(bench, "r1", "# R\n\nThe market was 5 billion USD. [1]\n")
    a_run(bench, "r2", "# R\n\nNothing found.\n", status="failed")
    assert get(bench, "/api/compare?a=r1&b=r1").status == 400
    assert get(bench, "/api/compare?a=r1").status == 400
    assert get(bench, "/api/compare?a=r1&b=nope").status == 404
    sides = json.loads(get(bench, "/api/compare?a=r1&b=r2").body)["runs"]
    assert [s["numbers"]["status"] for s in sides] == ["done", "failed"]
    assert sides[0]["numbers"]["report_words"] == 9 and "cite" in sides[0]["html"]


def test_the_job_queue_without_a_database_says_so(bench):
    jobs = json.loads(get(bench, "/api/jobs").body)
    assert jobs["configured"] is False and "--database-url" in jobs["message"]


def test_memory_refuses_a_bad_zone_and_an_unknown_id(bench):
    response = get(bench, "/api/memory?zone=everything")
    assert response.status == 400 and "zone" in message(response)
    assert post(bench, "/api/memory/forget", {"id": 5}).status == 400
    response = post(bench, "/api/memory/forget", {"id": "v-none"})
    assert response.status == 404 and "no memory" in message(response)


def test_answers_and_stops_for_runs_that_do_not_wait_are_refused(bench):
    a_run(bench, "r1", status="paused")
    response = post(bench, "/api/runs/r1/answer", {"accept": True})
    assert response.status == 400 and "not waiting" in message(response)
    assert post(bench, "/api/runs/r1/stop", {}).status == 409


def test_one_run_at_a_time(bench, monkeypatch):
    release = threading.Event()

    def held(launch, hooks):  # a run that goes on until the test lets it stop
        release.wait(10)
        raise runs.RunStopped("released by the test")

    monkeypatch.setattr(live_module, "execute_run", held)
    body = {"question": QUESTION, "corpus": "notes"}
    try:
        first = post(bench, "/api/runs", body)
        assert first.status == 202
        second = post(bench, "/api/runs", {**body, "question": "another question"})
        assert second.status == 409 and "is going" in message(second)
    finally:
        release.set()


# --- following a run -----------------------------------------------------------------------
def test_the_tail_passes_each_line_once_across_a_resume_rewrite(tmp_path):
    log = tmp_path / "run.jsonl"
    lines = [json.dumps({"event": "run_start", "seq": i, "elapsed_s": 0.0, "question": "q", "rounds": 1,
                         "roles": [], "corpus": []})
             for i in (1, 2, 3)]
    log.write_text(lines[0] + "\n" + lines[1][:10])
    tail = LogTail(log)
    assert [e["seq"] for e in tail.read()] == [1]  # the half-written line waits
    with open(log, "a") as fh:
        fh.write(lines[1][10:] + "\n")
    assert [e["seq"] for e in tail.read()] == [2]
    # a resume keeps the first line, writes a new file, and logs on
    (tmp_path / "new").write_text(lines[0] + "\n" + lines[2] + "\n")
    os.replace(tmp_path / "new", log)
    assert [e["seq"] for e in tail.read()] == [3]
    assert tail.read() == []


def test_a_whole_run_through_the_handlers(bench):
    """Start with the plan review, the run pauses at the plan; a refused answer says why;
    the accepted plan runs to a report; the live stream tells it all and ends."""
    bench.corpus_root = SCENARIOS / "cloud-market"
    started = post(bench, "/api/runs", {"question": QUESTION, "corpus": "corpus", "review_plan": True})
    assert started.status == 202, message(started)
    name = json.loads(started.body)["name"]
    live = bench.runner.get(name)
    _wait(lambda: not live.active, 120)
    view = json.loads(get(bench, f"/api/runs/{name}").body)
    assert view["status"] == "paused" and view["live"]["waiting_for"]["kind"] == "plan_review"
    refused = post(bench, f"/api/runs/{name}/answer", {"drop": ["t9.9"]})
    assert refused.status == 400 and "unknown task id" in message(refused)
    assert post(bench, f"/api/runs/{name}/answer", {"accept": True}).status == 202
    _wait(lambda: not live.active, 180)
    assert live.state == "done", live.error
    sent: list[bytes] = []
    stream = get(bench, f"/api/runs/{name}/events")
    stream.stream(lambda data: sent.append(data) or True)
    text = b"".join(sent).decode()
    assert text.startswith("event: reset") and text.rstrip().split("\n\n")[-1].startswith("event: end")
    kinds = {json.loads(chunk.split("data: ", 1)[1])["event"] for chunk in text.split("\n\n")
             if chunk.startswith("event: log")}
    assert {"run_start", "llm_call", "bus_message", "plan_review", "run_end"} <= kinds
    assert json.loads(get(bench, f"/api/runs/{name}/report").body)["ready"]


def _wait(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


# --- the HTTP adapter, over a socket pair (no network) ------------------------------------
def exchange(bench: Workbench, raw: bytes) -> bytes:
    import socket

    from briefroom.workbench import http

    served, client = socket.socketpair()
    handler = type("Handler", (http._Handler,), {"bench": bench})

    def serve() -> None:
        try:
            handler(served, ("127.0.0.1", 1), None)
        finally:
            served.close()  # what the server does after a request: the client sees the end

    worker = threading.Thread(target=serve)
    worker.start()
    client.sendall(raw)
    client.shutdown(socket.SHUT_WR)
    received = b""
    while chunk := client.recv(65536):
        received += chunk
    worker.join(10)
    client.close()
    return received


def test_the_server_answers_what_does_not_parse_with_a_4xx(bench):
    garbage = exchange(bench, b"GARBAGE\r\n\r\n")
    assert garbage.startswith(b"HTTP/1.1 400") and garbage.endswith(b'"}') and b"<html" not in garbage
    bad_length = exchange(bench, f"POST /api/runs HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: abc\r\n\r\n".encode())
    assert bad_length.startswith(b"HTTP/1.1 400") and b"Content-Length is not a number" in bad_length
    huge = exchange(bench, f"POST /api/runs HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 99999999\r\n\r\n".encode())
    assert huge.startswith(b"HTTP/1.1 413")
    forged = exchange(bench, b"GET /api/config HTTP/1.1\r\nHost: rebind.example:8765\r\n\r\n")
    assert forged.startswith(b"HTTP/1.1 403") and b"not this workbench" in forged


def test_the_server_sends_its_security_headers_and_streams_a_finished_run(bench):
    page = exchange(bench, f"GET / HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
    head = page.split(b"\r\n\r\n", 1)[0].decode()
    assert head.startswith("HTTP/1.1 200") and "X-Content-Type-Options: nosniff" in head
    assert "Content-Security-Policy: default-src 'none'" in head
    a_run(bench, "r1", "# R\n\nThe market was 5 billion USD. [1]\n")
    (bench.runs_root / "r1" / "run.jsonl").write_text("")
    stream = exchange(bench, f"GET /api/runs/r1/events HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
    assert b"Content-Type: text/event-stream" in stream and b"event: reset" in stream and b"event: end" in stream


def test_stop_ends_a_going_run_at_its_next_step(bench, monkeypatch):
    seen: list[BaseException] = []

    def steps(launch, hooks):  # a run that reports progress until something stops it
        from briefroom.run import Progress

        try:
            for _ in range(200):
                hooks.progress(Progress(1, "searcher", "tools", 0, None, 0.0))
                time.sleep(0.02)
        except BaseException as exc:
            seen.append(exc)
            raise
        raise AssertionError("not stopped")

    monkeypatch.setattr(live_module, "execute_run", steps)
    name = json.loads(post(bench, "/api/runs", {"question": QUESTION, "corpus": "notes"}).body)["name"]
    assert post(bench, f"/api/runs/{name}/stop", {}).status == 202
    _wait(lambda: not bench.runner.get(name).active, 10)
    assert [type(e).__name__ for e in seen] == ["StoppedFromWorkbench"]
    assert "stopped from the workbench" in bench.runner.get(name).error


def test_only_a_paused_run_is_asked_for_its_question(bench):
    a_run(bench, "r1", status="done")
    response = post(bench, "/api/runs/r1/question", {})
    assert response.status == 409 and "not paused" in message(response)


def test_the_ui_command_refuses_bad_options_before_serving(tmp_path):
    from typer.testing import CliRunner

    from briefroom.cli import app

    runner = CliRunner()
    missing = runner.invoke(app, ["ui", "--corpus-root", str(tmp_path / "nope"), "--runs-dir", str(tmp_path / "r")])
    assert missing.exit_code == 2 and "is not a folder" in missing.output
    bad = runner.invoke(app, ["ui", "--corpus-root", str(tmp_path), "--base-url", "ftp://x",
                              "--runs-dir", str(tmp_path / "r")])
    assert bad.exit_code == 2 and "http(s) URL" in bad.output
    wildcard = runner.invoke(app, ["ui", "--host", "0.0.0.0", "--runs-dir", str(tmp_path / "r")])
    assert wildcard.exit_code == 2 and "every address" in wildcard.output
    assert not (tmp_path / "r").exists()  # nothing was made for a ui that did not start


def test_a_run_starts_on_the_web_without_a_folder_and_never_on_nothing(bench, monkeypatch):
    response = post(bench, "/api/runs", {"question": QUESTION})
    assert response.status == 400 and "corpus folder, or the web" in message(response)
    launched = []

    class View:
        def view(self):
            return {"name": "web-run"}

    monkeypatch.setattr(bench.runner, "start", lambda launch_new: (launched.append(launch_new()), View())[1])
    response = post(bench, "/api/runs", {"question": QUESTION, "web": True})
    assert response.status == 400 and "--searxng-url" in message(response)  # the ui's provider is not set
    bench.settings["searxng_url"] = "http://127.0.0.1:9"
    response = post(bench, "/api/runs", {"question": QUESTION, "web": True})
    assert response.status == 202, response.body  # accepted: the run goes on in its thread
    launch = launched[0]
    assert launch.settings.web is True and launch.request.corpus == []
