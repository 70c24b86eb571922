"""Issue 25: message types are registered by the roles that publish them.

Two role files, loaded from a folder: one registers a payload of its own (`flag`) and
publishes it about every conclusion that holds a figure, the other subscribes to it. The
reader's file is loaded first, so a type may be declared before the file registering it
is read. The bus routes the new type, the run log records it with all of its fields and
reads it back as the registered class, a checkpoint keeps it, speaking order may name
it (`after=("flag",)`: after its publishers), and a type nobody
registered fails when the team is assembled, naming the role.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from briefroom.config import Settings
from briefroom.events import BusMessage, read_events
from briefroom.graph.checkpoint import serializer
from briefroom.protocol.bus import RoutingError
from briefroom.protocol.messages import AgentMessage, MsgType, make_message
from briefroom.protocol.payloads import PayloadModel, payload_class, register_payload
from briefroom.run import ResearchRequest, run_research
from tests.conftest import write_corpus

PUBLISHER = '''
from __future__ import annotations

import re
from typing import Literal

from briefroom.agents.base import Role, Turn
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import MsgType
from briefroom.protocol.payloads import PayloadModel, register_payload


@register_payload
class Flag(PayloadModel):
    type: Literal["flag"] = "flag"
    about: str
    figures: tuple[str, ...]


def step(turn: Turn) -> None:
    for message in turn.unread_of(MsgType.CONCLUSION):
        figures = tuple(re.findall(r"\\d[\\d,.]*", message.body.content))
        if figures:
            turn.publish(MsgType.of("flag"), f"{len(figures)} figure(s) in {message.msg_id}",
                         payload=Flag(about=message.msg_id, figures=figures))


ROLE = Role(name="flagger", subscriptions=(Subscription(msg_type=MsgType.CONCLUSION),),
            publications=(MsgType.of("flag"),), step=step, before=("draft",))
'''

READER = '''
from __future__ import annotations

from briefroom.agents.base import Role, Turn
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import MsgType
from briefroom.protocol.payloads import payload_class

READ: list = []


def step(turn: Turn) -> None:
    for message in turn.unread_of(MsgType.of("flag")):
        READ.append(message.payload_as(payload_class("flag")))


ROLE = Role(name="flag_reader", subscriptions=(Subscription(msg_type=MsgType.of("flag")),), publications=(),
            step=step, after=("flag",), before=("draft",))
'''

QUESTION = "How much offshore wind capacity did Norvalia add in 2025?"


@pytest.fixture
def wind_corpus(tmp_path) -> Path:
    return write_corpus(tmp_path / "wind", {
        "norvalia.md": "# Norvalia offshore wind, 2025\n\nNorvalia added 2,600 MW of offshore wind capacity in 2025, "
                       "the grid operator reported.\n",
        "onshore.md": "# Onshore wind, 2025\n\nOnshore wind farms in Norvalia added 350 MW in 2025.\n"})


def test_a_role_registers_its_own_message_type_and_another_reads_it(wind_corpus, data_dir, tmp_path):
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "a_reader.py").write_text(READER, encoding="utf-8")  # loaded before the type is registered
    (roles / "b_flagger.py").write_text(PUBLISHER, encoding="utf-8")
    out = tmp_path / "run"
    run_research(ResearchRequest(question=QUESTION, corpus=[wind_corpus], out=out, roles_dirs=[roles]),
                 Settings(model="test", rounds=1, data_dir=data_dir))

    flag = payload_class("flag")
    assert flag is not None and flag.__module__ == "briefroom_role_b_flagger"
    log = [e for e in read_events(out / "run.jsonl") if isinstance(e, BusMessage)]
    conclusions = {e.message.msg_id: e.message.body.content for e in log
                   if e.message.header.msg_type is MsgType.CONCLUSION}
    flags = [e for e in log if e.message.header.msg_type is MsgType.of("flag")]
    assert flags, "the flagger should have flagged the conclusions holding 2,600 MW and 350 MW"
    for event in flags:
        assert event.recipients == ["flag_reader"]
        payload = event.message.payload_as(flag)  # read back from the log as the registered class
        assert payload.figures and all(f in conclusions[payload.about] for f in payload.figures)
    assert any("2,600" in p.figures for p in (e.message.payload_as(flag) for e in flags))
    read = sys.modules["briefroom_role_a_reader"].READ
    assert {p.about for p in read} == {e.message.payload_as(flag).about for e in flags}

    # a checkpoint keeps the role's payload with its fields
    inner = serializer()
    back = inner.loads_typed(inner.dumps_typed({"m": flags[0].message}))["m"]
    assert isinstance(back, AgentMessage) and back == flags[0].message
    assert type(back.body.payload) is flag


def test_a_type_no_file_registers_fails_when_the_team_is_assembled(wind_corpus, data_dir, tmp_path):
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "reader.py").write_text(READER.replace('"flag"', '"nosuchtype"'), encoding="utf-8")
    with pytest.raises(RoutingError, match="role 'flag_reader' declares message type.* nosuchtype that no payload"):
        run_research(ResearchRequest(question=QUESTION, corpus=[wind_corpus], out=tmp_path / "run",
                                     roles_dirs=[roles]), Settings(model="test", rounds=1, data_dir=data_dir))


def test_one_type_has_one_payload_class():
    with pytest.raises(ValueError, match="message type 'conclusion' is already carried by"):
        @register_payload
        class RivalConclusion(PayloadModel):
            type: str = "conclusion"

    with pytest.raises(ValueError, match="no payload class is registered for message type 'unheard'"):
        make_message(sender="x", msg_type=MsgType.of("unheard"), content="x", round=1, seq=1,
                     payload=None)
    with pytest.raises(ValueError, match="lower-case identifier"):
        MsgType.of("Not A Type")
    with pytest.raises(ValueError, match="lower-case identifier"):
        @register_payload
        class Shouting(PayloadModel):
            type: str = "Shout"


def test_a_logged_message_of_an_unknown_type_is_refused():
    message = make_message(sender="planner", msg_type=MsgType.CONCLUSION, content="x", round=1, seq=1)
    data = message.model_dump(mode="json")
    data["header"]["msg_type"] = data["body"]["payload"]["type"] = "forged"
    with pytest.raises(ValidationError, match="unknown payload type 'forged'"):
        AgentMessage.model_validate(data)


def test_a_payload_class_declares_what_becomes_of_its_messages():
    """Archiving is declared by the payload, not listed by type in the protocol: a role's
    own type kept verbatim is archived, the Writer's drafts are discarded, the rest summarised."""
    from typing import ClassVar, Literal

    from briefroom.agents.report_message import REPORT
    from briefroom.protocol.messages import ArchivePolicy

    @register_payload
    class Ledger(PayloadModel):
        type: Literal["ledger_entry"] = "ledger_entry"
        archive_policy: ClassVar[Literal["summarize", "archive", "discard"]] = "archive"

    def policy(msg_type: MsgType, payload: PayloadModel | None = None) -> ArchivePolicy:
        return make_message(sender="x", msg_type=msg_type, content="x", round=1, seq=1,
                            payload=payload).metadata.archive_policy

    from bench.context import sample_payload

    assert policy(MsgType.of("ledger_entry"), Ledger()) is ArchivePolicy.ARCHIVE
    assert policy(REPORT, sample_payload(REPORT, "draft")) is ArchivePolicy.DISCARD
    assert policy(MsgType.INSTRUCTION) is ArchivePolicy.ARCHIVE
    assert policy(MsgType.CONCLUSION) is ArchivePolicy.SUMMARIZE


