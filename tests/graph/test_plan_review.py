"""Plan review and clarifying questions (issue 26 item 1): a run that asks its user
pauses at LangGraph's interrupt, resumes at the same question, hands out the plan its
user left, and a recording's replay answers as the recording did."""

from __future__ import annotations

import json
import re

import pytest

from briefroom.config import Settings
from briefroom.events import BusMessage, Clarification, LlmCall, PlanReview, RunPaused, read_events
from briefroom.models.cassette import ReplayDivergence
from briefroom.protocol.messages import MsgType
from briefroom.replay import replay_scenario
from briefroom.review import (
    RECORDED_REVIEW_FILE,
    ClarifyRequest,
    GivenAnswer,
    PlannedTask,
    PlanReviewRequest,
    ReviewError,
    ReviewOptions,
    check_answer,
    prompt_answer,
    reviewed_tasks,
)
from briefroom.run import ResearchRequest, resume_research, run_research
from tests.conftest import SCENARIOS

CORPUS = SCENARIOS / "cloud-market" / "corpus"
QUESTION = "How big is the 2026 public cloud market and who is growing fastest?"
PLAN = PlanReviewRequest(goal=QUESTION, tasks=[PlannedTask(task_id="t1.1", question="How big is the market?"),
                                               PlannedTask(task_id="t1.2", question="Who is growing fastest?")])


def settings(data_dir, **extra) -> Settings:
    return Settings.from_env(model="test", data_dir=data_dir, memory=False, **extra)


def searcher_tasks(run_dir) -> list[str]:
    return [e.message.body.content for e in read_events(run_dir / "run.jsonl")
            if isinstance(e, BusMessage) and e.message.header.msg_type is MsgType.INSTRUCTION
            and e.message.header.sender == "planner"]


def planner_calls(run_dir, round_: int = 1) -> int:
    return sum(1 for e in read_events(run_dir / "run.jsonl")
               if isinstance(e, LlmCall) and e.agent == "planner" and e.round == round_)


# --- answers ---------------------------------------------------------------------------
@pytest.mark.parametrize("answer, why", [
    ({"edit": {"t9.9": "What else is there?"}}, "unknown task id 't9.9'"),
    ({"drop": ["t3"]}, "unknown task id 't3'"),
    ({"edit": {"t1.1": "  "}}, "the edit of t1.1 is empty"),
    ({"add": [""]}, "the added sub-question is empty"),
    ({"edit": {"t1.1": "Size in USD?"}, "drop": ["t1.1"]}, "t1.1 is both edited and dropped"),
    ({"drop": ["t1.1", "t1.2"]}, "no sub-question left"),
    ({"add": ["One more question?"] * 3}, "at most 4"),
    ({"accept": True, "note": "also Europe"}, "'accept' takes the plan as it is"),
    ({"remove": ["t1.1"]}, "remove: Extra inputs are not permitted"),
    (["t1.1"], "an answer is a JSON object, not list"),
    # a served client's or a job's answer is a stranger's: the note goes into every prompt
    ({"note": "x" * 1001}, "the note has 1,001 characters; at most 1,000"),
    ({"note": "  "}, "the note is empty"),
    ({"edit": {"t1.1": "Size\x1b[2J in USD?"}}, "the edit of t1.1 holds control characters"),
    ({"add": ["x" * 301]}, "at most 300"),
])
def test_an_answer_that_does_not_fit_the_plan_is_refused_in_one_line(answer, why):
    with pytest.raises(ReviewError) as refused:
        check_answer(answer, PLAN)
    assert why in str(refused.value) and "\n" not in str(refused.value)


def test_clarifying_answers_are_bounded_and_an_empty_one_leaves_its_question_open():
    clarify = ClarifyRequest(goal=QUESTION, questions=["Which region?", "Which year?"])
    assert check_answer({"answers": ["", "2026"]}, clarify).answers == ["", "2026"]
    for answers, why in ((["x" * 301], "answer 1 has 301 characters"), (["Europe\x00"], "control characters"),
                         (["a", "b", "c"], "3 answers for 2 question(s)")):
        with pytest.raises(ReviewError, match=re.escape(why)):
            check_answer({"answers": answers}, clarify)


def test_a_given_answer_answers_only_the_question_it_was_checked_against():
    given = GivenAnswer(PLAN, {"accept": True})
    assert given(ClarifyRequest(goal=QUESTION, questions=["Which region?"])) is None
    assert given(PLAN.model_copy(update={"error": "asked again"})) == {"accept": True}
    assert given(PLAN) is None  # once


def test_the_reviewed_plan_keeps_ids_and_numbers_additions_after_the_last():
    answer = check_answer({"edit": {"t1.2": "Which provider  grows fastest?"}, "drop": ["t1.1"],
                           "add": ["How big is IaaS?"]}, PLAN)
    assert reviewed_tasks(PLAN.tasks, answer, 1) == [
        PlannedTask(task_id="t1.2", question="Which provider grows fastest?"),
        PlannedTask(task_id="t1.3", question="How big is IaaS?")]


def test_the_terminal_prompt_refuses_a_bad_command_and_asks_again():
    lines = iter(["edit t7.1 What is this?", "frobnicate", "drop t1.1", "add How big is IaaS in 2026?",
                  "note only public figures", "accept"])
    said: list[str] = []
    answer = prompt_answer(PLAN, lambda prompt: next(lines), said.append)
    assert answer == {"drop": ["t1.1"], "add": ["How big is IaaS in 2026?"], "note": "only public figures"}
    errors = [line for line in said if line.startswith("error:")]
    assert len(errors) == 2 and "unknown task id 't7.1'" in errors[0] and "unknown command" in errors[1]


