"""The error taxonomy every layer shares.

Three kinds, because each needs a different reaction:
ContractError -> tell the model what was wrong and let it retry (bounded);
EngineeringFailure -> a tool or system broke: structured error, maybe a fallback;
FatalBreaker -> stop the run now, keep what is done, exit 1.
BriefroomError is the parent of everything the CLI reports as one line.
"""

from __future__ import annotations


class BriefroomError(Exception):
    """An error meant for the user: its message is one clear line."""


class ContractError(BriefroomError):
    """A model's structured output or tool arguments did not validate, after retries."""


class EngineeringFailure(BriefroomError):
    """A tool, index or endpoint failed; carries a structured payload for the model."""

    def __init__(self, message: str, *, tool: str | None = None, transient: bool = False):
        super().__init__(message)
        self.tool = tool
        # Transient (a crash, a timeout) may succeed if tried again; a definite answer
        # (404, no such source, a malformed result) will not, so it is not retried.
        self.transient = transient

    def payload(self) -> dict[str, object]:
        return {"error": "engineering_failure", "tool": self.tool, "message": str(self),
                "advice": "do not retry the same call blindly"}


class FatalBreaker(BriefroomError):
    """The run must stop at once (budget exhausted, forbidden action, secret in a prompt)."""


class MustKeepOverBudget(FatalBreaker):
    """What a prompt must keep (charter, task, instructions, open critiques) does not fit
    the role's input budget. Fatal for a call the role needs; a caller with an optional
    call (the Writer's revision) may go on without it."""


class ConfigError(BriefroomError):
    """Bad settings, flags, or files given by the user."""
