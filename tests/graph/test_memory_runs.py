"""Memory across runs: what run 1 verified, run 2's Planner sees, with provenance."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from briefroom.cli import app
from briefroom.config import Settings
from briefroom.events import Event, LlmCall, MemoryRead, MemoryWrite, ToolCall, ToolResult, read_events
from briefroom.run import ResearchRequest, run_research

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"
runner = CliRunner()


def events(run_dir) -> list[Event]:
    return read_events(run_dir / "run.jsonl")


def test_second_run_recalls_verified_memory_and_a_no_memory_run_does_not(small_corpus, tmp_path):
    data = tmp_path / "data"
    settings = Settings(model="test", rounds=1, data_dir=data, user="alice", session="s1")
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=tmp_path / "r1"), settings)
    first = events(tmp_path / "r1")
    assert next(e for e in first if isinstance(e, MemoryRead)).items == []
    written = [e for e in first if isinstance(e, MemoryWrite) and e.accepted]
    assert {e.zone for e in written} == {"fact", "vector", "skill"}

    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=tmp_path / "r2"), settings)
    second = events(tmp_path / "r2")
    read = next(e for e in second if isinstance(e, MemoryRead))
    assert {i.zone for i in read.items} >= {"vector", "skill"}
    planner = next(e for e in second if isinstance(e, LlmCall) and e.agent == "planner")
    prompt = json.dumps([m.model_dump(mode="json", exclude_unset=True) for m in planner.messages])
    assert "## Memory (from earlier runs)" in prompt and 'kind=\\"memory\\"' in prompt
    assert "r1" in prompt  # provenance: the run it came from
    others = [e for e in second if isinstance(e, LlmCall) and e.agent != "planner"]
    assert others and all(e.sections["memory"] == 0 for e in others)  # only the Planner reads at task start
    uses = [e for e in second if isinstance(e, MemoryWrite) and e.kind == "skill_use"]
    assert uses and uses[0].action == "success"

    # another user sees none of it; --no-memory neither reads nor writes
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=tmp_path / "r3"),
                 settings.model_copy(update={"user": "bob"}))
    assert next(e for e in events(tmp_path / "r3") if isinstance(e, MemoryRead)).items == []
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=tmp_path / "r4"),
                 settings.model_copy(update={"memory": False}))
    assert not [e for e in events(tmp_path / "r4") if e.event.startswith("memory")]


def test_memory_cli_lists_shows_exports_and_forgets(small_corpus, tmp_path):
    data = tmp_path / "data"
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=tmp_path / "r1"),
                 Settings(model="test", rounds=1, data_dir=data, user="alice"))
    base = ["--data-dir", str(data), "--user", "alice"]
    listed = runner.invoke(app, ["memory", "list", "--json", "--zone", "fact", *base])
    assert listed.exit_code == 0, listed.output
    facts = json.loads(listed.stdout)
    assert facts and all(f["zone"] == "fact" and len(f["confirmed_by"]) >= 2 for f in facts)
    target = facts[0]
    shown = runner.invoke(app, ["memory", "show", target["id"], *base])
    assert json.loads(shown.stdout)["text"] == target["text"]
    exported = runner.invoke(app, ["memory", "export", *base])
    assert len(exported.stdout.splitlines()) == len(json.loads(runner.invoke(
        app, ["memory", "list", "--json", *base]).stdout))
    found = runner.invoke(app, ["memory", "search", "public cloud market", "--json", *base])
    assert json.loads(found.stdout)
    assert runner.invoke(app, ["memory", "list", "--json", "--data-dir", str(data), "--user", "bob"]).stdout.strip() \
        == "[]"
    forgot = runner.invoke(app, ["memory", "forget", target["id"], *base])
    assert forgot.exit_code == 0
    assert target["id"] not in runner.invoke(app, ["memory", "list", "--json", *base]).stdout
    for args, message in [(["memory", "forget", target["id"], *base], "no memory"),
                          (["memory", "list", "--zone", "dreams", *base], "--zone must be one of"),
                          (["memory", "list", "--data-dir", str(data), "--user", "../x"], "--user must be")]:
        result = runner.invoke(app, args)
        assert result.exit_code == 1 and message in result.output, (args, result.output)


RECALLER = '''
from pathlib import Path
from briefroom.agents.base import Role
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import MsgType


def step(turn):
    # a declared decision point: once per turn with new conclusions, look up memory
    if turn.unread:
        outcomes = turn.use_tools(turn.charter.goal)
        turn.note(f"recalled {sum(len(o.result.memories) for o in outcomes if o.ok)} memories")


ROLE = Role(name="recaller", prompt=Path(__file__).with_name("recaller.md"),
            subscriptions=(Subscription(msg_type=MsgType.CONCLUSION, senders=("searcher",)),),
            publications=(), step=step, after=("check",), before=("draft",),
            tools=("recall_memory",))
'''


def test_other_roles_read_memory_only_through_the_tool_they_declare(small_corpus, tmp_path):
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "recaller.py").write_text(RECALLER)
    (roles / "recaller.md").write_text("You recall.\n{{data_notice}}\n")
    settings = Settings(model="test", rounds=1, data_dir=tmp_path / "data", user="carol")
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=tmp_path / "r1"), settings)
    result = run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=tmp_path / "r2",
                                          roles_dirs=[roles]), settings)
    log = events(tmp_path / "r2")
    calls = [e for e in log if isinstance(e, ToolCall) and e.agent == "recaller"]
    assert calls and {c.tool for c in calls} == {"recall_memory"}
    results = [e for e in log if isinstance(e, ToolResult) and e.agent == "recaller"]
    assert results and all(r.ok for r in results)
    notes = result.state["worktables"]["recaller"].notes
    assert any(n.startswith("recalled ") and not n.startswith("recalled 0") for n in notes), notes
    # the memories reached the recaller as data inside its tool turn, never in its prompt's memory section
    recaller_calls = [e for e in log if isinstance(e, LlmCall) and e.agent == "recaller"]
    assert recaller_calls and all(c.sections["memory"] == 0 for c in recaller_calls)


def test_a_role_that_declares_the_memory_tool_also_runs_without_memory(small_corpus, tmp_path):
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "recaller.py").write_text(RECALLER)
    (roles / "recaller.md").write_text("You recall.\n{{data_notice}}\n")
    result = run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=tmp_path / "r",
                                          roles_dirs=[roles]),
                          Settings(model="test", rounds=1, data_dir=tmp_path / "data", memory=False))
    assert result.state["worktables"]["recaller"].notes == ("recalled 0 memories",)


def test_the_shipped_scenario_pair_reuses_what_the_first_run_verified(tmp_path):
    from bench.memory import PAIR, benefit, load_pair

    result = benefit(tmp_path, load_pair(PAIR))
    with_memory, without = result["with_memory"], result["without_memory"]
    assert with_memory["questions_answered_from_memory"] >= 1
    assert with_memory["memory_facts_in_report"] >= 1  # cited with its original source
    assert with_memory["tool_calls"] < without["tool_calls"]
    assert with_memory["questions_searched"] < without["questions_searched"]
    assert without["questions_answered_from_memory"] == 0 and without["gates_s"] == 0.0
