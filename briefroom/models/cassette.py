"""Cassettes: recorded model responses, so a scenario replays with no model at all.

Every model call is keyed by role and its sequence number within that role. On replay
the prompt about to be sent must equal the recorded one; the first one that differs
stops the replay with a unified diff of each prompt section that differs, because
everything after it is meaningless.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from briefroom.errors import BriefroomError, ConfigError

CASSETTE_FILE = "cassette.jsonl"


class ReplayDivergence(BriefroomError):
    def __init__(self, message: str, diff: str = ""):
        super().__init__(message)
        self.diff = diff


def serialize_messages(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        item: dict[str, Any] = {"type": m.type, "content": m.content}
        if isinstance(m, AIMessage) and m.tool_calls:
            item["tool_calls"] = [{"name": tc["name"], "args": tc["args"], "id": tc["id"]} for tc in m.tool_calls]
        if isinstance(m, ToolMessage):
            item["tool_call_id"] = m.tool_call_id
        out.append(item)
    return out


def prompt_hash(messages: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def prompt_sections(messages: list[dict[str, Any]]) -> dict[str, list[str]]:
    """A prompt cut into its sections: `<message n> (<type>) / <## title>` -> lines.
    Tool calls and results are sections of their own message."""
    out: dict[str, list[str]] = {}
    for n, m in enumerate(messages, start=1):
        where = f"message {n} ({m['type']})"
        title = "(start)"
        for line in str(m["content"]).splitlines():
            if line.startswith("## "):
                title = line[3:].strip()
            out.setdefault(f"{where} / {title}", []).append(line)
        for tc in m.get("tool_calls", []):
            out.setdefault(f"{where} / tool calls", []).append(
                f"[tool_call {tc['name']} {json.dumps(tc['args'], sort_keys=True)}]")
        if not str(m["content"]) and not m.get("tool_calls"):
            out.setdefault(f"{where} / (start)", [])
    return out


def section_diff(recorded: list[dict[str, Any]], replayed: list[dict[str, Any]], label: str) -> str:
    """A unified diff per prompt section that differs (sections only one side has count
    as empty on the other), so a divergence points at the part of the prompt that moved."""
    old, new = prompt_sections(recorded), prompt_sections(replayed)
    names = list(dict.fromkeys([*old, *new]))
    differ = [name for name in names if old.get(name) != new.get(name)]
    parts = ["\n".join(difflib.unified_diff(old.get(name, []), new.get(name, []), fromfile=f"recorded {label}: {name}",
                                            tofile=f"replayed {label}: {name}", lineterm="", n=2)) for name in differ]
    head = f"{len(differ)} of {len(names)} prompt section(s) differ ({len(names) - len(differ)} identical):"
    return "\n".join([head, *parts])


class Cassette:
    """Entries in call order; appended while recording, consumed per role on replay."""

    def __init__(self, entries: list[dict[str, Any]] | None = None):
        self.entries = entries or []
        self._cursor: dict[str, int] = {}

    @classmethod
    def load(cls, directory: Path) -> "Cassette":
        path = directory / CASSETTE_FILE
        if not path.is_file():
            raise ConfigError(f"no {CASSETTE_FILE} in {directory}")
        entries = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{n}: not valid JSON ({exc.msg})") from exc
        return cls(entries)

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / CASSETTE_FILE, "w", encoding="utf-8") as fh:
            for entry in self.entries:
                fh.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def record(self, role: str, messages: list[dict[str, Any]], response: AIMessage) -> None:
        seq = sum(1 for e in self.entries if e["role"] == role)
        reply = serialize_messages([response])[0]
        if (response.response_metadata or {}).get("finish_reason") == "length":
            reply["finish_reason"] = "length"  # a reply cut at the output cap is handled apart (give_up_when_cut)
        self.entries.append({"role": role, "seq": seq, "prompt_sha": prompt_hash(messages), "messages": messages,
                             "response": reply})

    def next_for(self, role: str, messages: list[dict[str, Any]]) -> AIMessage:
        seq = self._cursor.get(role, 0)
        recorded = [e for e in self.entries if e["role"] == role]
        if seq >= len(recorded):
            raise ReplayDivergence(f"replay diverged: {role} made call #{seq + 1}, the cassette has only "
                                   f"{len(recorded)} for it")
        entry = recorded[seq]
        if entry["prompt_sha"] != prompt_hash(messages):
            diff = section_diff(entry["messages"], messages, f"{role} call #{seq + 1}")
            raise ReplayDivergence(f"replay diverged at {role} call #{seq + 1}: the prompt differs from the recording",
                                   diff)
        self._cursor[role] = seq + 1
        return recorded_reply(entry["response"])

    def seek(self, calls: dict[str, int]) -> None:
        """Continue a replay where a checkpoint left it: `calls` replies per role used."""
        self._cursor = dict(calls)

    def unused(self) -> int:
        return len(self.entries) - sum(self._cursor.values())


def recorded_reply(r: dict[str, Any]) -> AIMessage:
    """A cassette entry's response as the reply it was."""
    return AIMessage(content=r.get("content", ""),
                     tool_calls=[{"name": t["name"], "args": t["args"], "id": t["id"], "type": "tool_call"}
                                 for t in r.get("tool_calls", [])],
                     response_metadata={"finish_reason": r["finish_reason"]} if "finish_reason" in r else {})


class ReplyBank:
    """An earlier recording's replies, by role and prompt, for re-recording after a
    change: a call whose prompt the recording holds word for word takes the reply the
    same model gave it then, and only the calls the change moved reach the model.

    Looked up by prompt, not by place: a changed judgement in the middle of a run
    leaves the calls after it that it did not move (the next part's draft) still
    reusable. A prompt recorded twice gives its replies in order. A recording by another
    model would pass off its replies as this model's, so `labels` (role -> the model's
    label when it recorded) must match the run's (`check_labels`)."""

    def __init__(self, entries: list[dict[str, Any]], labels: dict[str, str]):
        self.labels = labels
        self._replies: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for entry in entries:
            self._replies.setdefault((entry["role"], entry["prompt_sha"]), []).append(entry["response"])
        self.reused = 0

    def check_labels(self, live: dict[str, str]) -> None:
        for role, label in live.items():
            if role in self.labels and self.labels[role] != label:
                raise ConfigError(f"--reuse: the recording's {role} was {self.labels[role]!r}, this run's is "
                                  f"{label!r}; a recording reuses only its own model's replies")

    def take(self, role: str, messages: list[dict[str, Any]]) -> AIMessage | None:
        """The recorded reply to exactly this prompt of this role, once; None: ask the model."""
        replies = self._replies.get((role, prompt_hash(messages)))
        if not replies:
            return None
        self.reused += 1
        return recorded_reply(replies.pop(0))


class CassetteChatModel(BaseChatModel):
    """Serves one role's recorded responses; checks each prompt against the recording."""

    cassette: Any
    role: str

    @property
    def _llm_type(self) -> str:
        return "briefroom-cassette"

    def bind_tools(self, tools: list[Any], **kwargs: Any):  # type: ignore[override]
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        message = self.cassette.next_for(self.role, serialize_messages(messages))
        return ChatResult(generations=[ChatGeneration(message=message)])
