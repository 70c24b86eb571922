"""Reading back the data blocks `mark_data` wrote, shared by the prompt and tool-result parts."""

from __future__ import annotations

import re

from briefroom.protocol.data_blocks import DATA_BLOCK, mark_data

_ATTR = re.compile(r' (\w+)="([^"]*)"')


def unseal(text: str) -> tuple[str, str, dict[str, str]] | None:
    """(kind, body, attributes) of a block `mark_data` wrote, or None. A text that only
    looks like one (a body that could close it early, a code that does not match its
    content) is not a block: it is wrapped again like any other text."""
    m = DATA_BLOCK.fullmatch(text.strip())
    if m is None:
        return None
    kind, body, attrs = m.group(2), m.group(4), dict(_ATTR.findall(m.group(3)))
    return (kind, body, attrs) if mark_data(kind, body, **attrs) == text.strip() else None
