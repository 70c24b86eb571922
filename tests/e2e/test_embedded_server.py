"""The embedded server must compute, not only list models; a dead one is named with its signal."""

from __future__ import annotations

import sys
import textwrap

import pytest

from briefroom.errors import EngineeringFailure
from briefroom.models import embedded
from briefroom.models.embedded import EmbeddedServer

pytestmark = pytest.mark.e2e

# A stand-in server: lists its models like llama.cpp, then dies like llama.cpp built for
# another CPU (SIGILL) at the first completion.
DIES_ON_FIRST_COMPLETION = textwrap.dedent("""
    import json, os, signal, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"data": [{"id": "m"}]}).encode()
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            os.kill(os.getpid(), signal.SIGILL)

        def log_message(self, *args):
            pass

    HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
""")


class StandIn(EmbeddedServer):
    def command(self) -> list[str]:
        return [sys.executable, "-c", DIES_ON_FIRST_COMPLETION, str(self.port)]


def test_a_server_that_lists_models_but_dies_computing_is_named_with_its_signal(tmp_path):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    with pytest.raises(EngineeringFailure) as failed:
        StandIn(model_path=model, log_path=tmp_path / "llama-server.log", startup_timeout=30).start()
    message = str(failed.value)
    assert "embedded model server exited with signal 4 (SIGILL)" in message
    assert "llama-server.log" in message and "AVX2" in message
    assert embedded.death_notice() is None  # nothing is left registered as running


def test_a_missing_model_file_is_a_clear_error(tmp_path):
    from briefroom.errors import ConfigError

    with pytest.raises(ConfigError, match="model file not found"):
        EmbeddedServer(model_path=tmp_path / "nope.gguf")


def test_the_installed_llama_cpp_is_the_portable_build():
    # A build for the build machine's CPU dies with SIGILL where AVX-512/AMX are advertised
    # but not allowed (a VM): the prebuilt wheel is built for AVX2 without them.
    xllamacpp = pytest.importorskip("xllamacpp")
    info = xllamacpp.get_system_info()
    assert "AVX2 = 1" in info
    assert "AVX512" not in info and "AMX" not in info, info
