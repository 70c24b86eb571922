"""Shared fixtures. The autouse guard fails any test that opens a network connection,
except e2e tests, which may reach loopback (the embedded llama.cpp server) only."""

from __future__ import annotations

import hashlib
import ipaddress
import socket
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "scenarios"


class NetworkBlocked(AssertionError):
    pass


def _is_loopback(address) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def no_network(request, monkeypatch, data_dir):
    allow_loopback = request.node.get_closest_marker("e2e") is not None
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def check(sock, address):
        if sock.family == socket.AF_UNIX:
            return
        if allow_loopback and _is_loopback(address):
            return
        raise NetworkBlocked(f"test tried to reach the network: {address!r}")

    def connect(sock, address):
        check(sock, address)
        return real_connect(sock, address)

    def connect_ex(sock, address):
        check(sock, address)
        return real_connect_ex(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BRIEFROOM_MODEL", "BRIEFROOM_BASE_URL", "BRIEFROOM_API_KEY",
                "BRIEFROOM_SESSION"):
        monkeypatch.delenv(var, raising=False)
    # Tests share one data directory (the index cache), the session's own: never the
    # user's, which a briefroom run of theirs may hold while the suite runs. Each test is
    # its own memory user, so what one test's run remembers never changes another's prompts.
    monkeypatch.setenv("BRIEFROOM_DATA_DIR", str(data_dir))
    monkeypatch.setenv("BRIEFROOM_USER", "t" + hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:12])
    yield


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    """One index cache for the whole session: embedding the corpus once is enough."""
    return tmp_path_factory.mktemp("briefroom-data")


def write_corpus(folder: Path, files: dict[str, str]) -> Path:
    """A corpus folder holding `files` (name -> text), for tests that need a few documents."""
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def small_corpus(tmp_path) -> Path:
    return write_corpus(tmp_path / "notes", {
        "market.md": "# Cloud market\n\nPublic cloud spending will reach 723 billion USD in 2026. "
                     "Azure grew 31% while AWS grew 17%.\n",
        "storage.txt": "Battery notes\n\nGrid batteries added 92 gigawatts in 2026.\n",
        "page.html": "<html><head><title>Forecast page</title></head><body><p>Another firm forecasts 680 billion "
                     "USD for 2026.</p><script>var x = 1;</script></body></html>"})
