"""Whole-pipeline timing with the deterministic test provider (no model time at all).

Measures what briefroom itself costs: indexing the bundled corpus cold (embedding) and
warm (content-hash cache), and a full research run on a warm index.

    .venv/bin/python -m bench.pipeline
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from briefroom.config import Settings
from briefroom.corpus.chroma import ChromaCorpusIndex
from briefroom.corpus.embeddings import MiniLMEmbedder
from briefroom.events import LlmCall
from briefroom.run import ResearchRequest, run_research

CORPUS = Path(__file__).resolve().parent.parent / "scenarios" / "cloud-market" / "corpus"
QUESTION = "How big is the 2026 public cloud market and who is growing fastest?"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        embedder = MiniLMEmbedder()
        t0 = time.perf_counter()
        index = ChromaCorpusIndex(data, embedder)
        cold = index.sync([CORPUS])
        t1 = time.perf_counter()
        warm = index.sync([CORPUS])
        t2 = time.perf_counter()
        index.close()
        result = run_research(ResearchRequest(question=QUESTION, corpus=[CORPUS], out=Path(tmp) / "run"),
                              Settings(model="test", rounds=3, data_dir=data))
        t3 = time.perf_counter()
        calls = [e for e in result.events if isinstance(e, LlmCall)]
        print(json.dumps({
            "bench": "pipeline", "documents": cold.documents, "chunks_embedded_cold": cold.embedded_chunks,
            "index_cold_s": round(t1 - t0, 3), "index_warm_s": round(t2 - t1, 3),
            "chunks_embedded_warm": warm.embedded_chunks, "research_test_provider_s": round(t3 - t2, 3),
            "llm_calls": len(calls), "max_prompt_tokens": max(c.prompt_tokens for c in calls),
            "rounds": result.state["round"]}))


if __name__ == "__main__":
    main()
