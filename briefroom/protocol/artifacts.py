"""Content-addressed artifact store in the run directory, for offloaded tool results.

A large tool result is written once under its hash; the prompt gets a pointer, a
structured summary and the size, and the model can drill down with `read_artifact`
(selected fields, or a character range) instead of carrying the whole payload in
every later prompt. Writing the same content twice writes one file.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from briefroom.errors import EngineeringFailure
from briefroom.files import write_atomic

POINTER = re.compile(r"^art:[0-9a-f]{16}$")


class ArtifactStore:
    def __init__(self, root: Path):
        self.root = root

    def put(self, text: str) -> str:
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        path = self.root / f"{digest}.json"
        if not path.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)  # a crash never leaves half an artifact under its hash
        return f"art:{digest}"

    def get(self, pointer: str) -> str:
        if not POINTER.match(pointer):
            raise EngineeringFailure(f"not an artifact pointer: {pointer!r}", tool="read_artifact")
        path = self.root / f"{pointer[4:]}.json"
        if not path.is_file():
            raise EngineeringFailure(f"no artifact {pointer} in this run", tool="read_artifact")
        return path.read_text(encoding="utf-8")

    def read(self, pointer: str, fields: list[str] | None = None, start: int = 0, end: int | None = None) -> str:
        """Selected top-level or per-item fields of a JSON artifact, or a character range."""
        text = self.get(pointer)
        if not fields:
            return text[start:end]
        data = json.loads(text)
        return json.dumps(_select(data, set(fields)), ensure_ascii=False)[start:end]


def _select(data: Any, fields: set[str]) -> Any:
    if isinstance(data, dict):
        picked = {k: v for k, v in data.items() if k in fields}
        nested = {k: _select(v, fields) for k, v in data.items() if k not in fields and isinstance(v, (list, dict))}
        return {**nested, **picked}
    if isinstance(data, list):
        return [_select(item, fields) for item in data]
    return data


def summarize(payload: Any, top: int = 3) -> dict[str, Any]:
    """Structured summary of a JSON payload: keys, list sizes, the first items shortened."""
    if isinstance(payload, dict):
        out: dict[str, Any] = {"keys": sorted(payload)}
        for key, value in payload.items():
            if isinstance(value, list):
                out[f"{key}_count"] = len(value)
                out[f"{key}_top"] = [_short(v) for v in value[:top]]
            elif isinstance(value, str) and len(value) > 200:
                out[key] = value[:200] + "…"
            elif not isinstance(value, (dict, list)):
                out[key] = value
        return out
    if isinstance(payload, list):
        return {"count": len(payload), "top": [_short(v) for v in payload[:top]]}
    return {"value": _short(payload)}


def _short(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (v[:160] + "…" if isinstance(v, str) and len(v) > 160 else v) for k, v in value.items()
                if not isinstance(v, (dict, list))}
    if isinstance(value, str) and len(value) > 160:
        return value[:160] + "…"
    return value
