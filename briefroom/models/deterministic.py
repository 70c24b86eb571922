"""`--model test`: a deterministic provider, like pydantic-ai's TestModel.

Schema-valid output built from the prompt's own material; tools called with valid
arguments; no network, no randomness, no intelligence. Schemas may carry an
`x-fill` hint (evidence.text, evidence.refs, task, title, heading, subquestion,
source_id) saying which material a field wants; everything else gets a plain valid
value. Anything it writes is labelled as coming from the test provider.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from briefroom.models.material import Material, Record

TEST_PROVIDER_LABEL = "briefroom TEST provider (deterministic, no language model)"


class DeterministicChatModel(BaseChatModel):
    """Deterministic chat model; supports `bind_tools` and `response_format` schemas."""

    __test__ = False  # not a pytest class

    @property
    def _llm_type(self) -> str:
        return "briefroom-test"

    def bind_tools(self, tools: list[Any], *, tool_choice: Any = None, **kwargs: Any):  # type: ignore[override]
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        prompt = "\n".join(m.content for m in messages if isinstance(m.content, str))
        material = Material.from_prompt(prompt)
        if kwargs.get("tools"):
            message = _tool_turn(messages, kwargs["tools"], material)
        else:
            schema = (kwargs.get("response_format") or {}).get("schema") or _json_schema_from(kwargs)
            if schema:
                message = AIMessage(content=json.dumps(SchemaFiller(schema, material).fill(), ensure_ascii=False))
            else:
                first = material.ranked()[0].text if material.records else material.task[:200]
                message = AIMessage(content=first)
        return ChatResult(generations=[ChatGeneration(message=message)])


def _json_schema_from(kwargs: dict[str, Any]) -> dict | None:
    fmt = kwargs.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("schema")


def _tool_turn(messages: list[BaseMessage], tools: list[dict], material: Material) -> AIMessage:
    """First turn: call every tool whose arguments can be filled; then finish."""
    called = {tc["name"] for m in messages if isinstance(m, AIMessage) for tc in m.tool_calls}
    have_results = any(isinstance(m, ToolMessage) for m in messages)
    calls = []
    for tool in tools:
        fn = tool["function"]
        if fn["name"] in called:
            continue
        filler = SchemaFiller(fn.get("parameters", {}), material)
        if filler.needs_source_id() and not material.source_ids():
            continue  # nothing valid to pass yet; maybe next turn
        if filler.needs("artifact") and not material.artifact_pointers():
            continue
        args = filler.fill()
        call_id = "call_" + hashlib.sha256(f"{fn['name']}|{json.dumps(args, sort_keys=True)}".encode()).hexdigest()[:12]
        calls.append({"name": fn["name"], "args": args, "id": call_id, "type": "tool_call"})
        if not have_results:
            break  # one call per turn keeps the transcript easy to follow
    if calls:
        return AIMessage(content="", tool_calls=calls)
    return AIMessage(content="Finished searching.")


class SchemaFiller:
    def __init__(self, schema: dict, material: Material):
        self.root = schema
        self.material = material
        self._ranked = material.ranked()
        self._record_cursor = 0
        self._counters: dict[str, int] = {}

    def needs_source_id(self) -> bool:
        return self.needs("source_id")

    def needs(self, hint: str) -> bool:
        return f'"x-fill": "{hint}"' in json.dumps(self.root)

    def fill(self) -> Any:
        return self._value(self.root, record=None)

    def _resolve(self, schema: dict) -> dict:
        while "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            schema = {**self.root.get("$defs", {}).get(name, {}), **{k: v for k, v in schema.items() if k != "$ref"}}
        if "anyOf" in schema:
            options = [s for s in schema["anyOf"] if s.get("type") != "null"] or schema["anyOf"]
            schema = {**self._resolve(options[0]), **{k: v for k, v in schema.items() if k != "anyOf"}}
        return schema

    def _next(self, key: str) -> int:
        self._counters[key] = self._counters.get(key, 0) + 1
        return self._counters[key] - 1

    def _value(self, schema: dict, record: Record | None) -> Any:
        schema = self._resolve(schema)
        kind = schema.get("type")
        hint = schema.get("x-fill", "")
        if kind == "object" or "properties" in schema:
            if _fills(schema, "part"):  # a section of the Writer's report: prose for one part of the question
                return self._section(schema)
            wants_record = "evidence." in json.dumps(schema.get("properties", {}))
            if wants_record and self._ranked:
                record = self._ranked[self._record_cursor % len(self._ranked)]
                self._record_cursor += 1
            required = set(schema.get("required", []))
            # Optional fields keep their defaults: a valid call says what it must, no more.
            return {name: self._value(sub, record) for name, sub in schema.get("properties", {}).items()
                    if name in required or "x-fill" in sub}
        if kind == "array":
            return self._array(schema, record)
        if "enum" in schema:  # "distinct" walks through the values (one verdict per id); else the first
            if hint == "distinct":
                return schema["enum"][self._next(json.dumps(schema["enum"])) % len(schema["enum"])]
            return schema["enum"][0]
        if kind == "string":
            return self._string(schema, hint, record)
        if kind == "integer":
            return int(schema.get("default", schema.get("minimum", 1)))
        if kind == "number":
            return float(schema.get("default", schema.get("minimum", 1.0)))
        if kind == "boolean":
            return bool(schema.get("default", True))
        return None

    def _array(self, schema: dict, record: Record | None) -> list[Any]:
        items = self._resolve(schema.get("items", {}))
        low, high = schema.get("minItems", 1), schema.get("maxItems", 3)
        if schema.get("x-fill") == "evidence.refs" or items.get("x-fill") == "evidence.refs":
            allowed = items.get("enum")
            refs = [r for r in (record.refs if record else ()) if allowed is None or r in allowed]
            if not refs:
                refs = list(allowed or self.material.source_ids())[:1]
            return refs[:high] if len(refs) >= low else (refs * low)[:low]
        if "enum" in items:
            return list(items["enum"])[:max(low, min(high, len(items["enum"])))]
        if _fills(items, "part"):  # the Writer's sections: one per part of the question its task lists
            return [self._value(items, None) for _ in range(max(low, min(high, len(self._parts()) or 1)))]
        if schema.get("x-fill") == "summary":  # an executive summary: the best sentence for each part
            return [self._claim(records[0]) for part in self._parts()[:high]
                    if (records := self._for_part(part, 1))]
        encoded = json.dumps(items)
        remaining = max(len(self._ranked) - self._record_cursor, 0)
        if '"evidence.' in json.dumps(items.get("properties", {})) and "items" not in json.dumps(
                items.get("properties", {})):
            n = remaining  # a list of evidence objects: one per unused record
        elif "evidence." in encoded or "$ref" in encoded:
            n = -(-remaining // 3)  # lists of groups of evidence: about three records each
        else:
            n = 3
        return [self._value(items, record) for _ in range(max(low, min(high, n)))]

    def _parts(self) -> list[str]:
        """The parts of the question the Writer's task lists ("1. how many ...")."""
        return re.findall(r"^\d+\. (.+)$", self.material.task, re.M)

    def _for_part(self, part: str, n: int) -> list[Record]:
        """The records sharing most words with one part (numbers preferred), in ranked order."""
        words = set(re.findall(r"[a-z]{4,}", part.lower())) | {part[i:i + 2] for i in range(len(part) - 1)
                                                                 if "\u4e00" <= part[i] <= "\u9fff"}
        def overlap(record: Record) -> int:
            text = record.text.lower()
            return sum(1 for w in words if w in text)
        scored = sorted(enumerate(self._ranked), key=lambda t: (-overlap(t[1]), t[0]))
        return [r for _, r in scored if overlap(r) > 0][:n]

    def _claim(self, record: Record) -> dict[str, Any]:
        return {"text": record.text[:400], "source_ids": list(record.refs[:1])}

    def _section(self, schema: dict) -> dict[str, Any]:
        """Prose for the next part: its two best sentences, verbatim from the material, a
        heading of the part's own words, and the part's number."""
        parts = self._parts() or [self.material.goal or self.material.task]
        n = self._next("part") % len(parts)
        records = self._for_part(parts[n], 2) or self._ranked[:1]
        claims = [self._claim(r) for r in records] or [{"text": "No sentence found.", "source_ids": []}]
        return {"heading": parts[n][:120], "claims": claims, "part": n + 1}

    def _string(self, schema: dict, hint: str, record: Record | None) -> str:
        m = self.material
        if hint == "evidence.text" and record is not None:
            text = record.text
        elif hint == "subject" and record is not None:
            words = [w for w in re.findall(r"[A-Za-z]{4,}", record.text)][:4]
            text = " ".join(words) or "finding"
        elif hint == "title":
            text = f"Research brief: {m.goal or m.task}"
        elif hint == "heading":
            text = f"Findings, part {self._next('heading') + 1}"
        elif hint == "subquestion":
            parts = _subquestions(m.goal or m.task)
            text = parts[self._next("subquestion") % len(parts)]
        elif hint == "artifact":
            pointers = m.artifact_pointers()
            text = pointers[0] if pointers else "art:0000000000000000"
        elif hint == "source_id":
            ids = m.source_ids()
            text = ids[0] if ids else "S00000000"
        else:  # "task" and plain strings
            text = _first_line(m.task) or m.goal or "n/a"
        text = text[: schema.get("maxLength", 2000)]
        if len(text) < schema.get("minLength", 0):
            text = text.ljust(schema["minLength"], ".")
        return text


def _fills(schema: dict, hint: str) -> bool:
    """The object schema has a property with this `x-fill` hint."""
    return any(isinstance(sub, dict) and sub.get("x-fill") == hint for sub in schema.get("properties", {}).values())


def _subquestions(goal: str) -> list[str]:
    parts = [p.strip(" ?.") for p in re.split(r"\?|\band\b|;", goal) if len(p.strip(" ?.")) > 8]
    return [p[0].upper() + p[1:] + "?" for p in parts] or [goal]


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""
