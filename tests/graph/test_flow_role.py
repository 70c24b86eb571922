"""A role that changes the flow, added in one file plus its prompt (examples/roles).

The fact-checker guards conclusions: the bus hands each one to it first, and the
Critic and the Writer see only what it forwards. Nothing else in the project names it.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from langchain_core.messages import AIMessage

from briefroom.config import Settings
from briefroom.events import BusMessage, ClaimRejected, read_events
from briefroom.llm import ModelHandle, ModelPool
from briefroom.models.deterministic import DeterministicChatModel
from briefroom.protocol.messages import MsgType
from briefroom.protocol.payloads import Critique
from briefroom.run import ResearchRequest, run_research
from tests.fakes import ScriptedChatModel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "roles"


def fact_checker_alone(tmp_path: Path) -> Path:
    """A roles folder holding the fact-checker and nothing else: the examples folder has
    other roles, which would share the conclusions' route with it."""
    folder = tmp_path / "roles"
    folder.mkdir()
    for name in ("fact_checker.py", "fact_checker.md"):
        (folder / name).write_text((EXAMPLES / name).read_text())
    return folder
QUESTION = "How big is the 2026 public cloud market and who grows fastest?"


def checks_rejecting(word: str):
    """The fact-checker's model: every conclusion it is asked about is supported, except
    those whose text on the whiteboard contains `word`."""

    def reply(messages, kwargs):
        prompt = "\n".join(str(m.content) for m in messages)
        ids = re.search(r'"msg_id": \{[^{}]*?"enum": (\[[^\]]*\])', json.dumps(kwargs["response_format"]["schema"]))
        checks = []
        for msg_id in json.loads(ids.group(1)):
            text = re.search(r'id="%s"[^>]*>(.*?)</data' % re.escape(msg_id), prompt, re.S).group(1)
            checks.append({"msg_id": msg_id, "verdict": "unsupported" if word in text else "supported"})
        return AIMessage(content=json.dumps({"checks": checks}))

    return reply


def test_the_fact_checker_guards_conclusions_without_any_other_role_knowing(small_corpus, data_dir, tmp_path):
    test_model = DeterministicChatModel()
    checker = ScriptedChatModel([checks_rejecting("Azure")] * 10, name="fact_checker")
    handles = {role: ModelHandle(role, "test", "test", test_model, "json_object_schema", 32_000, label="test")
               for role in ("planner", "searcher", "critic", "writer", "summarizer")}
    handles["fact_checker"] = ModelHandle("fact_checker", "scripted", "scripted", checker, "json_object_schema",
                                          32_000, label="scripted")
    out = tmp_path / "run"
    result = run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out,
                                          roles_dirs=[fact_checker_alone(tmp_path)],
                                          models=ModelPool(handles)), Settings(rounds=1, data_dir=data_dir))
    log = read_events(out / "run.jsonl")
    sent = [e for e in log if isinstance(e, BusMessage) and e.message.header.msg_type is MsgType.CONCLUSION]
    from_searcher = [e for e in sent if e.message.header.sender == "searcher"]
    forwarded = [e for e in sent if e.message.header.sender == "fact_checker"]
    assert from_searcher and forwarded
    # every conclusion went to the guard alone; the Critic and the Writer got only forwarded ones
    assert all(e.recipients == ["fact_checker"] for e in from_searcher)
    assert all(set(e.recipients) == {"critic", "writer"} for e in forwarded)
    # what it held back is exactly what its model called unsupported, and it was logged
    held = [e.message.body.content for e in from_searcher if "Azure" in e.message.body.content]
    assert held, "the corpus's Azure sentence should have been a conclusion"
    assert [e.message.body.content for e in forwarded] == [e.message.body.content for e in from_searcher
                                                           if "Azure" not in e.message.body.content]
    assert {e.claim for e in log if isinstance(e, ClaimRejected) and e.agent == "fact_checker"} == set(held)
    # nothing the guard held back reached a prompt of the Critic or the Writer
    for call in (c for c in model_calls_of(log) if c.agent in ("critic", "writer")):
        assert not any(text in json.dumps([m.model_dump(mode="json") for m in call.messages]) for text in held)
    assert result.report and "Azure" not in result.report


def test_no_file_outside_the_role_names_it():
    """The role is one file plus its prompt: the framework and the other roles never name it."""
    root = Path(__file__).resolve().parents[2]
    found = subprocess.run(["grep", "-rl", "fact_checker", "briefroom"], cwd=root, capture_output=True, text=True)
    assert found.stdout == ""


def model_calls_of(log):
    from briefroom.events import LlmCall

    return [e for e in log if isinstance(e, LlmCall)]


def test_questions_left_without_an_accepted_conclusion_start_another_round(small_corpus, data_dir, tmp_path):
    """The Critic's gap critique is what makes a second round happen: with every
    conclusion rejected, the questions go back to the planner, who plans for them."""
    test_model = DeterministicChatModel()

    def reject_all(messages, kwargs):
        ids = re.search(r'"msg_id": \{[^{}]*?"enum": (\[[^\]]*\])', json.dumps(kwargs["response_format"]["schema"]))
        return AIMessage(content=json.dumps({"verdicts": [{"msg_id": i, "verdict": "reject", "reason": "off topic"}
                                                          for i in json.loads(ids.group(1))]}))

    handles = {role: ModelHandle(role, "test", "test", test_model, "json_object_schema", 32_000, label="test")
               for role in ("planner", "searcher", "writer", "summarizer")}
    handles["critic"] = ModelHandle("critic", "scripted", "scripted", ScriptedChatModel([reject_all] * 20),
                                    "json_object_schema", 32_000, label="scripted")
    out = tmp_path / "run"
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out, models=ModelPool(handles)),
                 Settings(rounds=2, data_dir=data_dir))
    log = read_events(out / "run.jsonl")
    asked = [e.message.body.content for e in log if isinstance(e, BusMessage) and e.round == 1
             and e.message.header.msg_type is MsgType.INSTRUCTION and e.message.header.sender == "planner"]
    gaps = [e.message.payload_as(Critique) for e in log if isinstance(e, BusMessage)
            and e.message.header.msg_type is MsgType.CRITIQUE and e.recipients == ["planner"]]
    # (a question whose answer was already said for an earlier one publishes nothing of its own)
    assert asked and len(gaps) == 1 and gaps[0].gaps and set(gaps[0].gaps) <= set(asked)
    second = [c for c in model_calls_of(log) if c.agent == "planner" and c.round == 2]
    assert second, "no second round"
    prompt = json.dumps([m.model_dump(mode="json") for m in second[0].messages])
    assert "Earlier rounds left these gaps" in prompt and all(q in prompt for q in gaps[0].gaps)
