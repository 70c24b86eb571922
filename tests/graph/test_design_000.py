"""Design document 000's test primitives, on a real run: the context snapshot (every
model call's exact messages are in the run log) and the routing trace (where each
message went, what each tool result lost to redaction). The secret scan before every
call is `test_secrets_never_leave.py`; the table in docs/architecture.md maps every
item of document 000 to its tests."""

from __future__ import annotations

from typing import Any

from langchain_core.outputs import ChatResult

from briefroom.agents.registry import bus_for, discover
from briefroom.config import Settings
from briefroom.events import BusMessage, LlmCall, ToolResult, read_events
from briefroom.llm import ModelHandle, ModelPool
from briefroom.models.cassette import serialize_messages
from briefroom.models.deterministic import TEST_PROVIDER_LABEL, DeterministicChatModel
from briefroom.run import ResearchRequest, run_research

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"
ROLES = ("planner", "searcher", "critic", "writer", "summarizer")


class Recording(DeterministicChatModel):
    """The deterministic model, keeping every list of messages it was sent."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        object.__setattr__(self, "received", [])

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        self.received.append(serialize_messages(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_000_context_snapshot_every_call_logs_exactly_what_the_model_was_sent(small_corpus, data_dir, tmp_path):
    model = Recording()
    pool = ModelPool({r: ModelHandle(r, "test", "test", model, "json_object_schema", 32_000, label=TEST_PROVIDER_LABEL)
                      for r in ROLES})
    out = tmp_path / "run"
    run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out, models=pool),
                 Settings(rounds=2, data_dir=data_dir, memory=False))
    logged = [[m.model_dump(exclude_none=True) for m in e.messages] for e in read_events(out / "run.jsonl")
              if isinstance(e, LlmCall)]
    assert len(logged) == len(model.received) > 4
    assert logged == model.received  # the snapshot is the prompt, byte for byte


def test_000_routing_trace_names_every_recipient_and_every_redaction(small_corpus, data_dir, tmp_path):
    secret = "AKIA" + "QX7Z" * 4  # a fake AWS-style key, built at run time
    (small_corpus / "ops.md").write_text(f"# Deploy key {secret}\n\nCloud operations notes. The deploy key is "
                                         f"{secret} for 2026.\n", encoding="utf-8")
    out = tmp_path / "run"
    run_research(ResearchRequest(question="What is the deploy key for cloud operations in 2026?",
                                 corpus=[small_corpus], out=out),
                 Settings(model="test", rounds=1, data_dir=data_dir, memory=False))
    events = read_events(out / "run.jsonl")
    bus = bus_for(discover())
    sent = [e for e in events if isinstance(e, BusMessage)]
    assert sent and all(tuple(e.recipients) == bus.recipients(e.message) for e in sent)
    log = (out / "run.jsonl").read_text(encoding="utf-8")
    assert any(isinstance(e, ToolResult) for e in events)
    # taken out when the document was read, heading included, and the trace says what was
    assert "[REDACTED:AWS_ACCESS_KEY_ID]" in log and secret not in log
    stored = [p for p in data_dir.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert stored == []  # nor in the index on disk