def test_a_process_that_never_imported_the_writer_reads_its_report_messages():
    """inspect, the run page and the workbench read logs without building a team: the
    report payload's class comes from the package's `briefroom.payloads` entry point."""
    import json
    import subprocess

    from bench.context import sample_payload
    from briefroom.agents.report_message import REPORT

    message = make_message(sender="writer", msg_type=REPORT, content="draft", round=1, seq=0,
                           payload=sample_payload(REPORT, "a report draft"))
    reader = ("import json, sys\n"
              "from briefroom.protocol.messages import AgentMessage\n"
              "before = 'briefroom.agents.report_message' in sys.modules\n"
              "message = AgentMessage.model_validate(json.loads(sys.stdin.read()))\n"
              "print(before, type(message.body.payload).__module__, message.body.payload.markdown[:20])\n")
    done = subprocess.run([sys.executable, "-c", reader], input=json.dumps(message.model_dump(mode="json")),
                          capture_output=True, text=True, check=True)
    before, module, markdown = done.stdout.split(" ", 2)
    assert (before, module) == ("False", "briefroom.agents.report_message")
    assert markdown.strip() == message.body.payload.markdown[:20].strip()


def test_a_plugin_names_its_payload_through_an_entry_point(tmp_path, monkeypatch):
    from importlib.metadata import EntryPoint

    import briefroom.protocol.payloads as payloads

    (tmp_path / "tally_plugin.py").write_text(
        "from typing import Literal\n"
        "from briefroom.protocol.payloads import PayloadModel, register_payload\n\n"
        "@register_payload\n"
        "class Tally(PayloadModel):\n"
        "    type: Literal['tally'] = 'tally'\n"
        "    count: int\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    points = [EntryPoint(name="tally", value="tally_plugin:Tally", group=payloads.PAYLOAD_ENTRY_POINTS)]
    monkeypatch.setattr(payloads, "entry_points",
                        lambda group, name: [p for p in points if p.group == group and p.name == name])
    data = {"header": {"msg_id": "m1", "sender": "counter", "msg_type": "tally", "round": 1},
            "body": {"content": "3 things", "payload": {"type": "tally", "count": 3}}}
    message = AgentMessage.model_validate(data)
    assert type(message.body.payload).__name__ == "Tally" and message.body.payload.count == 3
    with pytest.raises(ValidationError, match="unknown payload type 'nobody_ships_this'"):
        AgentMessage.model_validate({**data, "body": {"content": "x", "payload": {"type": "nobody_ships_this"}}})
