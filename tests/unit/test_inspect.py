"""`briefroom inspect`: a table per call and an offline HTML page."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from briefroom.cli import app
from briefroom.config import Settings
from briefroom.errors import ConfigError
from briefroom.events import LlmCall, RunStart, read_events
from briefroom.run import ResearchRequest, run_research
from tests.conftest import REPO

runner = CliRunner()
START = json.dumps(RunStart(seq=1, question="q", rounds=1, roles=["planner"], corpus=["c"]).record())


def test_inspect_table_json_and_html(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    run_research(ResearchRequest(question="How big is the 2026 public cloud market?", corpus=[small_corpus], out=out),
                 Settings(model="test", rounds=1, data_dir=data_dir))
    calls = [e for e in read_events(out / "run.jsonl") if isinstance(e, LlmCall)]
    result = runner.invoke(app, ["inspect", str(out), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert calls and [r["agent"] for r in rows] == [c.agent for c in calls]
    for row, call in zip(rows, calls):
        assert sum(row["sections"].values()) == call.prompt_tokens  # sections account for every token
        assert row["prompt_tokens"] <= row["budget"]
    page = tmp_path / "run.html"
    result = runner.invoke(app, ["inspect", str(out), "--html", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert text.startswith("<!doctype html>") and "<svg" in text
    assert len(re.findall(r"<rect ", text)) >= len(calls)  # at least one segment per call
    assert not re.search(r"(src|href)=\"https?://", text)  # opens offline: nothing fetched
    assert "planner" in text and "writer" in text


def test_inspect_errors_are_one_line(tmp_path):
    result = runner.invoke(app, ["inspect", str(tmp_path / "missing")])
    assert result.exit_code == 1 and "run directory not found" in result.output
    (tmp_path / "run.jsonl").write_text(START + '\n{oops\n')
    result = runner.invoke(app, ["inspect", str(tmp_path)])
    assert result.exit_code == 1 and "run.jsonl:2" in result.output and "run.jsonl:1" not in result.output


def test_a_log_cut_short_by_a_kill_still_loads_and_a_corrupt_line_does_not(tmp_path):
    from briefroom.runlog import load_events

    (tmp_path / "run.jsonl").write_text(START + '\n{"event": "llm_ca')  # SIGKILL mid-write
    assert [e.event for e in load_events(tmp_path)] == ["run_start"]
    (tmp_path / "run.jsonl").write_text(START + '\n{"event": "llm_ca\n' + START.replace('"seq": 1', '"seq": 3') + "\n")
    with pytest.raises(ConfigError, match="run.jsonl:2"):
        load_events(tmp_path)
    bad = []  # inspect reads what is valid and names each garbled line
    assert [e.event for e in load_events(tmp_path, on_bad_line=bad.append)] == ["run_start", "run_start"]
    assert [b.line for b in bad] == [2]


def test_the_run_page_links_citations_through_sources_json_not_the_report_text(tmp_path):
    from briefroom.runpage import render_page

    sources = {"S1": {"source_id": "S1", "title": "Doc one", "path": "a.md",
                      "passages": [{"chunk_id": "c0", "start": 0, "end": 9, "text": "Other text."},
                                   {"chunk_id": "c1", "start": 10, "end": 40, "text": "It grew 21% in 2026."}]},
               "S2": {"source_id": "S2", "title": "Doc two", "path": "b.md", "passages": []}}
    (tmp_path / "sources.json").write_text(json.dumps({"cited": ["S1", "S2"], "sources": sources}))
    # The Sources list names S2 for [1]: the page must follow sources.json (what the report was rendered from).
    (tmp_path / "report.md").write_text("# R\n\nIt grew 21% in 2026. [1]\n\nSee also [2] and [3].\n\n## Sources\n\n"
                                        "[1] Doc two — `b.md` (source `S2`)\n[2] Doc two [2] — `b.md`\n")
    page = render_page(tmp_path, [])
    assert '<a class="cite" href="#passage-S1-1" title="Doc one">[1]</a>' in page
    assert '<a class="cite" href="#source-S2" title="Doc two">[2]</a>' in page  # S2 has no passage to land on
    assert '<a class="cite" href="#missing-3">[3]</a>' in page  # the report has two citations, not three
    assert '<a class="source-ref" href="#source-S1">[1]</a>' in page and "#missing-2" not in page


def test_a_torn_last_line_is_named_on_stderr_and_everything_before_it_is_shown(tmp_path):
    (tmp_path / "run.jsonl").write_text(START + '\n{"event": "llm_call", "seq": 2, "age')  # killed mid-write
    result = runner.invoke(app, ["inspect", str(tmp_path)])
    assert result.exit_code == 1
    assert f"{tmp_path / 'run.jsonl'}:2: cut short mid-write" in result.stderr
    assert "prompt cache:" in result.stdout  # the table of what was written whole
    page = tmp_path / "run.html"
    result = runner.invoke(app, ["inspect", str(tmp_path), "--html", str(page)])
    assert result.exit_code == 1 and "run.jsonl:2: cut short mid-write" in result.stderr
    assert page.read_text().startswith("<!doctype html>")


def briefroom(*args: str) -> subprocess.CompletedProcess:
    """The command as a user runs it: main() turns a briefroom error into its one line."""
    return subprocess.run([sys.executable, "-m", "briefroom.cli", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


@pytest.mark.parametrize("content,problem", [("{\"cited\": [\"S1\"", "Invalid JSON"),
                                             ('{"cited": "S1", "sources": {}}', "valid array")])
def test_an_invalid_sources_json_stops_the_page_with_one_line_naming_it(tmp_path, content, problem):
    (tmp_path / "run.jsonl").write_text(START + "\n")
    page = tmp_path / "run.html"
    assert runner.invoke(app, ["inspect", str(tmp_path), "--html", str(page)]).exit_code == 0  # none yet: fine
    (tmp_path / "sources.json").write_text(content)
    result = briefroom("inspect", str(tmp_path), "--html", str(page))
    assert result.returncode == 1
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert line.startswith(f"error: {tmp_path / 'sources.json'}: not a valid sources file (") and problem in line
    assert runner.invoke(app, ["inspect", str(tmp_path)]).exit_code == 0  # the table does not read it


def test_the_run_page_shows_the_servers_prompt_count_beside_ours_with_the_gap():
    from briefroom.inspect import CallRow
    from briefroom.runpage import _served

    def row(ours: int, served: int | None) -> CallRow:
        return CallRow(n=1, agent="searcher", round=1, purpose="search", sections={}, prompt_tokens=ours,
                       budget=6000, use_pct=20.0, compressed=0, dropped=0, changes=[], strategy="tools",
                       cached_tokens=None, served_prompt_tokens=served)

    assert _served(row(1218, 1856)) == "1856 (-34.4%)"
    assert _served(row(1000, 1000)) == "1000"
    assert _served(row(1000, None)) == "-"