def test_end_of_input_at_the_prompt_leaves_the_question_unanswered():
    assert prompt_answer(PLAN, lambda prompt: None, lambda line: None) is None
    clarify = ClarifyRequest(goal=QUESTION, questions=["Which region?", "Which year?"])
    replies = iter(["Europe", ""])
    assert prompt_answer(clarify, lambda prompt: next(replies), lambda line: None) == {"answers": ["Europe", ""]}


# --- runs ------------------------------------------------------------------------------
def test_a_run_pauses_at_its_plan_resumes_there_and_searches_the_plan_its_user_left(tmp_path, data_dir):
    run_dir = tmp_path / "run"
    paused = run_research(ResearchRequest(question=QUESTION, corpus=[CORPUS], out=run_dir,
                                          review=ReviewOptions(plan=True)), settings(data_dir))
    assert paused.status == "paused" and paused.report is None
    asked = paused.waiting_for
    assert isinstance(asked, PlanReviewRequest)
    assert searcher_tasks(run_dir) == []  # nothing searched before the review
    assert [e for e in read_events(run_dir / "run.jsonl") if isinstance(e, RunPaused)][-1].waiting_for == \
        "plan_review"
    calls = planner_calls(run_dir)
    ids = [t.task_id for t in asked.tasks]
    assert ids == [f"t1.{n}" for n in range(1, len(ids) + 1)] and len(ids) >= 3

    seen: list[PlanReviewRequest] = []

    def reviewer(request):
        seen.append(request)
        return {"edit": {ids[0]: "What will public cloud spending be in 2026?"}, "drop": [ids[1]],
                "add": ["How much is spent on GPU cloud capacity in 2026?"], "note": "worldwide figures"}

    done = resume_research(run_dir, reviewer=reviewer)
    assert done.status == "done" and done.report
    assert seen == [asked]  # asked again, the same question: the plan was not made a second time
    tasks = searcher_tasks(run_dir)
    assert tasks[0] == "What will public cloud spending be in 2026?"
    assert "How much is spent on GPU cloud capacity in 2026?" in tasks
    assert asked.tasks[1].question not in tasks and asked.tasks[0].question not in tasks[:len(ids)]
    review = [e for e in read_events(run_dir / "run.jsonl") if isinstance(e, PlanReview)]
    assert len(review) == 1 and review[0].note == "worldwide figures" and not review[0].accepted
    assert [t.task_id for t in review[0].before] == ids
    assert [t.task_id for t in review[0].after] == [ids[0], *ids[2:], f"t1.{len(ids) + 1}"]
    charter = json.loads((run_dir / "charter.json").read_text())
    assert any("GPU cloud capacity" in c for c in charter["constraints"])
    assert "The user's note on the plan: worldwide figures" in charter["constraints"]
    assert calls == 1 and planner_calls(run_dir) == calls  # the plan was made once, before the pause


def test_clarifying_answers_become_charter_constraints_before_the_plan(tmp_path, data_dir):
    run_dir = tmp_path / "run"
    asked: list = []

    def reviewer(request):
        asked.append(request.kind)
        return {"answers": ["Worldwide, in USD"]} if request.kind == "clarify" else {"accept": True}

    done = run_research(ResearchRequest(question=QUESTION, corpus=[CORPUS], out=run_dir,
                                        review=ReviewOptions(plan=True, clarify=True), reviewer=reviewer),
                        settings(data_dir))
    assert done.status == "done" and asked == ["clarify", "plan_review"]
    clarified = [e for e in read_events(run_dir / "run.jsonl") if isinstance(e, Clarification)]
    assert len(clarified) == 1 and clarified[0].answers[0] == "Worldwide, in USD"
    charter = json.loads((run_dir / "charter.json").read_text())
    assert any(c.endswith("the user answered: Worldwide, in USD") for c in charter["constraints"])
    # accepted as proposed: the plan adds nothing to the charter
    assert not any("reviewed the plan" in c for c in charter["constraints"])
    assert done.state["charter"].constraints == tuple(charter["constraints"])


def test_a_run_without_review_asks_nothing_and_keeps_no_review_state(tmp_path, data_dir):
    done = run_research(ResearchRequest(question=QUESTION, corpus=[CORPUS], out=tmp_path / "run"),
                        settings(data_dir))
    assert done.status == "done" and "review" not in done.state


def test_a_recording_with_a_review_replays_its_answers(tmp_path, data_dir):
    scenario = tmp_path / "scenario"

    def reviewer(request):
        return {"drop": [request.tasks[-1].task_id], "add": ["How much is spent on GPU cloud capacity?"]}

    recorded = run_research(ResearchRequest(question=QUESTION, corpus=[CORPUS], out=tmp_path / "recorded",
                                            record=scenario, review=ReviewOptions(plan=True), reviewer=reviewer),
                            settings(data_dir))
    assert recorded.status == "done"
    kept = json.loads((scenario / RECORDED_REVIEW_FILE).read_text())
    assert kept["options"]["plan"] and len(kept["answers"]) == 1
    assert "GPU" not in (scenario / "scenario.yaml").read_text()  # the charter it started from

    replayed = replay_scenario(scenario, settings(data_dir), tmp_path / "replay")
    assert replayed.check() == []
    assert searcher_tasks(tmp_path / "replay") == searcher_tasks(tmp_path / "recorded")

    (scenario / RECORDED_REVIEW_FILE).unlink()  # without the answers the replay cannot take the same path
    with pytest.raises(ReplayDivergence):
        replay_scenario(scenario, settings(data_dir), tmp_path / "replay-2")
