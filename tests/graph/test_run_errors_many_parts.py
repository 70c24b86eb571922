"""A question of many parts: a report has a section for each of up to MAX_PARTS parts,
though the model drafts at most MAX_SECTIONS; past MAX_PARTS the run and its resume
finish with a report that names the parts it leaves out (issue 24, item 2)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from briefroom.agents.report_message import ReportMessage
from briefroom.cli import app
from briefroom.config import Settings
from briefroom.events import BusMessage, RunEnd, read_events
from briefroom.records import MAX_PARTS, MAX_SECTIONS, Claim, DraftSection, ReportDraft, WriterDraft
from briefroom.run import ResearchRequest, run_research
from tests.conftest import SCENARIOS

runner = CliRunner()
CORPUS = SCENARIOS / "cloud-market" / "corpus"
PARTS = ["How big is the cloud market?", "Who grows fastest?", "What is GPU spending?",
         "How much battery storage?", "How many EVs were sold?", "Which country leads in desalination?",
         "How many heat pumps were installed?", "How much wind power was added?"]


def logged_drafts(run_dir) -> list[ReportDraft]:
    return [e.message.body.payload.draft for e in read_events(run_dir / "run.jsonl")
            if isinstance(e, BusMessage) and isinstance(e.message.body.payload, ReportMessage)]


def assert_report_names_what_it_left_out(run_dir, parts: list[str]) -> None:
    report = (run_dir / "report.md").read_text()
    left_out = [p.rstrip("?") for p in parts[MAX_PARTS:]]
    head = report.split("## Short answer")[0]
    assert (f"first {MAX_PARTS} parts" in head) == bool(left_out) and all(p in head for p in left_out), head
    drafts = logged_drafts(run_dir)
    assert drafts and all(len(d.sections) == min(len(parts), MAX_PARTS) and d.omitted == left_out for d in drafts)
    assert isinstance(read_events(run_dir / "run.jsonl")[-1], RunEnd)


def test_the_model_drafts_max_sections_and_a_report_holds_max_parts():
    assert MAX_SECTIONS < MAX_PARTS
    schema = WriterDraft.model_json_schema()
    assert schema["properties"]["sections"]["maxItems"] == MAX_SECTIONS
    assert schema["$defs"]["DraftSection"]["properties"]["part"]["maximum"] == MAX_SECTIONS
    claim = Claim(text="The documents do not say.", source_ids=[])
    with pytest.raises(ValueError):
        WriterDraft(title="Title", short_answer=claim,
                    sections=[DraftSection(heading=f"Part {n}", claims=[claim]) for n in range(MAX_SECTIONS + 1)])
    sections = [DraftSection(heading=f"Part {n}", claims=[claim], part=min(n + 1, MAX_PARTS))
                for n in range(MAX_PARTS + 2)]
    built = ReportDraft.model_construct(title="Title", short_answer=claim, sections=sections)  # as the outline does
    assert [s.heading for s in built.sections] == [f"Part {n}" for n in range(MAX_PARTS)]
    assert built.omitted == [f"Part {MAX_PARTS}", f"Part {MAX_PARTS + 1}"]
    # a draft validated (a reader's, a checkpoint's) keeps the same limit, and says so
    again = ReportDraft.model_validate({"title": "Title", "short_answer": claim.model_dump(),
                                        "sections": [s.model_dump() for s in sections]})
    assert again == built


@pytest.mark.parametrize("count", [5, 6, 7, 8])
def test_a_question_of_many_parts_ends_with_a_section_each_or_names_the_parts_left_out(count, data_dir, tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["research", " ".join(PARTS[:count]), "--corpus", str(CORPUS), "--model", "test",
                                 "--out", str(out), "--data-dir", str(data_dir), "--quiet"])
    assert result.exit_code == 0, result.output
    assert_report_names_what_it_left_out(out, PARTS[:count])


def test_the_resume_of_a_many_part_run_finishes_too(data_dir, tmp_path):
    out = tmp_path / "run"
    paused = run_research(ResearchRequest(question=" ".join(PARTS[:7]), corpus=[CORPUS], out=out),
                          Settings(model="test", rounds=2, data_dir=data_dir), stop_after_round=1)
    assert paused.status == "paused"
    result = runner.invoke(app, ["resume", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert_report_names_what_it_left_out(out, PARTS[:7])
