"""Round summaries and the lossless channel beside them.

A RoundSummary (one model call at round end, schema-validated) replaces the round's
raw messages in later prompts. Numbers never depend on it: `extract_facts` copies
every sentence with a number verbatim into `facts`, deterministically, from the raw
text, so a summary that mangles a figure cannot lose it.
"""

from __future__ import annotations

import hashlib
import re

from briefroom.graph.state import Fact, RoundRecord, RoundSummary, SummaryPoint  # noqa: F401 (re-exported)

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'“(])")
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?")


def sentences(text: str) -> list[str]:
    """Sentences of prose; Markdown headings are titles, not statements, so they are skipped."""
    out = []
    for para in re.split(r"\n\s*\n|\n(?=[-*#] )", text):
        para = "\n".join(line for line in para.splitlines() if not line.lstrip().startswith("#"))
        para = " ".join(para.split())
        out.extend(s.strip() for s in _SENTENCE.split(para) if s.strip())
    return out


_WORD = re.compile(r"[a-z]{3,}")
_STOPWORDS = frozenset(
    "the and for with that this from what who how are was were has have had its their into than which while "
    "about more most over under also been being can could will would should may might not but all any each "
    "other such only own same too very just there these those then they them our you your his her she him".split())


def content_words(text: str) -> set[str]:
    """Lower-case words of three letters or more, without the commonest function words."""
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS}


def relevance(text: str, query: str) -> float:
    """Share of the query's content words that `text` contains (0..1)."""
    wanted = content_words(query)
    return len(wanted & content_words(text)) / len(wanted) if wanted else 0.0


def numbers_in(text: str) -> list[str]:
    """Numeric tokens, normalised: no thousands separators, no trailing decimal zeros
    (723.0 and 723 are the same figure; 72.3 is not)."""
    out = []
    for m in _NUMBER.finditer(text):
        number = m.group(0).replace(",", "")
        if "." in number:
            number = number.rstrip("0").rstrip(".")
        out.append(number)
    return out


def extract_facts(text: str, source_id: str, found_by: str, round: int) -> list[Fact]:
    """Every sentence of `text` that carries a number becomes a verbatim fact."""
    facts = []
    for sentence in sentences(text):
        found = numbers_in(sentence)
        if not found:
            continue
        digest = hashlib.sha256(f"{source_id}|{sentence}".encode()).hexdigest()[:10]
        facts.append(Fact(fact_id=f"F{digest}", text=sentence, numbers=tuple(dict.fromkeys(found)),
                          source_id=source_id, found_by=found_by, round=round))
    return facts

