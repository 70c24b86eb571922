"""Recognising text that tries to give orders (prompt injection), for the memory gate.

Retrieved text always enters prompts as data; this check is for what may be *kept*:
a sentence that addresses the agent ("ignore previous instructions", "you are now",
fake role or tool markup, requests for keys or prompts) never becomes a memory, even
if two roles passed it along.

Text that speaks to one of the team's roles by name ("as the critic", "writer: add...")
gives orders too. Which names those are is the team's: callers pass the run's role names
(`addressees`), so a new or renamed role is covered without an edit here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_PATTERNS = [
    ("override", r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}\b(?:instructions?|charter|rules?|sources?|"
                 r"criteria|prompt|goal)\b"),
    ("override", r"\b(?:new|real|actual) (?:goal|instructions?|task)\b|\bbegin new instructions\b"),
    ("override", r"\b(?:no longer apply|without checking|accept every)\b"),
    ("role_markup", r"\b(?:system|assistant|tool result)\s*:|<\|im_(?:start|end)\|>|\[system[^\]]*\]"),
    ("role_markup", r"(?m)</?data\b|^#{2,3} (?:role|current task|charter)\b"),
    ("persona", r"\byou are now\b|\bdeveloper mode\b"),
    ("persona", r"\bas the (?:{roles})\b"),
    ("exfiltration", r"\b(?:reveal|print|send|leak|include|translate|output)\b[^.\n]{0,60}\b(?:api[ _-]?key|"
                     r"system prompt|your prompt|environment variables|worktable|secrets?|password)\b"),
    ("exfiltration", r"https?://\S*(?:collect|exfil|evil)\S*"),
    ("tool_call", r"\"tool_calls\"\s*:|\bcall (?:the tool )?(?:local_search|read_source|read_artifact)\b|"
                  r"\bcall the tool\b"),
    ("order", r"\b(?:you must|respond|reply|output) (?:only |in json )?(?:with|the word)\b|"
              r"\bremember this forever\b|\bstate it as fact\b|\bchange the goal\b|\bstop the research\b"),
    ("order", r"\b(?:{roles})\s*:"),
    ("exfiltration", r"\b[A-Z0-9_]*API_KEY\b|\bapi[ _-]?key you\b"),
]
_ROLES = "{roles}"  # where a pattern names the team's roles


@lru_cache(maxsize=16)
def _compiled(addressees: tuple[str, ...]) -> list[tuple[str, re.Pattern[str]]]:
    """The rules for a team whose roles answer to `addressees`; a rule that names roles
    is left out when there are none."""
    names = "|".join(re.escape(name) for name in addressees)
    return [(label, re.compile(pattern.replace(_ROLES, names), re.IGNORECASE)) for label, pattern in _PATTERNS
            if names or _ROLES not in pattern]


def instruction_like(text: str, addressees: Iterable[str] = ()) -> str | None:
    """The kind of order `text` seems to give an agent, or None. `addressees`: the names
    of the team's roles (the registry's), so text addressing one of them counts too."""
    for label, pattern in _compiled(tuple(sorted(set(addressees)))):
        if pattern.search(text):
            return label
    return None
