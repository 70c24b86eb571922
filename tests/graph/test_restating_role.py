"""Issue 25: a role that rewrites conclusions is one new file (examples/roles/units.py).

Loaded with the examples folder (beside the fact-checker, two guards of conclusions), it
restates the Searcher's "2,600 MW" as "2.6 GW": the restatement supersedes the original
with the same citations, the fact-checker and the Critic check it, the Writer sees it
and not the original, and the report, which shows it, passes every check. Nothing else
in the repository names the role.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from briefroom.agents.registry import load_role_file
from briefroom.config import Settings
from briefroom.events import BusMessage, LlmCall, ReportAccepted, read_events
from briefroom.protocol.messages import MsgType
from briefroom.protocol.payloads import Conclusion, Critique
from briefroom.run import ResearchRequest, run_research
from tests.conftest import write_corpus

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "roles"
ROLE_FILE = EXAMPLES / "units.py"
QUESTION = "How much offshore wind capacity did Norvalia add in 2025?"


@pytest.fixture
def wind_corpus(tmp_path) -> Path:
    return write_corpus(tmp_path / "wind", {
        "norvalia.md": "# Norvalia offshore wind, 2025\n\nNorvalia added 2,600 MW of offshore wind capacity in 2025, "
                       "the grid operator reported.\n\nThe largest project commissioned that year was Halvard Bank, "
                       "with 1,200 MW of turbines.\n",
        "onshore.md": "# Onshore wind, 2025\n\nOnshore wind farms in Norvalia added 350 MW in 2025.\n"})


def test_a_restated_conclusion_supersedes_the_original_and_is_what_the_team_checks_and_writes(
        wind_corpus, data_dir, tmp_path):
    name = load_role_file(ROLE_FILE).name
    out = tmp_path / "run"
    result = run_research(ResearchRequest(question=QUESTION, corpus=[wind_corpus], out=out, roles_dirs=[EXAMPLES]),
                          Settings(model="test", rounds=2, data_dir=data_dir))
    log = read_events(out / "run.jsonl")
    sent = {e.message.msg_id: e for e in log if isinstance(e, BusMessage)
            and e.message.header.msg_type is MsgType.CONCLUSION}
    team = json.loads((out / "charter.json").read_text())["roles"]
    assert team.index("searcher") < team.index(name) < team.index("fact_checker") < team.index("critic")

    restated = [e.message for e in sent.values() if e.message.header.sender == name and e.message.header.supersedes]
    spelled = {"2,600 MW": "2.6 GW", "1,200 MW": "1.2 GW"}
    assert any("2.6 GW" in m.body.content for m in restated), "the 2,600 MW conclusion should have been restated"
    for message in restated:
        original = sent[message.header.supersedes].message
        assert original.header.sender == "searcher"
        expected = original.body.content
        for before, after in spelled.items():
            expected = expected.replace(before, after)
        assert message.body.content == expected != original.body.content
        assert message.body.references == original.body.references  # its citations kept
        assert sent[original.msg_id].recipients == [name]  # held by the first guard, seen by nobody else
        assert sent[message.msg_id].recipients == ["fact_checker"]  # then checked by the next guard
        assert message.payload_as(Conclusion).restates and message.payload_as(Conclusion).verbatim_fact is None

    # the fact-checker passed the restatements on; those are what the Critic accepted
    passed = [e.message for e in sent.values() if e.message.header.sender == "fact_checker"
              and e.message.body.content in {m.body.content for m in restated}]
    assert passed and all(set(sent[m.msg_id].recipients) == {"critic", "writer"} for m in passed)
    reviews = [e.message.payload_as(Critique) for e in log if isinstance(e, BusMessage)
               and e.message.header.msg_type is MsgType.CRITIQUE and e.message.payload_as(Critique).kind == "review"]
    assert {m.msg_id for m in passed} <= {mid for r in reviews for mid in r.accepted}
    # and the Critic confirmed the source's fact against the restated text
    facts = result.state["facts"]
    assert any("2,600 MW" in f.text and "critic" in f.confirmed_by for f in facts)

    # the originals reached no prompt of the Critic or the Writer; the restatement did
    for call in (e for e in log if isinstance(e, LlmCall) and e.agent in ("critic", "writer")):
        prompt = json.dumps([m.model_dump(mode="json") for m in call.messages], ensure_ascii=False)
        assert not any(f'id=\\"{m.header.supersedes}\\"' in prompt for m in restated)
    writer_prompts = [json.dumps([m.model_dump(mode="json") for m in e.messages]) for e in log
                      if isinstance(e, LlmCall) and e.agent == "writer"]
    assert any("2.6 GW" in p for p in writer_prompts)

    # the report says the restated figure and passed every check
    assert result.report and "2.6 GW" in result.report
    accepted = [e for e in log if isinstance(e, ReportAccepted)]
    assert accepted and all(mark == "✓" for mark in accepted[-1].criteria.values())


def test_no_file_but_the_role_file_names_the_role():
    """Adding the role changed no other file: its name is written in its file alone."""
    name = load_role_file(ROLE_FILE).name
    try:
        found = subprocess.run(["git", "grep", "-l", "--untracked", "-F", name], cwd=ROOT, capture_output=True,
                               text=True, check=False)
    except FileNotFoundError:
        pytest.skip("git is not installed")
    if found.returncode not in (0, 1):
        pytest.skip(f"not a git checkout: {found.stderr.strip()}")
    assert found.stdout.split() == [ROLE_FILE.relative_to(ROOT).as_posix()]
