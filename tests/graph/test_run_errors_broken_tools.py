"""A tool that fails on every call is an error of the run, not an empty result (issue 24,
item 1): the run stops with one line naming the tool and its error, exit 1. A failure
the model caused, or a definite answer of the tool, stays a tool result."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import briefroom.run.compose as run_compose  # where the run's tools are composed
from briefroom.agents.tool_loop import broken_tools, tool_broke
from briefroom.cli import app
from briefroom.config import Settings
from briefroom.corpus.tools import LocalSearchArgs, LocalSearchResult
from briefroom.errors import EngineeringFailure
from briefroom.events import ErrorEvent, RunEnd, read_events
from briefroom.protocol.tools import Tool, run_tool
from briefroom.run import ResearchRequest, run_research
from tests.faulty_tools import faulty_search

QUESTION = "How big is the 2026 public cloud market?"
runner = CliRunner()


def failing(name: str, exc: Exception, retries: int = 0) -> Tool:
    def run(args):
        raise exc

    return Tool(name, "fails (test double)", LocalSearchArgs, LocalSearchResult, run, retries=retries, backoff_s=0)


@pytest.mark.filterwarnings("ignore::UserWarning")  # the garbage double trips pydantic's serializer
@pytest.mark.parametrize("mode", ["raise", "timeout", "garbage"])
def test_a_tool_whose_code_fails_broke(mode):
    tool = faulty_search(mode, timeout_s=0.2)
    assert tool_broke(run_tool(tool, "c1", {"query": "cloud"}), tool)


def test_a_missing_module_and_a_backend_that_stays_down_broke():
    fetch = failing("fetch_url", ImportError("lxml.html.clean module is now a separate project"))
    index = failing("local_search", EngineeringFailure("index query failed: disk I/O error", transient=True),
                    retries=1)
    for tool in (fetch, index):
        assert tool_broke(run_tool(tool, "c1", {"query": "cloud"}), tool)
    outcomes = [run_tool(fetch, f"c{n}", {"query": "cloud"}) for n in range(3)]
    [broken] = broken_tools(outcomes, {"fetch_url": fetch})
    assert broken.tool == "fetch_url" and broken.calls == 3
    assert broken.reason("searcher's turn in round 1") == (
        "tool fetch_url failed on every call (3) of searcher's turn in round 1: "
        "ImportError: lxml.html.clean module is now a separate project")


def test_what_the_model_caused_or_the_tool_answered_on_purpose_did_not_break_it():
    tool = faulty_search("not_found")  # a definite answer: "backend answered 404"
    assert not tool_broke(run_tool(tool, "c1", {"query": "cloud"}), tool)
    bad_arguments = run_tool(faulty_search("raise"), "c2", {"query": "x", "k": 5})
    assert bad_arguments.error["error"] == "contract_error" and not tool_broke(bad_arguments, tool)
    no_source = failing("read_source", EngineeringFailure("no source S00000000 in this run's corpus"), retries=1)
    assert not tool_broke(run_tool(no_source, "c3", {"query": "cloud"}), no_source)


def test_a_tool_that_worked_once_in_the_turn_is_not_broken():
    good = faulty_search("secrets")
    bad = faulty_search("raise")
    outcomes = [run_tool(bad, "c1", {"query": "cloud"}), run_tool(good, "c2", {"query": "cloud"})]
    assert broken_tools(outcomes, {"local_search": good}) == []


def test_a_run_whose_search_always_crashes_stops_with_the_tools_error(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(EngineeringFailure) as stopped:
        run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out,
                                     tools={"local_search": faulty_search("raise")}),
                     Settings(model="test", rounds=1, data_dir=data_dir))
    assert str(stopped.value).startswith("tool local_search failed on every call (")
    assert str(stopped.value).endswith("of searcher's turn in round 1: RuntimeError: backend exploded")
    log = read_events(out / "run.jsonl")
    assert isinstance(log[-1], ErrorEvent) and log[-1].kind == "EngineeringFailure"
    assert not (out / "report.md").exists()  # no "No verified answer" report for a broken tool


def test_the_cli_says_which_tool_broke_in_one_line_and_exits_1(small_corpus, data_dir, tmp_path, monkeypatch):
    real = run_compose.corpus_tools
    monkeypatch.setattr(run_compose, "corpus_tools",
                        lambda index: {**real(index), "local_search": failing("local_search", ImportError(
                            "No module named 'lxml_html_clean'"))})
    result = runner.invoke(app, ["research", QUESTION, "--corpus", str(small_corpus), "--model", "test",
                                 "--out", str(tmp_path / "run"), "--data-dir", str(data_dir), "--quiet"])
    assert result.exit_code == 1, result.output
    [line] = [x for x in result.output.splitlines() if x.startswith("error:")]
    assert "tool local_search failed on every call" in line
    assert line.endswith("ImportError: No module named 'lxml_html_clean'")


def test_a_definite_answer_on_every_call_still_ends_in_a_report(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    result = run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out,
                                          tools={"local_search": faulty_search("not_found")}),
                          Settings(model="test", rounds=1, data_dir=data_dir))
    assert result.report and isinstance(read_events(out / "run.jsonl")[-1], RunEnd)
