"""Character classes the text boundaries share (one definition, several users).

INVISIBLE: characters that render as nothing or only reorder display (zero-width,
soft hyphen, word joiner, BOM, bidi embeddings, overrides and isolates, variation
selectors). Attackers put them inside keywords and tokens ("ig\\u200bnore", a split
API key); the redactor, the data-block escaping and the injection detector remove them
before matching.

GARBAGE: C0/C1 controls other than tab, newline and carriage return, and U+FFFD, the
replacement character a wrong decoding leaves. Never part of a document, a question or
a memory.
"""

from __future__ import annotations

import re

INVISIBLE = ("\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e"
             "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0")
INVISIBLE_RE = re.compile(f"[{INVISIBLE}]")
GARBAGE_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")
