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

    def within(self, other: "Says") -> bool:
        """Every word and figure of this sentence is one the other already said: a model's
        sentence that is a shortened copy of the quote above it ("The Port of Halvik
        handled 3.87 million TEU in 2025." under "…3.87 million TEU in 2025, against 3.52
        million TEU in 2024…") tells the reader nothing new."""
        return bool(self.words) and self.words <= other.words and self.figures <= other.figures


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
    """The claims that do not repeat one already said (`said`; it grows), nor say only
    part of another of `claims` (within a section, not across: a later part whose answer
    an earlier part gave in passing still gives it). A later sentence that says all an
    earlier one does and more takes its place: the airport's "…handled 14.82 million
    passengers in 2025." then "“…handled 14.82 million passengers in 2025, counting every
    arriving and departing passenger once…”" is read once, with how it is counted; it
    keeps the earlier one's label when it cites the same sources."""
    out: list[Claim] = []
    here: list[Says] = []
    for claim in claims:
        says = Says.of(claim.text)
        if any(says.repeats(earlier) for earlier in said) or any(says.within(earlier) for earlier in here):
            continue
        covered = [n for n, earlier in enumerate(here) if earlier.within(says)]
        said.append(says)
        if not covered:
            here.append(says)
            out.append(claim)
            continue
        shorter = out[covered[0]]
        if shorter.attribution and not claim.attribution and set(claim.source_ids) == set(shorter.source_ids):
            claim = claim.model_copy(update={"attribution": shorter.attribution})
        here[covered[0]], out[covered[0]] = says, claim
        for n in reversed(covered[1:]):  # each sentence it holds whole is read once, in the first one's place
            del here[n], out[n]
    return out
