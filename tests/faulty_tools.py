"""A tool test double that misbehaves on purpose (tests only)."""

from __future__ import annotations

import time

from briefroom.corpus.tools import LocalSearchArgs, LocalSearchResult, SearchHit
from briefroom.errors import EngineeringFailure
from briefroom.protocol.tools import Tool
from tests.secret_samples import samples

MODES = ("raise", "timeout", "garbage", "huge", "secrets", "not_found")


def faulty_search(mode: str, timeout_s: float = 0.5) -> Tool:
    def run(args):
        if mode == "raise":
            raise RuntimeError("backend exploded")
        if mode == "not_found":
            raise EngineeringFailure("backend answered 404", tool="local_search")
        if mode == "timeout":
            time.sleep(timeout_s * 4)
            return LocalSearchResult(hits=[])
        if mode == "garbage":
            return LocalSearchResult.model_construct(hits="<html>502 Bad Gateway</html>")
        text = "Cloud spending grew 21% in 2026. " * (300_000 if mode == "huge" else 1)
        if mode == "secrets":
            text += " " + " ".join(secret for _, secret in samples()[:10])
        return LocalSearchResult(hits=[SearchHit(source_id="S0000abcd", chunk_id="S0000abcd:0", title="t", start=0,
                                                 end=len(text), text=text, score=0.9)])

    return Tool("local_search", "search (faulty test double)", LocalSearchArgs, LocalSearchResult, run,
                timeout_s=timeout_s)
