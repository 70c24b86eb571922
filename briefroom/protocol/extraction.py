"""Round summaries and the lossless channel beside them.

A RoundSummary (one model call at round end, schema-validated) replaces the round's
raw messages in later prompts. Numbers never depend on it: `extract_facts` copies
every sentence with a number verbatim into `facts`, deterministically, from the raw
text, so a summary that mangles a figure cannot lose it.
"""

from __future__ import annotations

import hashlib
import re
from decimal import Decimal

from briefroom.records import Fact, RoundRecord, RoundSummary, SummaryPoint  # noqa: F401 (re-exported

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'“(])")
# Chinese (and Japanese) sentences end at a full-width mark, with no space after it.
_CJK_SENTENCE = re.compile(r"(?<=[。！？；])")
# Full-width digits and marks, as Chinese text often writes them, read as their ASCII forms.
_FULLWIDTH = str.maketrans("０１２３４５６７８９．，％＋－", "0123456789.,%+-")
# A number may follow a CJK character ("为0.52元"): only an ASCII letter, digit, "_" or
# "." before it makes it part of something else (a model name, a version, an id).
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(\s?[万亿])?")
_MULTIPLIER = {"万": 10_000, "亿": 100_000_000}
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# Characters that carry grammar, not content: a bigram holding one says little.
_CJK_STOP = frozenset("的了是在和与及也而其这那之于为对等将把被从以或并且个们着过")


def sentences(text: str) -> list[str]:
    """Sentences of prose in English or Chinese; Markdown headings are titles, not statements."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n|\n(?=[-*#] )", text):
        para = "\n".join(line for line in para.splitlines() if not line.lstrip().startswith("#"))
        para = " ".join(para.split())
        for piece in _CJK_SENTENCE.split(para):
            out.extend(s.strip() for s in _SENTENCE.split(piece) if s.strip())
    return out


_WORD = re.compile(r"[a-z]{3,}")
_STOPWORDS = frozenset(
    "the and for with that this from what who how are was were has have had its their into than which while "
    "about more most over under also been being can could will would should may might not but all any each "
    "other such only own same too very just there these those then they them our you your his her she him "
    "many much does did".split())


def _stem(word: str) -> str:
    """A light English stemmer: "added", "adds" and "adding" are "add"; "growing" is "grow".
    Enough for overlap counting; not a linguistic stem."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    """Lower-case words of three letters or more, without the commonest function words;
    Chinese has no spaces, so its content is counted in overlapping character pairs
    (bigrams), the usual unit of Chinese retrieval, without pairs that hold a particle."""
    lowered = text.lower()
    words = {w for w in _WORD.findall(lowered) if w not in _STOPWORDS}
    for run in _CJK.findall(lowered):
        words.update(run[i:i + 2] for i in range(len(run) - 1)
                     if run[i] not in _CJK_STOP and run[i + 1] not in _CJK_STOP)
    return words


def stemmed_words(text: str) -> set[str]:
    """content_words with English endings folded, for ranking: "added" finds "add".
    The checks that decide what a report may say keep exact words (content_words)."""
    return {_stem(w) for w in content_words(text)}


def relevance(text: str, query: str) -> float:
    """Share of the query's (stemmed) content words that `text` contains (0..1)."""
    wanted = stemmed_words(query)
    return len(wanted & stemmed_words(text)) / len(wanted) if wanted else 0.0


def numbers_in(text: str) -> list[str]:
    """Numeric tokens, normalised so that one figure has one spelling: no thousands
    separators, no trailing decimal zeros (723.0 is 723; 72.3 is not), full-width digits
    read as digits, and 万 / 亿 multiplied out (48.6万 is 486000, 1.2亿 is 120000000)."""
    out = []
    for m in _NUMBER.finditer(text.translate(_FULLWIDTH)):
        number = m.group(1).replace(",", "")
        multiplier = m.group(2)
        if multiplier:
            scaled = Decimal(number) * _MULTIPLIER[multiplier.strip()]
            number = format(scaled.normalize(), "f")
        if "." in number:
            number = number.rstrip("0").rstrip(".")
        out.append(number)
    return out


def is_cjk(text: str, share: float = 0.2) -> bool:
    """True when at least `share` of the letters are CJK characters (a Chinese question)."""
    letters = [ch for ch in text if ch.isalpha()]
    return bool(letters) and sum(1 for ch in letters if _CJK.match(ch)) / len(letters) >= share


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

