"""Test doubles the server tests share (importable by spawned writer processes)."""

from __future__ import annotations

from tests.fakes import HashEmbedder  # noqa: F401 (shared with the unit tests)


class Clock:
    """A fixed, steppable time source, so two stores write the same timestamps."""

    def __init__(self, start: float = 1_780_000_000.0):
        self.t = start

    def __call__(self) -> float:
        self.t += 1.0
        return self.t
