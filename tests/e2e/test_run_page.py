"""The run page of a 5-round run, opened in headless Chromium: it renders, every citation
link lands on a passage, a screenshot is saved, and the file is under 2 MB."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile

import pytest
from typer.testing import CliRunner

from bench.durability import relay_roles
from briefroom.cli import app
from briefroom.config import Settings
from briefroom.run import ResearchRequest, run_research
from tests.conftest import SCENARIOS

pytestmark = pytest.mark.e2e
runner = CliRunner()
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

def chromium(*args: str) -> subprocess.CompletedProcess:
    assert CHROMIUM, "headless Chromium is needed for this test: `make browser` installs Debian's chromium"
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=120)


def test_run_page_of_a_five_round_run_renders_offline_with_working_citations(data_dir, tmp_path):
    roles = relay_roles(tmp_path / "roles")
    out = tmp_path / "run"
    result = run_research(ResearchRequest(question="How big is the 2026 public cloud market and who grows fastest?",
                                          corpus=[SCENARIOS / "cloud-market" / "corpus"], out=out,
                                          roles_dirs=[roles]),
                          Settings(model="test", rounds=5, data_dir=data_dir))
    assert result.state["round"] == 5

    page = tmp_path / "run.html"
    shown = runner.invoke(app, ["inspect", str(out), "--html", str(page)])
    assert shown.exit_code == 0, shown.output
    text = page.read_text()
    assert page.stat().st_size < 2 * 1024 * 1024
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", text)  # nothing fetched: opens offline
    for anchor in ("round-1", "round-5", "calls", "tools", "memory", "sources"):
        assert f'id="{anchor}"' in text
    assert "local_search" in text and "write gates" in text.lower() or "memory was off" in text

    dom = chromium("--virtual-time-budget=5000", "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-500:]
    checked = re.search(r'data-citations="(\d+)/(\d+)"', dom.stdout)
    assert checked, "the page's script did not run"
    resolved, total = map(int, checked.groups())
    assert total > 0 and resolved == total  # every [n] lands on a passage
    assert "class=\"cite broken\"" not in dom.stdout

    shot = tmp_path / "run-page.png"
    taken = chromium("--window-size=1280,2000", f"--screenshot={shot}", page.as_uri())
    assert taken.returncode == 0 and shot.stat().st_size > 20_000, taken.stderr[-500:]
    print(f"screenshot: {shot}")


def test_a_broken_citation_is_caught_by_the_page_itself(tmp_path):
    """The check can fail: a report citing a passage the page does not have."""
    from briefroom.runpage import render_page

    run = tmp_path / "run"
    run.mkdir()
    (run / "report.md").write_text("# R\n\nA claim. [1]\n\n## Sources\n\n[1] Doc — `d.md` (source `S1`)\n")
    (run / "sources.json").write_text('{"cited": ["S1"], "sources": {}}')
    page = tmp_path / "page.html"
    page.write_text(render_page(run, []))
    dom = chromium("--virtual-time-budget=3000", "--dump-dom", page.as_uri())
    assert 'data-citations="0/1"' in dom.stdout and "cite broken" in dom.stdout
