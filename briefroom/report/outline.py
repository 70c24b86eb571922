"""Which verified source sentence answers a part of the question, decided in code.

The Writer's model writes the report's prose (`report.shape`); code still ranks the
sources' own sentences for three things the prose cannot be trusted with: the figure
the short answer must give (the most authoritative one for the measure asked), a part
the prose left empty (answered by a quote, or "the documents do not say"), and rival
figures (shown side by side with who gives them). Ranking is by how much of the part
(and of the question) a sentence says, times its source's authority.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import NamedTuple

from briefroom.protocol.extraction import (
    content_words,
    relevance,
    stemmed_words,
)
from briefroom.records import Fact, SourceRecord
from briefroom.report.asking import (
    CONNECTIVES,
    YEAR,
    a_part_of,
    about_other_years,
    answers_comparison,
    answers_measure,
    asks_change,
    asks_count,
    asks_why,
    close_figures,
    close_rival,
    dated_year,
    differs_between,
    figures,
    gives_only_differences,
    is_statement,
    level_of_year,
    measures_in,
    only_by_how_much,
    prices,
    projected,
    qualified_otherwise,
    same_measure,
    span_years,
    states_money,
    states_share,
    wants_figure,
    wants_money,
    wants_share,
    whole_period,
)
from briefroom.report.doers import asked_doings, done_by_another, word_key
from briefroom.report.language import language_of, part_query

# A source sentence must score this well on a part (`Scorer`, 0..1+) to answer it: below,
# the part is "not said" rather than answered by a sentence on a neighbouring subject.
# It decides only what code quotes (the short answer's figure, a part the model's prose
# left empty, a rival figure); the model's own sentences join their part by the model's
# word, checked for support, not for score. Kept from the earlier outline and checked on
# the development split (every answer-key figure of cloud-market, heat-pumps,
# wind-multipart and zh-rail-ridership scores above it; their distractors' do not lead).
ANSWERS_PART = 0.4
# What a sentence the team confirmed (the Searcher reported it, the Critic accepted it)
# gains in rank as a lead over one only read in a passage.
CONFIRMED_BONUS = 0.05
# Sentences of other sources scoring within this share of the lead's relevance are rival
# figures, shown beside it with who gives them. Checked on the development split: at
# 0.93 the cloud-market 680 billion stands beside 723 billion and the heat-pump opinion's
# 2.9 million beside the installers' 1.84 million, while the per-country and sales
# sentences do not crowd the installed figure; the model's prose, when it has some,
# decides the rest.
RIVAL_SHARE = 0.93
# Another source's figure of the same kind and size as the lead's (same unit, within a
# factor of two: a rival estimate of one quantity, not a part of it) stands beside the
# lead when it answers nearly as well as this share of the lead: the research firm's
# 680 billion USD beside the analysts' 723 billion (0.91 of the lead's score), not the
# 82 billion spent on GPU clouds.
CLOSE_RIVAL_SHARE = 0.85
MAX_LEADS = 3
_TOKEN = re.compile(r"[A-Za-z][A-Za-z-]+")
# A part that asks for someone: a sentence naming someone answers it better.
_WHO = re.compile(r"\s*(?:who\b|谁|哪家)", re.I)
# A part asking for a name: "who …", "which project …", "哪座…". Its answer may open with
# a name the question never used ("Halvard Bank, at 880 MW, was the largest …").
# A Chinese province or city: the two characters before 省/市 ("岚江省", "澄江省"; of
# 黑龙江省 its last two, the same in every mention). A character before the suffix that
# makes a common word names no place: 全省 (the whole province), 本市, 节省 (to save),
# and a year's 年 before a one-character name ("2025年甲市" is no place 年甲市).
# Counties and districts (县, 区) lie inside the asked place; they are left out.
_ZH_PLACE_SUFFIX = "省市"
_ZH_NOT_NAME = frozenset("全本该各外我邻每此其节为的了在和与及比较分同两多年")


def zh_places(text: str) -> set[str]:
    """The Chinese place names a text mentions (`_ZH_PLACE_SUFFIX`)."""
    found = set()
    for i, ch in enumerate(text):
        if ch in _ZH_PLACE_SUFFIX and i >= 2:
            name = text[i - 2:i]
            # "澜州市城市…": the 城 of 城市 (city) after a name is no name's end
            if all("\u4e00" <= c <= "\u9fff" and c not in _ZH_NOT_NAME and c not in _ZH_PLACE_SUFFIX for c in name):
                found.add(name + ch)
    return found


# A sentence set in a place or body by its opening phrase: "In Northmark, …", "For Baltnor
# Line, …" (the place it speaks of, whatever else it names after).
_FRAME = re.compile(r"(?:In|For|At|Across)\s+(?:the\s+)?(?!(?:January|February|March|April|May|June|July|August|"
                    r"September|October|November|December|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|"
                    r"Sunday)\b)([A-Z][A-Za-z]+(?:-[A-Za-z]+)*)(?:['’]s)?\b")  # "In March 2025, …" is a time
_ASKS_NAME = re.compile(r"^\W*(?:and\s+)?(?:who|which)\b|谁|哪(?:家|个|一|座|位|些|里)", re.I)
# What ends right before a figure's unit: the figure, with its scale word ("723 billion USD",
# "2.6 GW", "3.87 million TEU"). A capitalised word there measures, it names no one.
_AFTER_FIGURE = re.compile(r"\d(?:[\d.,]*\d)?\s*(?:(?:thousand|million|billion|trillion|bn|mn)\s+)?$", re.I)


Embed = Callable[[list[str]], list[list[float]]]


@functools.cache
def answer_scorer() -> Embed:
    """The embedder behind the outline's semantic scores: all-MiniLM-L6-v2, whatever
    the corpus index uses. The weights below were set on its cosine scale, and it ranks
    an answer above a sentence that merely shares the subject where the multilingual
    retrieval model does not (measured on the demo question: MiniLM puts the 723 billion
    sentence at 0.75 and the GPU-spending one at 0.59; USE-m3 the other way round, 0.33
    against 0.45). Loaded once per process, only for English questions."""
    from briefroom.corpus.embeddings import make_embedder

    return _Remembered(make_embedder("minilm").embed)


class _Remembered:
    """An embed function that computes each text's vector once per process: one Writer
    turn outlines the same sentences up to three times (the draft, the memory probe, the
    redraft), and every turn scores the same parts of the question."""

    LIMIT = 20_000

    def __init__(self, embed: Embed):
        self._embed = embed
        self._vectors: dict[str, list[float]] = {}

    def __call__(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            if len(self._vectors) > self.LIMIT:
                self._vectors.clear()
            self._vectors.update(zip(missing, self._embed(missing)))
        return [self._vectors[t] for t in texts]


class Scorer:
    """How well a sentence answers a part of the question (0..1+).

    Lexical: the part's own words count most; the question's give a part like "by how
    much" its subject; words the question never used count against; a matching year
    helps. Semantic, when an embedder is given and the question is in English: cosine
    similarity of the sentence to the part and to the question, so "put into service"
    can answer "installed". Chinese questions are scored lexically (character pairs):
    the weights below were set on English scenarios, and the Chinese ones answer fully
    without it (eval); turn it on for Chinese only with a measurement.
    """

    def __init__(self, question: str, parts: list[str], texts: list[str], embed: Embed | None = None,
                 language: str | None = None, documents: dict[str, str] | None = None):
        self.question = question
        self.names = proper_names(texts)
        self.asked = {w.lower() for w in _TOKEN.findall(question)}
        # the names the question asks about: capitalised inside it ("in Port Karavel")
        # (a unit the sources write after a figure, "in TEU", names no one)
        units = {u.lower() for u in figure_units(texts)}
        self.asked_names = {m.group(0).lower() for n, m in enumerate(_TOKEN.finditer(question))
                            if n > 0 and m.group(0)[0].isupper()} - units
        self.asked_places = zh_places(question)
        self.doings = asked_doings(question) if (language or language_of(question)) == "en" else []
        # `documents`: each source's title and its whole text
        self.silent_titles = frozenset(self._never_naming(documents or {}))
        self._other_titles: dict[str, bool] = {}
        self.semantic: dict[tuple[str, str], float] = {}
        if embed is not None and (language or language_of(question)) == "en" and texts:  # the charter's, if given
            unique = list(dict.fromkeys(texts))
            vectors = embed([*parts, question, *unique])
            asked, whole, rest = vectors[:len(parts)], vectors[len(parts)], vectors[len(parts) + 1:]
            for text, v in zip(unique, rest):
                to_question = _cos(v, whole)
                for part, p in zip(parts, asked):
                    self.semantic[(text, part)] = 0.7 * _cos(v, p) + 0.3 * to_question
                self.semantic[(text, question)] = to_question

    def __call__(self, text: str, part: str) -> float:
        question = self.question
        own = content_words(part)
        # a part with words of its own is judged mostly by them; a bare "by how much" by the question's
        share = 0.65 if len(own) >= 3 else 0.55 if own else 0.0
        lexical = share * relevance(text, part) + (0.8 - share) * relevance(text, question)
        words = stemmed_words(text)
        if words:
            lexical += 0.2 * len(words & (stemmed_words(part) | stemmed_words(question))) / len(words)
        semantic = self.semantic.get((text, part))
        score = lexical if semantic is None else 0.5 * lexical + 0.5 * semantic
        if _WHO.match(part) and any(w in self.names and w[1:].islower() for w in _TOKEN.findall(text)):
            score += 0.1  # "who…" is answered by a name (Microsoft, Azure), not by a segment (IaaS)
        found = set(YEAR.findall(text))
        if set(YEAR.findall(part)) & found:
            score += 0.15
        elif set(YEAR.findall(question)) & found:
            score += 0.05  # the question's year, for a part that names none: a weaker hint
        return score


    def names_only(self, text: str, part: str) -> bool:
        """The sentence shares with a part that names someone only those names: it is about
        the subject, not about what the part asks of it ("Azure grew 31%" for "how many
        data centres does Azure run in Antarctica"). Words are compared by their first
        five letters (handle, handled; centre, centres)."""
        named = {word_key(w) for w in _TOKEN.findall(part) if w.lower() in self.asked_names}
        if not named:
            return False
        said = {word_key(w) for w in content_words(text)}
        asked = {word_key(w) for w in content_words(part)} - named
        return bool(asked) and bool(said & named) and not said & asked

    def other_subject(self, text: str, part: str = "", title: str = "") -> bool:
        """The sentence is about someone else: it opens with a name the question does not
        use ("Estmark, Norvalia's neighbour, added…", or after a preposition, "In Northmark,
        Estravia's northern neighbour, …"; unless the part asks for a name), or
        it names others and none of the names the question asks about ("the cost … in
        Velmora was…" for Port Karavel), or it opens with another name of the asked kind
        (`names_another`), or its source's title does and it names no one asked about, or
        another doer does what the question asks of its own (`doers.done_by_another`: wind
        farms generating, for what solar panels generated), or it gives a figure and its
        source never names the asked subject (`_never_naming`)."""
        first = _TOKEN.match(text.lstrip("“\"'( "))
        if first and first.group(0) in self.names and first.group(0).lower() not in self.asked \
                and not _ASKS_NAME.search(part):
            return True
        # "In Northmark, Estravia's northern neighbour, …": a place the question does not ask
        # about frames the sentence, though a part asking "which" takes a name for its answer
        framed = _FRAME.match(text.lstrip("“\"'( "))
        if framed and framed.group(1) in self.names and framed.group(1).lower() not in self.asked \
                and self.asked_names:
            return True
        if self.names_another(text) and not _ASKS_NAME.search(part):
            return True
        if done_by_another(text, self.question, self.doings) and not _ASKS_NAME.search(part):
            return True
        if title in self.silent_titles and figures(text) and not _ASKS_NAME.search(part):
            return True
        named = {w.lower() for w in _TOKEN.findall(text) if w in self.names}
        if self.asked_names and named and not named & self.asked_names:
            return True
        places = zh_places(text)  # "澄江省…934万千瓦" for a question on 岚江省
        if self.asked_places and places and not places & self.asked_places:
            return True
        # a source titled by another subject of the asked kind ("Haverlow Airport: record
        # year in 2025", "澄江省2025年风电发展情况"): its sentences that name no one asked
        # about are about that subject, whatever the part asks ("增长最快的是插电式混合动力
        # 公交车。" in 澄川市's report is 澄川市's answer to "which grew fastest", not 青川市's)
        mentions_asked = bool(named & self.asked_names or self.written_as_names(text) & self.asked_names
                              or places & self.asked_places)
        return bool(title) and self.titled_by_another(title) and not mentions_asked

    def _never_naming(self, documents: dict[str, str]) -> set[str]:
        """The titles of the sources that never name what the question asks about: none of
        its names that no source writes in lower case (Kestrel, not Bus or Company), none of
        its Chinese places. A figure such a source gives is another subject's, however well
        it answers in words ("Across the region's four operators, buses carried 96.0 million
        passengers" for Kestrel Bus Company's passengers); its sentences without a figure may
        still explain (a glossary of what "installed" counts)."""
        tokens = {title: set(_TOKEN.findall(text)) for title, text in documents.items()}
        lower = {w for found in tokens.values() for w in found if w.islower()}
        words = {title: {w.lower() for w in found} for title, found in tokens.items()}

        def names(title: str, name: str) -> bool:  # "European" names Europe
            return any(w.startswith(name) for w in words[title])

        # A name no source uses tells nothing of which source is about it (nor does a place
        # read wrongly out of the question: "2025年甲市" gives 年甲市); an acronym (EU, US)
        # is often written out instead, so only names of four letters or more decide.
        distinct = {n for n in self.asked_names if len(n) >= 4 and n not in lower
                    and any(names(title, n) for title in documents)}
        places = {p[:-1] for p in self.asked_places  # 临江省 is named as 临江 too
                  if any(p[:-1] in text for text in documents.values())}
        if not distinct and not places:
            return set()
        return {title for title, text in documents.items()
                if not any(names(title, n) for n in distinct) and not any(p in text for p in places)}

    def written_as_names(self, text: str) -> set[str]:
        """The words a text capitalises where a name stands (past its opening word, or a
        name anywhere), lower-cased. A word of an asked name in lower case is a common
        word: "of water put into supply" does not mention Lindale Water Company."""
        return {m.group(0).lower() for n, m in enumerate(_TOKEN.finditer(text))
                if m.group(0)[0].isupper() and (n or m.group(0) in self.names)}

    def titled_by_another(self, title: str) -> bool:
        """A source's title opens with another name of the asked kind or names only other
        Chinese places; computed once per title, as every sentence of the source asks it."""
        if title not in self._other_titles:
            places = zh_places(title)
            self._other_titles[title] = self.names_another(title) or bool(
                self.asked_places and places and not places & self.asked_places)
        return self._other_titles[title]

    def names_another(self, text: str) -> bool:
        """The text opens with a name of the kind the question asks about, but another one:
        "Haverlow Airport, 90 kilometres north of Brennick, handled…" for a question on
        Brennick International Airport (the name's last word is one of the question's
        name, its first word is not the question's)."""
        phrase: list[str] = []
        for word in text.lstrip("“\"'(# ").split():
            token = word.strip("“”\"'(),;:.")
            if not token[:1].isupper() or not _TOKEN.fullmatch(token):
                break
            phrase.append(token)
            if word[-1:] in ",;:.":
                break
        return len(phrase) >= 2 and phrase[-1].lower() in self.asked_names \
            and phrase[0].lower() not in self.asked and bool(content_words(phrase[0]))


def documents_by_title(sources: dict[str, SourceRecord], texts: dict[str, str] | None = None) -> dict[str, str]:
    """What `Scorer` reads to tell which sources never name the asked subject: each
    source's title, path and whole text (`texts`, by source id; its passages seen when the
    text is not at hand), joined by title."""
    out: dict[str, str] = {}
    for sid, record in sources.items():
        text = (texts or {}).get(sid) or " ".join(p.text for p in record.passages)
        out[record.title] = " ".join(filter(None, [out.get(record.title), record.title, record.path, text]))
    return out


def _unit_at(text: str, start: int) -> bool:
    """The word starting at `start` follows a figure (not a year): it is the figure's unit."""
    figure = _AFTER_FIGURE.search(text[max(0, start - 24):start])
    return figure is not None and not YEAR.fullmatch(figure.group(0).strip())  # "in 2025 Estmark added": a name


def figure_units(texts: list[str]) -> set[str]:
    """Capitalised words written right after a figure somewhere: units and currencies
    (USD, GW, TEU), never names."""
    return {m.group(0) for text in texts for m in _TOKEN.finditer(text)
            if m.group(0)[0].isupper() and _unit_at(text, m.start())}


def proper_names(texts: list[str]) -> set[str]:
    """Capitalised words that are names in these texts: written capitalised inside a
    sentence somewhere, and never in lower case (so "Installers" or "Worldwide" opening a
    sentence are not names, "Sweden" and "Estmark" are)."""
    inner: set[str] = set()
    lower: set[str] = set()
    units: set[str] = set()
    for text in texts:
        for n, m in enumerate(_TOKEN.finditer(text)):
            word = m.group(0)
            if _unit_at(text, m.start()):
                units.add(word)  # a unit or currency after its figure (USD, GW, TEU)
                continue
            opening = n == 0 or text[max(0, m.start() - 2):m.start()].strip() in (".", "“", "\"")
            # an opening word is a name when a comma or "'s" follows it ("Estmark, …", "Norvalia's …")
            if word[0].isupper() and (not opening or text[m.end():m.end() + 2] in (", ", "'s", "’s")):
                inner.add(word)
            elif word[0].islower():
                lower.add(word)
    names = {w for w in inner if w.lower() not in lower and w not in units and len(w) >= 3
             and w.lower() not in CONNECTIVES}  # "First, …" in a corpus never writing "first"
    # An opening word in the place of a name is one too: "Sweden installed …" beside
    # "France installed …" and "Poland installed …" (a list of countries, a row each).
    after_name: set[str] = set()
    openers: list[tuple[str, str]] = []
    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            tokens = _TOKEN.findall(sentence)
            for a, b in zip(tokens, tokens[1:]):
                if a in names and b[0].islower():
                    after_name.add(b)
            if len(tokens) >= 2 and tokens[0][0].isupper() and tokens[1][0].islower():
                openers.append((tokens[0], tokens[1]))
    names |= {a for a, b in openers if b in after_name and a.lower() not in lower and a not in units and len(a) >= 3}
    return names


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))  # the embedder's vectors are unit length


def may_answer(text: str, part: str, question: str, title: str = "") -> bool:
    """A statement, with a figure where the part asks for one, about the question's time;
    a price does not answer a count, and a step of a source's count of reasons
    ("Third, about 0.12 million units were delivered … but not commissioned until 2026")
    answers only a part asking why."""
    asked = part if content_words(part) else question  # a bare "by how much" borrows the question's subject
    figure = wants_figure(part) or wants_figure(asked)
    if figure and wants_money(asked) and not (states_money(text) and same_measure(text, asked)):
        return False
    if (asks_count(asked) and prices(text)) or (_STEP.match(text) and not asks_why(part)):
        return False
    return is_statement(text) and (bool(figures(text)) or not figure) and not about_other_years(text, question,
                                                                                                  title)


class _Scored(NamedTuple):
    """A candidate sentence for a part: its relevance weighted by its source's authority
    (what the lead is chosen by), unweighted, its place among the facts (the tie-break,
    so equal scores keep the facts' order), and its relevance as a sentence alone, without
    the team's confirmation (what rivals are measured by: whether the Searcher happened to
    report a sentence says nothing of how well it answers, and a rival the Searcher did
    not report stood beside the lead or not by that chance)."""

    weighted: float
    relevance: float
    order: int
    fact: Fact

    @property
    def alone(self) -> float:
        return self.relevance - (CONFIRMED_BONUS if self.fact.confirmed_by else 0.0)


# A sentence that is one step of a source's count of reasons ("First, …", "Second, …",
# "Finally, …"; 第一/其一/一是…).
_STEP = re.compile(r"\W*(?:(?:first|second|third|fourth|fifth)(?:ly)?|finally|lastly)\b|"
                   r"\W*(?:第[一二三四五六]|其[一二三四五六]|[一二三四五六]是)", re.I)


def explanation(facts: list[Fact], part: str, score: Scorer, titles: dict[str, str], used: set[str]) -> list[Fact]:
    """For a part asking why: from the one source whose title answers the part best (at
    least `ANSWERS_PART`), its sentences that answer the part best, at most `MAX_LEADS`,
    in the order the source gives them; the steps of the source's count of reasons
    ("First, about 0.46 million … added to distributor inventory", "Second, …") are chosen
    as one, and then every step of the count stands, so no reason the source gives is left
    out. None when no title answers the part."""
    own: dict[str, list[tuple[int, Fact]]] = {}
    for n, f in enumerate(facts):
        title = titles.get(f.source_id, "")
        if f.text not in used and title and is_statement(f.text) and not score.other_subject(f.text, part) \
                and not about_other_years(f.text, score.question, title):
            own.setdefault(f.source_id, []).append((n, f))
    ranked = sorted(((score(titles[sid], part), sid) for sid in own), key=lambda t: (-t[0], t[1]))
    if not ranked or ranked[0][0] < ANSWERS_PART:
        return []
    best: list[tuple[int, Fact]] = []
    counted = False  # the source's count of reasons ("First, …", "Second, …") is one choice
    subject = stemmed_words(score.question)
    for n, f in sorted(own[ranked[0][1]], key=lambda t: (-score(t[1].text, part), t[0])):
        if len(best) == MAX_LEADS:
            break
        if not (_STEP.match(f.text) or figures(f.text) or stemmed_words(f.text) & subject):
            continue  # no figure and no word of the question's: a note on the document, no reason
        if not (_STEP.match(f.text) and counted):
            best.append((n, f))
            counted = counted or bool(_STEP.match(f.text))
    if counted:  # each step of the count, whatever else it names ("re-exported to markets outside
        # Europe"): the source's title says what they explain
        best += [(n, f) for n, f in enumerate(facts) if f.source_id == ranked[0][1] and _STEP.match(f.text)
                 and f.text not in used and is_statement(f.text) and (n, f) not in best]
    return [f for _, f in sorted(best, key=lambda t: t[0])]


def part_leads(facts: list[Fact], part: str, score: Scorer, titles: dict[str, str], used: set[str],
               authority: dict[str, float] | None = None) -> list[Fact]:
    """What answers a part: the explaining source's sentences for a part asking why (when
    a source's title answers it), else the lead and its rivals (`leads`)."""
    if asks_why(part):
        found = explanation(facts, part, score, titles, used)
        if found:
            return found
    return leads(facts, part, score, titles, used, authority)


def leads(facts: list[Fact], part: str, score: Scorer, titles: dict[str, str], used: set[str],
          authority: dict[str, float] | None = None) -> list[Fact]:
    """The verified sentences that answer a part best: the lead, then rivals.

    The lead is the sentence with the best relevance to the part weighted by its
    source's authority (`source_kinds.AUTHORITY`): a registry's count before a blogger's
    estimate of the same thing. Rivals are sentences of other sources, with other
    figures, that answer the part nearly as well *as sentences* (unweighted, so an
    estimate that answers the question head-on still stands beside the lead, labelled)."""
    scored = _answering(facts, part, score, titles, used, authority or {})
    if not scored:
        return []
    # the lead gives the measure asked for (installed, not sold); rivals may give another
    leading = _measured_first(sorted((t for t in scored if answers_measure(t.fact.text, part)),
                                     key=lambda t: (-t.weighted, t.order)), part)
    if not asks_change(part):  # a comparison's sentences date their figures by either year
        leading = _of_the_asked_year(leading, part_query(part, score.question))
    if wants_share(part):  # a share is led by a sentence giving one, when any answers the part
        leading = [t for t in leading if states_share(t.fact.text)] or leading
    if only_by_how_much(part):  # led by a sentence giving the difference, when any answers the part:
        # the one between the things compared before a change on a year ("cheaper …, by 6.5
        # euros" before "…41.7 euros, down from 45.9 euros in 2024")
        leading = [t for t in leading if differs_between(t.fact.text)] \
            or [t for t in leading if answers_comparison(t.fact.text, part)] or leading
    if not leading:
        return []
    return [leading[0].fact, *_rivals(scored, leading[0], part)]


def _answering(facts: list[Fact], part: str, score: Scorer, titles: dict[str, str], used: set[str],
               authority: dict[str, float]) -> list[_Scored]:
    """The facts not yet used that may answer the part and score as an answer must
    (`ANSWERS_PART`), in the facts' order."""
    scored = []
    for n, f in enumerate(facts):
        title = titles.get(f.source_id, "")
        if f.text in used or not may_answer(f.text, part, score.question, title) \
                or score.other_subject(f.text, part, title) or score.names_only(f.text, part):
            continue
        relevance_ = score(f.text, part) + (CONFIRMED_BONUS if f.confirmed_by else 0.0)
        scored.append(_Scored(relevance_ * authority.get(f.source_id, 1.0), relevance_, n, f))
    return [t for t in scored if t.relevance >= ANSWERS_PART]


def answering(facts: list[Fact], part: str, score: Scorer, titles: dict[str, str], used: set[str]) -> list[Fact]:
    """The facts not in `used` that may answer the part, by the same rules a lead must
    pass (its subject, not only its names), best answer first: what else may be shown as
    evidence for a part beside its lead and rivals."""
    scored = _answering(facts, part, score, titles, used, {})
    return [t.fact for t in sorted(scored, key=lambda t: (-t.relevance, t.order))]


def _of_the_asked_year(leading: list[_Scored], asked: str) -> list[_Scored]:
    """Sentences whose first figure is dated another year than the part asks about (its
    own years, or its scope's: "For Brennick International Airport in 2025") go after the
    others: 2024's 13.57 million passengers does not answer how many 2025 had, however
    many of the part's words it shares, while the 2025 count stands in the facts."""
    years = set(YEAR.findall(asked))
    if not years:
        return leading
    other = [t for t in leading if (year := dated_year(t.fact.text)) is not None and year not in years]
    return [*(t for t in leading if t not in other), *other] if len(other) < len(leading) else leading


def _measured_first(leading: list[_Scored], part: str) -> list[_Scored]:
    """A forecast or an estimate never stands for a measured figure of the same period
    that answers the part as well (`RIVAL_SHARE`) or measures the same quantity
    (`close_figures`: its unit, within a factor of two): then the measured ones lead, and
    the forecast may stand beside the lead as a rival, labelled. By score alone a
    forecast often wins: it restates the question's words ("expected Brennick
    International Airport to handle 17.5 million passengers in 2025") where the count
    carries its own qualifiers ("…handled 14.82 million passengers in 2025, counting
    every arriving and departing passenger once…"). A quarter's actual does not answer
    for the year, nor a measured figure of something else (GPU clouds' growth beside a
    market's forecast size)."""
    forecasts = [t for t in leading if projected(t.fact.text)]
    if not forecasts or "forecast" in measures_in(part):
        return leading
    best = max(t.relevance for t in forecasts)
    counts = [t for t in leading if not projected(t.fact.text) and whole_period(t.fact.text, part)
              and (t.relevance >= RIVAL_SHARE * best or any(close_figures(t.fact.text, f.fact.text) for f in forecasts))]
    return [*counts, *(t for t in leading if t not in counts)] if counts else leading


def _rivals(scored: list[_Scored], lead: _Scored, part: str) -> list[Fact]:
    """Sentences of other sources than those chosen, with figures the lead does not give,
    answering the part nearly as well as the lead (`RIVAL_SHARE`), best first; at most
    `MAX_LEADS` with the lead."""
    out = [lead.fact]
    for candidate in sorted((t for t in scored if t.fact is not lead.fact), key=lambda t: (-t.alone, t.order)):
        if len(out) >= MAX_LEADS or candidate.alone < CLOSE_RIVAL_SHARE * lead.alone:
            break
        fact = candidate.fact
        if candidate.alone < RIVAL_SHARE * lead.alone and not close_rival(fact.text, lead.fact.text):
            continue
        if gives_only_differences(fact.text) and not asks_change(part):
            continue  # a difference is no rival to a level
        if a_part_of(fact.text, lead.fact.text):
            continue  # a part of the quantity is no rival estimate of it
        if qualified_otherwise(fact.text, part):
            continue  # onshore beside offshore, a fleet's total beside a year's additions
        if fact.source_id not in {f.source_id for f in out} and figures(fact.text) - figures(lead.fact.text):
            out.append(fact)
    return out[1:]


def series(facts: list[Fact], part: str, lead: Fact, score: Scorer,
           authority: dict[str, float] | None = None) -> dict[str, Fact]:
    """For a part asking how something went over a span of years ("from 2021 to 2025"):
    the verified sentence giving the lead's quantity in each year of the span, by year.
    Last year to first, each year's is the most authoritative source's level dated that
    year within `CLOSE_FACTOR` of the year after's (a series moves by steps: 2021's
    182,400 visits are no level of 2025's 451,300, but are of 2022's 311,900), about the
    subject asked. A statistics office gives the years in a table and only the last in
    prose (`extraction.table_readings`). Empty when the part names no span."""
    years = span_years(part)
    if len(years) < 2:
        return {}
    wanted = content_words(part)
    weight = authority or {}
    near, out = lead.text, dict[str, Fact]()
    for year in reversed(years):
        levels = [f for f in facts if f.text not in {g.text for g in out.values()}
                  and level_of_year(f.text, near, year) and not score.other_subject(f.text, part)]
        if levels:  # ties: the first found (max keeps it)
            out[year] = max(levels, key=lambda f: (weight.get(f.source_id, 0.0), len(content_words(f.text) & wanted)))
            near = out[year].text
    return {year: out[year] for year in years if year in out}


def dedupe(facts: list[Fact]) -> list[Fact]:
    """One fact per sentence, the first kept."""
    return list({f.text: f for f in reversed(facts)}.values())[::-1]
