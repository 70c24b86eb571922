"""Telling a sentence that repeats another: a small model says its sentence twice with one
word changed, and a reader should read it once."""

from __future__ import annotations

from dataclasses import dataclass

from briefroom.protocol.extraction import content_words, statements
from briefroom.records import Claim
from briefroom.report.asking import figures

# Two sentences whose content words overlap this much (Jaccard) say the same thing: a small
# model repeats its sentence with one word changed ("lower than expected" / "higher then
# expected"), and a reader should read it once.
NEAR_DUPLICATE = 0.8


@dataclass(frozen=True)
class Says:
    """What a sentence says, for telling repeats: its content words and its figures."""

    words: frozenset[str]
    figures: frozenset[str]

    @classmethod
    def of(cls, text: str) -> "Says":
        return cls(frozenset(content_words(text)), frozenset(figures(text)))

    def repeats(self, other: "Says") -> bool:
        """The same figures (a different figure is a different statement) and nearly the
        same words."""
        union = self.words | other.words
        return self.figures == other.figures and bool(union) and len(self.words & other.words) / len(union) >= \
            NEAR_DUPLICATE


def without_repeats(claim: Claim) -> Claim:
    """The claim with a sentence that repeats an earlier sentence of it left out; a quote
    is a source's own words and stays as it is."""
    if claim.text.lstrip().startswith("“"):
        return claim
    sentences = statements(claim.text)
    kept: list[str] = []
    for sentence in sentences:
        if not any(Says.of(sentence).repeats(Says.of(k)) for k in kept):
            kept.append(sentence)
    if len(kept) == len(sentences) or not kept:
        return claim
    return claim.model_copy(update={"text": " ".join(kept)})


def new_sentences(claims: list[Claim], said: list[Says]) -> list[Claim]:
    """The claims that do not repeat one already said (`said`; it grows)."""
    out = []
    for claim in claims:
        says = Says.of(claim.text)
        if any(says.repeats(earlier) for earlier in said):
            continue
        said.append(says)
        out.append(claim)
    return out
