"""Question messages addressed by capability and answered to the asker; each message's
archive policy decides what the state keeps when it leaves the board."""

from __future__ import annotations

from briefroom.agents.report_message import REPORT
from briefroom.config import Settings
from briefroom.events import BusMessage, RoundEnd, RoundSummaryEvent, read_events
from briefroom.protocol.messages import ArchivePolicy, MsgType
from briefroom.protocol.payloads import Answer
from briefroom.run import ResearchRequest, run_research

# The second part is not in the corpus: the Writer cannot answer it from round 1.
QUESTION = "How big is the 2026 public cloud market, and how many data centres does Azure run in Antarctica?"


def run(small_corpus, data_dir, out, rounds=3):
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out),
                 Settings(model="test", rounds=rounds, data_dir=data_dir, memory=False))
    return read_events(out / "run.jsonl")


def test_the_writer_asks_the_searcher_about_an_unanswered_part_and_gets_an_answer(small_corpus, data_dir, tmp_path):
    events = run(small_corpus, data_dir, tmp_path / "run")
    messages = [e.message for e in events if isinstance(e, BusMessage)]
    questions = [m for m in messages if m.header.msg_type is MsgType.QUESTION]
    answers = [m for m in messages if m.header.msg_type is MsgType.ANSWER]
    assert questions and all(q.header.sender == "writer" and q.header.receiver == "searcher" for q in questions)
    assert any("Antarctica" in q.body.content for q in questions)
    # each question answered once, to the asker, naming it
    assert sorted(a.header.relation for a in answers) == sorted(q.msg_id for q in questions)
    assert all(a.header.receiver == "writer" and a.header.sender == "searcher" for a in answers)
    antarctica = next(a for a in answers if "Antarctica" in a.payload_as(Answer).question)
    assert antarctica.payload_as(Answer).answered is bool(antarctica.body.references)
    # asked once per run, not again in later rounds
    assert len({q.body.content for q in questions}) == len(questions)


def test_no_question_when_no_round_is_left_to_answer_it(small_corpus, data_dir, tmp_path):
    events = run(small_corpus, data_dir, tmp_path / "run", rounds=1)
    assert not [e for e in events if isinstance(e, BusMessage) and e.message.header.msg_type is MsgType.QUESTION]


def test_archive_policies_decide_what_the_state_keeps(small_corpus, data_dir, tmp_path):
    events = run(small_corpus, data_dir, tmp_path / "run")
    messages = {e.message.msg_id: e.message for e in events if isinstance(e, BusMessage)}
    ends = [e for e in events if isinstance(e, RoundEnd)]
    discarded = {i for e in ends for i in e.discarded}
    expired = {i for e in ends for i in e.expired}
    reports = {i for i, m in messages.items() if m.header.msg_type is REPORT}
    assert reports & expired and reports & expired <= discarded  # drafts leave no copy in the archive
    assert all(messages[i].metadata.archive_policy is ArchivePolicy.DISCARD for i in discarded)
    summarized = {i for e in events if isinstance(e, RoundSummaryEvent) for i in e.replaced}
    assert summarized and not any(messages[i].metadata.archive_policy is ArchivePolicy.ARCHIVE for i in summarized)


def test_the_first_part_of_the_comma_joined_question_is_answered_from_the_corpus(small_corpus, data_dir, tmp_path):
    run(small_corpus, data_dir, tmp_path / "run")
    report = (tmp_path / "run" / "report.md").read_text()
    first = report.split("## How big is the 2026 public cloud market\n\n", 1)[1].split("\n## ", 1)[0]
    assert "723 billion USD" in first and "[1]" in first
    assert "723 billion USD" in report.split("## Short answer\n\n", 1)[1].split("\n\n", 1)[0]
