"""Structured output helpers: the schema a model is held to, and reading its reply."""

from __future__ import annotations

import json
import re
from typing import Any

# How many times a model is shown what was wrong with its reply before the call fails.
MAX_CONTRACT_RETRIES = 2

def constrain_schema(schema: dict, enums: dict[str, list[str]], max_items: dict[str, int] | None = None) -> dict:
    """Restrict named properties (anywhere in the schema) to the given values, and named
    lists to at most so many items.

    Used so a model can only cite source ids that exist: llama.cpp turns the schema
    into a grammar, and hosted models see the allowed values. A list without a bound
    lets a small model at temperature 0 repeat itself until max_tokens (measured: a
    review of 5 conclusions ran past 120 s that way).
    """
    schema = json.loads(json.dumps(schema))
    max_items = max_items or {}

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            for name, prop in (node.get("properties") or {}).items():
                if name in enums:
                    target = prop.get("items", prop) if prop.get("type") == "array" else prop
                    target["enum"] = list(enums[name])
                if name in max_items and prop.get("type") == "array":
                    prop["maxItems"] = min(prop.get("maxItems", max_items[name]), max_items[name])
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return schema


def parse_json_object(text: str) -> Any:
    """The first JSON object in a reply, tolerating code fences and chatter around it."""
    cleaned = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the reply contains no JSON object")
    # strict=False: small models put raw newlines inside strings; the meaning is unchanged.
    return json.loads(cleaned[start:end + 1], strict=False)
