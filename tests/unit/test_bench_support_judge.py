"""bench.support_judge: the Writer's judgement task asked of a model on labelled pairs."""

from __future__ import annotations

import json

import bench.support_judge as sj

PASSAGE = "Manufacturers sold 2.61 million heat pumps into the European market in 2025."
ROWS = [
    {"passage": PASSAGE, "sentence": "In 2025 manufacturers sold 2.61 million heat pumps into Europe.",
     "label": "supported"},
    {"passage": PASSAGE, "sentence": "Manufacturers sold 2.16 million heat pumps into the European market in 2025.",
     "label": "unsupported"},  # code refuses it: 2.16 million is in no source
    {"passage": PASSAGE, "sentence": "Manufacturers sold 2.61 million heat pumps into the European market in 2025, "
                                     "because of subsidies.", "label": "unsupported"},  # only a judge can refuse it
]


def test_the_recorded_judgement_call_is_focused_on_its_task():
    system, head = sj.recorded_judgement(sj.CASSETTE)
    # role, charter and output format in the system message; none of the run's context before the task
    assert system.startswith("## Role\nYou are the Writer") and "## Charter" in system and "## Output format" in system
    assert head == ""


def test_a_batch_is_asked_as_the_writer_asks_it_and_its_verdicts_read(monkeypatch):
    asked = {}

    def reply(base_url, messages, schema):
        asked["messages"], asked["schema"] = messages, schema
        return json.dumps({"verdicts": [{"sentence_id": "s3", "verdict": "unsupported", "reason": "a cause added"},
                                        {"sentence_id": "s1", "verdict": "supported", "reason": "it says so"}]}), 1.0

    monkeypatch.setattr(sj, "structured_reply", reply)
    out, _, _ = sj.judge_batch("http://127.0.0.1:1/v1", ROWS, "SYSTEM", "## Whiteboard\nctx\n\n", None)
    assert out == {2: "a cause added"}
    user = asked["messages"][1]["content"]
    assert asked["messages"][0] == {"role": "system", "content": "SYSTEM"}
    assert user.startswith("## Whiteboard\nctx\n\n## Current task\nJudge each sentence below")
    assert f"s1: {ROWS[0]['sentence']}\n  [{sj.source_id(PASSAGE)}] {PASSAGE}" in user
    assert user.endswith("- sentence_id: one of s1, s2, s3\n- verdicts: at most 3 item(s)")
    verdict = asked["schema"]["$defs"]["SupportVerdict"]["properties"]["sentence_id"]
    assert verdict["enum"] == ["s1", "s2", "s3"]


def test_a_reply_that_is_no_review_leaves_the_batch_unjudged(monkeypatch):
    monkeypatch.setattr(sj, "structured_reply", lambda *a: ("{\"verdicts\": []}", 1.0))
    assert sj.judge_batch("http://127.0.0.1:1/v1", ROWS, "S", "", None)[0] is None


def test_code_refuses_first_and_a_restatement_is_not_judged():
    # the model refuses the first (wrongly) and the third (rightly)
    out = sj.tally(ROWS, refused_by_model={0, 2})
    assert out["model_alone"] == {"supported_pass": 0, "unsupported_caught": 1}
    # the first is a paraphrase ("into Europe"), not a restatement: the model's verdict counts
    assert out["code_and_model"] == {"supported_pass": 0, "unsupported_caught": 2}
    assert sj.tally(ROWS, refused_by_model=set())["code_and_model"] == {"supported_pass": 1, "unsupported_caught": 1}


def test_the_reason_comes_before_the_verdict_unless_verdict_first(monkeypatch):
    asked = {}

    def reply(base_url, messages, schema):
        asked["schema"] = schema
        return json.dumps({"verdicts": [{"sentence_id": "s1", "reason": "the passage says so",
                                         "verdict": "supported"}]}), 1.0

    monkeypatch.setattr(sj, "structured_reply", reply)
    assert sj.judge_batch("http://127.0.0.1:1/v1", ROWS[:1], "S", "", None)[0] == {}
    assert list(asked["schema"]["$defs"]["SupportVerdict"]["properties"]) == ["sentence_id", "reason", "verdict"]
    assert sj.judge_batch("http://127.0.0.1:1/v1", ROWS[:1], "S", "", None, verdict_first=True)[0] == {}
    assert list(asked["schema"]["$defs"]["VerdictFirst"]["properties"]) == ["sentence_id", "verdict", "reason"]
