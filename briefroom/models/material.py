"""Material a deterministic model can find in a prompt: data blocks, goal, task.

The test provider has no intelligence; it answers with the prompt's own material
(sentences of retrieved sources, other roles' conclusions), ranked by word overlap
with the task so that its output is at least on topic, and always the same for the
same prompt.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from briefroom.protocol.extraction import numbers_in, sentences
from briefroom.protocol.prompt_assembly import DATA_BLOCK

_INLINE_BLOCK = re.compile(r"\n?" + DATA_BLOCK.pattern, re.S)
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_WORD = re.compile(r"[a-z]{3,}")
_STOP = set("the and for with that this from what who how are was were has have its their into than "
            "which while about more most over under find evidence question".split())


@dataclass(frozen=True)
class Record:
    text: str
    refs: tuple[str, ...]
    kind: str
    attrs: tuple[tuple[str, str], ...] = ()


@dataclass
class Material:
    goal: str
    task: str
    records: list[Record] = field(default_factory=list)
    _pointers: list[str] = field(default_factory=list)

    @classmethod
    def from_prompt(cls, prompt: str) -> "Material":
        goal = _after(prompt, "Goal:") or ""
        task = prompt.rsplit("## Current task", 1)[-1].strip() if "## Current task" in prompt else prompt[-400:]
        # a question or critique quoted in the task is a data block: read it as one line of the task
        task = _INLINE_BLOCK.sub(lambda m: " " + " ".join(m.group(4).split()), task)
        records: list[Record] = []
        for _, kind, raw_attrs, body in DATA_BLOCK.findall(prompt):
            attrs = dict(_ATTR.findall(raw_attrs))
            if kind == "message":
                refs = tuple(r for r in attrs.get("refs", "").split(",") if r)
                if attrs.get("type") == "conclusion" and refs:
                    records.append(Record(body.strip(), refs, "conclusion", tuple(attrs.items())))
            elif kind == "summary":
                for line in body.splitlines():
                    m = re.match(r"- (.+?)(?: \[([^\]]+)\])?$", line.strip())
                    if m and m.group(2):
                        records.append(Record(m.group(1), tuple(r.strip() for r in m.group(2).split(",")), "summary"))
            elif kind == "tool_result":
                records.extend(_records_from_tool_json(body))
            elif kind in ("passage", "source", "fact"):
                ref = attrs.get("source") or attrs.get("id", "")
                records.extend(Record(s, (ref,), kind) for s in sentences(body))
        first: dict[str, Record] = {}
        for record in records:
            first.setdefault(record.text, record)
        unique = list(first.values())
        return cls(goal=goal, task=task, records=unique, _pointers=re.findall(r"art:[0-9a-f]{16}", prompt))

    def ranked(self) -> list[Record]:
        """Conclusions first, then by overlap with goal+task, numbers preferred; stable."""
        words = _words(self.goal + " " + self.task)

        def score(item: tuple[int, Record]) -> tuple[float, int]:
            pos, rec = item
            overlap = len(words & _words(rec.text))
            bonus = (2.0 if rec.kind == "conclusion" else 0.0) + (1.0 if numbers_in(rec.text) else 0.0)
            return (-(overlap + bonus), pos)

        return [rec for _, rec in sorted(enumerate(self.records), key=score)]

    def artifact_pointers(self) -> list[str]:
        return list(dict.fromkeys(re.findall(r"art:[0-9a-f]{16}", self.task + " " + " ".join(
            r.text for r in self.records)) + self._pointers))

    def source_ids(self) -> list[str]:
        return list(dict.fromkeys(ref for rec in self.records for ref in rec.refs))


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _after(prompt: str, marker: str) -> str | None:
    for line in prompt.splitlines():
        if line.strip().startswith(marker):
            return line.split(marker, 1)[1].strip()
    return None


def _records_from_tool_json(body: str) -> list[Record]:
    payload_text = body.split("\n... [trimmed", 1)[0]
    try:
        payload = json.loads(payload_text)
    except json.JSONDecodeError:
        return []
    hits = payload.get("hits") if isinstance(payload, dict) else None
    if hits is None and isinstance(payload, dict) and isinstance(payload.get("summary"), dict):
        hits = payload["summary"].get("hits_top")  # an offloaded result: its summary lists the top hits
    if isinstance(hits, list):
        return [Record(s, (h["source_id"],), "passage") for h in hits if isinstance(h, dict) and "source_id" in h
                for s in sentences(str(h.get("text", "")))]
    if isinstance(payload, dict) and "source_id" in payload and "text" in payload:
        return [Record(s, (payload["source_id"],), "source") for s in sentences(str(payload["text"]))]
    return []
