"""Who does what the question asks about, when the question says it in common nouns.

"How much electricity did solar panels generate in Corvale" asks what solar panels did;
"Wind farms in Corvale generated 18.6 TWh" is the same verb done by another doer. Names
tell subjects apart elsewhere (`outline.Scorer.other_subject`); "wind farms" and "solar
panels" are no names, and share the place, the year, the unit and the measure, so a
sentence about the one answers the other's question word for word. English only: a
Chinese sentence has no spaces to find its subject by.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from briefroom.protocol.extraction import content_words

# An auxiliary that opens a question's clause: "did solar panels generate", "do analysts
# expect". After the first kind the verb is bare ("generate", never "figures": "do sales
# figures for the same year differ" is cut short by its "for", and its last word is a
# noun); after the second it is a participle ("have wind farms installed").
_BARE_AFTER = frozenset("did do does will would could can".split())
_PARTICIPLE_AFTER = frozenset("has have had".split())
_AUXILIARY = _BARE_AFTER | _PARTICIPLE_AFTER
# What ends the doer-and-verb run after the auxiliary, and what cuts a sentence's subject
# short ("Wind farms in Corvale generated": the doer is "Wind farms").
_PREPOSITIONS = frozenset("in into on at by for from to with during over per of about after before between "
                          "under since until across through within among as than".split())
_PRONOUNS = frozenset("it its they them that this these those we he she you i there".split())
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|[^\sA-Za-z]")
# Words are compared by their first five letters: generate, generated, generation.
PREFIX = 5


class Doing(NamedTuple):
    """A verb of the question and the common nouns that do it ("solar panels", "generate")."""

    doer: frozenset[str]
    verb: str


def word_key(word: str) -> str:
    """A word as the subject rules compare it: lower case, its first `PREFIX` letters."""
    return word.lower()[:PREFIX]


def _stems(words: list[str]) -> frozenset[str]:
    """The keys (`word_key`) of the content words of `words`."""
    return frozenset(word_key(w) for w in content_words(" ".join(words)))


def _verb_form(word: str, auxiliary: str) -> bool:
    """The word may be the verb its auxiliary calls for: bare after "did" (not a plural
    noun's "-s", though "pass" ends so), a participle after "have" ("installed", "grown")."""
    if auxiliary in _BARE_AFTER:
        return not word.endswith("s") or word.endswith("ss")
    return word.endswith(("ed", "en", "wn"))


def asked_doings(question: str) -> list[Doing]:
    """The question's doers in common nouns, each with its verb: the words between an
    auxiliary and the first preposition or punctuation after it, the last of them the
    verb ("did solar panels generate in …"). A pronoun ("did it handle"), a name ("did
    Norvalia add": names are told apart elsewhere) or a verb alone is no doer."""
    tokens = _WORD.findall(question)
    found = []
    for n, token in enumerate(tokens):
        if token.lower() not in _AUXILIARY:
            continue
        run = []
        for word in tokens[n + 1:]:
            if not word[0].isalpha() or word.lower() in _PREPOSITIONS or word.lower() in _AUXILIARY:
                break
            run.append(word)
        doer, verb = run[:-1], run[-1:] if run else []
        if not doer or not verb or any(w[0].isupper() or w.lower() in _PRONOUNS for w in run) \
                or not _verb_form(verb[0].lower(), token.lower()):
            continue
        keys = _stems(doer)
        if keys:
            found.append(Doing(keys, word_key(verb[0])))
    return found


def doer_in(sentence: str, verb: str) -> tuple[frozenset[str], frozenset[str]]:
    """Whoever does `verb` (a stem) in the sentence, as content words: the words before its
    first form of the verb from the clause's start (after the last comma) to the first
    preposition ("In 2025, wind farms in Corvale generated" → wind, farms); and every word
    before the verb ("Installations of solar panels generated": solar panels did it).
    Empty when the verb is not there or nothing stands before it."""
    tokens = _WORD.findall(sentence)
    for n, token in enumerate(tokens):
        if token[0].isalpha() and n and word_key(token) == verb:
            clause = tokens[:n]
            start = max((i + 1 for i, w in enumerate(clause) if w in ",;:“\"("), default=0)
            doer = []
            for word in clause[start:]:
                if word.lower() in _PREPOSITIONS:
                    break
                doer.append(word)
            return _stems(doer), _stems(clause)
    return frozenset(), frozenset()


def done_by_another(sentence: str, question: str, doings: list[Doing]) -> bool:
    """The sentence does one of the question's verbs, whoever does it there shares no word
    with the question, and the question's doer is not named before the verb either: "Wind
    farms in Corvale generated 18.6 TWh" for what solar panels generated. "Rooftop solar
    systems generated" keeps (solar), as do "Installations of solar panels generated" and
    "Electricity generation reached" (electricity is the question's word)."""
    if not doings:
        return False
    asked = _stems([question])
    for doing in doings:
        doer, before = doer_in(sentence, doing.verb)
        if doer and not doer & asked and not doing.doer & before:
            return True
    return False
