"""Token counts in the served model's own tokens, from llama.cpp's `/tokenize`.

A budget counted with cl100k is not the model's: for one Searcher call briefroom counted
1,218 prompt tokens where the server counted 1,856 (Qwen's tokenizer, the chat template
and the tool definitions). A prompt built to 6,000 "tokens" then overflows a small
model's window. This counter asks the server that will read the prompt, and adds what
the chat template and the tool definitions cost (`framing`), measured once through
`/apply-template`.

Counts are kept by text, and a recording keeps them too (`token_counts.json` beside the
cassette), so a replay without the server builds the same prompts the recording did.
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.request
from pathlib import Path
from typing import Any

from briefroom.errors import EngineeringFailure
from briefroom.protocol.budget import TokenCounter

COUNTS_FILE = "token_counts.json"
_PROBE_A, _PROBE_B, _PROBE_C = "alpha", "bravo", "charlie"


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


class ServedTokenCounter(TokenCounter):
    """Counts with the llama.cpp server at `root`; `head` stays on the local encoding
    (it only bounds a tool result's length; its cost is then counted here)."""

    def __init__(self, root: str, model: str, timeout: float = 60.0):
        super().__init__()
        self.root = root.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def encoding_name(self) -> str:
        return f"{self.model} (llama.cpp /tokenize)"

    def _post(self, route: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(self.root + route, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as resp:  # noqa: S310 (loopback server)
                return json.loads(resp.read())
        except (OSError, ValueError) as exc:
            raise EngineeringFailure(f"the model server could not count tokens ({route}): {exc}") from exc

    def _tokens(self, text: str, special: bool) -> int:
        tokens = self._post("/tokenize", {"content": text, "add_special": special, "parse_special": special})
        return len(tokens.get("tokens", []))

    def count(self, text: str) -> int:
        key = _key(text)
        with self._lock:
            known = self.counts.get(key)
        if known is None:
            known = self._tokens(text, special=False)
            with self._lock:
                self.counts[key] = known
        return known

    def _templated(self, messages: list[dict[str, str]], tools: list[dict] | None) -> int:
        body: dict[str, Any] = {"messages": messages}
        if tools:
            body["tools"] = tools
        prompt = self._post("/apply-template", body).get("prompt", "")
        return self._tokens(prompt, special=True)

    def framing(self, tools: list[dict] | None, messages: int) -> int:
        key = f"framing:{_key(json.dumps(tools or [], sort_keys=True))}:{messages}"
        with self._lock:
            known = self.counts.get(key)
        if known is not None:
            return known
        two = [{"role": "system", "content": _PROBE_A}, {"role": "user", "content": _PROBE_B}]
        three = [*two, {"role": "assistant", "content": _PROBE_C}]
        words = self.count(_PROBE_A) + self.count(_PROBE_B)
        base = self._templated(two, tools) - words
        per_message = self._templated(three, None) - self._templated(two, None) - self.count(_PROBE_C)
        # the generation prompt the server appends to every chat ("<|im_start|>assistant\n")
        # is part of the two-message probe; each further message adds its own wrapping.
        known = max(0, base + per_message * max(0, messages - 2))
        with self._lock:
            self.counts[key] = known
        return known

    def save(self, folder: Path) -> None:
        with self._lock:
            data = dict(sorted(self.counts.items()))
        (folder / COUNTS_FILE).write_text(json.dumps({"model": self.model, "counts": data}, indent=0) + "\n")


class RecordedTokenCounter(TokenCounter):
    """A recording's counts, for its replay: the prompts are built as they were recorded."""

    def __init__(self, path: Path):
        super().__init__()
        data = json.loads(path.read_text())
        self.model = str(data.get("model", ""))
        self.counts: dict[str, int] = {str(k): int(v) for k, v in data.get("counts", {}).items()}

    @property
    def encoding_name(self) -> str:
        return f"{self.model} (recorded counts)"

    def count(self, text: str) -> int:
        known = self.counts.get(_key(text))
        return known if known is not None else super().count(text)

    def framing(self, tools: list[dict] | None, messages: int) -> int:
        return self.counts.get(f"framing:{_key(json.dumps(tools or [], sort_keys=True))}:{messages}", 0)
