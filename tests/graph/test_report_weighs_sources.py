"""End to end with --model test on the heat-pumps scenario corpus: the report's shape,
the sources weighed (the registry's figure answers, the opinion's is an estimate), every
sentence verified, and the report flags reaching the Writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from briefroom.cli import app
from briefroom.corpus.documents import load_corpus
from briefroom.report.checks import markdown_problems, split_report

CORPUS = Path(__file__).resolve().parents[2] / "scenarios" / "heat-pumps-sold-vs-installed" / "corpus"
QUESTION = "How many heat pumps were installed across Europe in 2025, and why do sales figures for the same year differ?"


def research(out: Path, data_dir: Path, *flags: str) -> None:
    result = CliRunner().invoke(app, ["research", QUESTION, "--corpus", str(CORPUS), "--model", "test", "--rounds",
                                      "2", "--out", str(out), "--data-dir", str(data_dir), "--no-memory", "-q",
                                      *flags])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def run(tmp_path_factory, data_dir) -> Path:
    out = tmp_path_factory.mktemp("heat") / "run"
    research(out, data_dir, "--audience", "energy ministry analysts")
    return out


def test_the_short_answer_is_the_registry_figure_not_the_opinion(run):
    report = (run / "report.md").read_text()
    short = report.split("## Short answer\n\n", 1)[1].split("\n\n", 1)[0]
    assert "1.84 million" in short and "2.9 million" not in short
    for line in report.splitlines():  # the opinion's figure, where it appears, is labelled an estimate
        if "2.9 million" in line:
            assert "an estimate, not a measured figure" in line
    kinds = json.loads((run / "sources.json").read_text())["kinds"]
    cited = json.loads((run / "sources.json").read_text())["cited"]
    assert kinds[cited[0]]["kind"] == "official"


def test_the_report_has_its_shape_and_every_sentence_checks_out(run):
    report = (run / "report.md").read_text()
    headings = [line[3:] for line in report.splitlines() if line.startswith("## ")]
    assert headings[:2] == ["Short answer", "Executive summary"]
    assert "How many heat pumps were installed across Europe in 2025" in headings and headings[-1] == "Sources"
    footer = report.split("\n---\n", 1)[1]
    assert "How this report was made:" in footer
    # the footer says figures stand side by side only where the body shows some with who gives them
    attributed = any(" — *" in line for line in report.split("\n---\n", 1)[0].splitlines())
    assert ("side by side with who gives them" in footer) == attributed
    texts = {d.source_id: d.text for d in load_corpus(CORPUS)}
    assert markdown_problems(report, texts) == []
    retrieved = set(json.loads((run / "sources.json").read_text())["sources"])
    _, mapping = split_report(report)
    assert mapping and set(mapping.values()) <= retrieved  # 0 citations to unretrieved sources


def test_sources_json_keeps_each_sentence_with_its_passage_span(run):
    sources = json.loads((run / "sources.json").read_text())
    assert {"cited", "sources", "claims", "kinds"} <= set(sources)
    texts = {d.source_id: d.text for d in load_corpus(CORPUS)}
    claims = sources["claims"]
    assert claims and all(c["evidence"] for c in claims)
    for claim in claims:
        for ev in claim["evidence"]:
            assert texts[ev["source_id"]][ev["start"]:ev["end"]] == ev["text"]


def test_the_report_flags_reach_the_writers_prompt(run, tmp_path, data_dir):
    log = (run / "run.jsonl").read_text()
    assert "Audience: energy ministry analysts" in log and "Report: standard, about 450 words" in log
    brief = tmp_path / "brief"
    research(brief, data_dir, "--report", "brief", "--words", "120")
    assert "Report: brief, about 120 words" in (brief / "run.jsonl").read_text()
    result = CliRunner().invoke(app, ["research", QUESTION, "--corpus", str(CORPUS), "--model", "test", "--report",
                                      "huge", "--out", str(tmp_path / "x"), "--data-dir", str(data_dir)])
    assert result.exit_code == 2 and "--report must be brief, standard or detailed" in result.output


def test_quotes_restate_asks_the_model_and_keeps_each_quote_its_rewrite_does_not_match(tmp_path, data_dir):
    out = tmp_path / "restate"
    research(out, data_dir, "--quotes", "restate")
    log = (out / "run.jsonl").read_text()
    # the test provider "rewrites" with its task's first line: no rewrite says what a quote says
    assert "Write each one again" in log and "kept the quote" in log
    assert "“" in (out / "report.md").read_text()
    result = CliRunner().invoke(app, ["research", QUESTION, "--corpus", str(CORPUS), "--model", "test", "--quotes",
                                      "paraphrase", "--out", str(tmp_path / "x"), "--data-dir", str(data_dir)])
    assert result.exit_code == 2 and "--quotes must be keep or restate" in result.output
