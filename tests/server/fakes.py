"""Test doubles the server tests share (importable by spawned writer processes)."""

from __future__ import annotations

import hashlib
import math


class HashEmbedder:
    """Bag-of-words vectors (64 dims), so texts sharing words are near each other."""

    name = "hash-test"

    def embed(self, texts):
        out = []
        for text in texts:
            vec = [0.0] * 64
            for word in text.lower().split():
                vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out


class Clock:
    """A fixed, steppable time source, so two stores write the same timestamps."""

    def __init__(self, start: float = 1_780_000_000.0):
        self.t = start

    def __call__(self) -> float:
        self.t += 1.0
        return self.t
