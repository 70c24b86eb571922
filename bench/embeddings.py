"""Embedding throughput: per-batch padding (ours) vs padding every text to 256 tokens.

chromadb's built-in ONNX MiniLM pads every input to 256 tokens; briefroom pads each
batch to its longest member. Same model file, same texts, one process, ratio reported.

    .venv/bin/python -m bench.embeddings [--texts 256]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from briefroom.corpus.embeddings import MiniLMEmbedder


def short_texts(n: int) -> list[str]:
    subjects = ["Cloud spending", "Battery storage", "GPU demand", "Data centre power", "SaaS revenue"]
    verbs = ["rose", "fell", "reached", "doubled to", "was forecast at"]
    return [f"{subjects[i % 5]} {verbs[(i // 5) % 5]} {100 + i} billion USD in {2020 + i % 7}." for i in range(n)]


def padded_to_256(embedder: MiniLMEmbedder, texts: list[str]) -> list[list[float]]:
    """The chromadb-style baseline: every row padded to 256 tokens."""
    out: list[list[float]] = []
    for i in range(0, len(texts), 32):
        out.extend(embedder._embed_batch(texts[i:i + 32], pad_to=256))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=256)
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    texts = short_texts(args.texts)
    embedder.embed(texts[:8])  # warm-up
    t0 = time.perf_counter()
    ours = embedder.embed(texts)
    t1 = time.perf_counter()
    base = padded_to_256(embedder, texts)
    t2 = time.perf_counter()
    agreement = float(np.min(np.sum(np.array(ours) * np.array(base), axis=1)))
    print(json.dumps({"bench": "embeddings", "texts": len(texts), "per_batch_padding_s": round(t1 - t0, 3),
                      "pad_to_256_s": round(t2 - t1, 3), "speedup": round((t2 - t1) / (t1 - t0), 2),
                      "min_cosine_between_methods": round(agreement, 4)}))


if __name__ == "__main__":
    main()
