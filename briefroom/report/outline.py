"""The report's shape, decided in code: a section per part of the question.

Each section opens with the best verified figure(s) for its part: verbatim sentences
from retrieved sources, ranked by how much of the part (and of the question) they
say. Where two sources give different figures for the same thing, both stand side by
side with who says them. A part nothing retrieved speaks to says "the documents do not
say" instead of a guess. The model's own sentences follow, in the section whose part
they speak to. Key figures keep only facts relevant to the question.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from briefroom.protocol.extraction import content_words, numbers_in, relevance, stemmed_words
from briefroom.records import Claim, DraftSection, Fact, ReportDraft, WriterDraft
from briefroom.report.language import heading_for, labels, language_of, question_parts

# A fact must hold this share of its part's (and question's) words to answer the part.
ANSWERS_PART = 0.4
# Facts scoring within this share of the best one are rivals: shown side by side.
RIVAL_SHARE = 0.93
MAX_LEADS = 3
MAX_KEY_FIGURES = 4
# The model's own sentences join a section when they score this share of its lead.
MODEL_SHARE = 0.95
# Key figures are facts that speak to the whole question at least this well.
KEY_FIGURE = 0.5
_TOKEN = re.compile(r"[A-Za-z][A-Za-z-]+")
# A part that asks for someone: a sentence naming someone answers it better.
_WHO = re.compile(r"\s*(?:who\b|谁|哪家)", re.I)
# Years in a part pick the facts of that year over those of another.
_YEAR = re.compile(r"(?<!\d)(?:19|20)\d{2}(?!\d)")


def allowed_years(question: str) -> set[str]:
    """The years a question is about: those it names, and every year between two it names."""
    years = sorted(int(y) for y in _YEAR.findall(question))
    if len(years) >= 2:
        return {str(y) for y in range(years[0], years[-1] + 1)}
    return {str(y) for y in years}


def about_other_years(text: str, question: str, title: str = "") -> bool:
    """A sentence that names years, none of them the question's, is about another time.
    One that names none ("that year the fastest-growing type was…") is about its
    document's time, when the document's title names one."""
    wanted = allowed_years(question)
    named = set(_YEAR.findall(text)) or set(_YEAR.findall(title))
    return bool(wanted and named and not named & wanted)


def _figures(text: str) -> set[str]:
    """The numbers of a sentence that are not years."""
    return {n for n in numbers_in(text) if not _YEAR.fullmatch(n)}


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

    def __init__(self, question: str, parts: list[str], texts: list[str], embed: Embed | None = None):
        self.question = question
        self.names = proper_names(texts)
        self.asked = {w.lower() for w in _TOKEN.findall(question)}
        # the names the question asks about: capitalised inside it ("in Port Karavel")
        self.asked_names = {m.group(0).lower() for n, m in enumerate(_TOKEN.finditer(question))
                            if n > 0 and m.group(0)[0].isupper()}
        self.semantic: dict[tuple[str, str], float] = {}
        if embed is not None and language_of(question) == "en" and texts:
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
        found = set(_YEAR.findall(text))
        if set(_YEAR.findall(part)) & found:
            score += 0.15
        elif set(_YEAR.findall(question)) & found:
            score += 0.05  # the question's year, for a part that names none: a weaker hint
        return score


    def other_subject(self, text: str) -> bool:
        """The sentence is about someone else: it opens with a name the question does not
        use ("Estmark, Norvalia's neighbour, added…"), or it names others and none of the
        names the question asks about ("the cost … in Velmora was…" for Port Karavel)."""
        first = _TOKEN.match(text.lstrip("“\"'( "))
        if first and first.group(0) in self.names and first.group(0).lower() not in self.asked:
            return True
        named = {w.lower() for w in _TOKEN.findall(text) if w in self.names}
        return bool(self.asked_names and named and not named & self.asked_names)


def proper_names(texts: list[str]) -> set[str]:
    """Capitalised words that are names in these texts: written capitalised inside a
    sentence somewhere, and never in lower case (so "Installers" or "Worldwide" opening a
    sentence are not names, "Sweden" and "Estmark" are)."""
    inner: set[str] = set()
    lower: set[str] = set()
    for text in texts:
        for n, m in enumerate(_TOKEN.finditer(text)):
            word = m.group(0)
            opening = n == 0 or text[max(0, m.start() - 2):m.start()].strip() in (".", "“", "\"")
            # an opening word is a name when a comma or "'s" follows it ("Estmark, …", "Norvalia's …")
            if word[0].isupper() and (not opening or text[m.end():m.end() + 2] in (", ", "'s", "’s")):
                inner.add(word)
            elif word[0].islower():
                lower.add(word)
    return {w for w in inner if w.lower() not in lower and len(w) >= 3}


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))  # the embedder's vectors are unit length


_WANTS_FIGURE = re.compile(r"\bhow (?:many|much|big|large|fast|high|low)\b|\bby how\b|\bwhat (?:was|is|were|are|will) "
                           r"the (?:number|share|total|average|size|cost|price|capacity|rate|value|level)\b|"
                           r"多少|几|规模|比例|增长了|增速", re.I)


def wants_figure(part: str) -> bool:
    """"How many…", "by how much", "…是多少": only a sentence with a figure answers it."""
    return bool(_WANTS_FIGURE.search(part))


# A question about money is answered by an amount of money, not by the volume, count or
# share a sentence on the same subject gives ("71 million cubic metres" is not a cost).
_ASKS_MONEY = re.compile(r"\b(?:costs?|price[sd]?|spend(?:ing)?|spent|revenues?|tariffs?|fees?|paid|invest(?:ed|ment)?)\b|"
                         r"成本|价格|费用|收入|营收|投资|花费|多少钱", re.I)
_MONEY = re.compile(r"[$€£¥₹]|\b(?:USD|EUR|GBP|CNY|RMB|JPY|dollars?|euros?|cents?|yuan|yen)\b|元", re.I)


# Money measures that are not interchangeable: a household tariff is not what water
# costs to produce, sales are not spending. A sentence answers a money question only
# with the measure the question names (or a word for the same measure).
_MEASURES = [re.compile(p, re.I) for p in (
    r"\bcost(?:s|ing)?\b|\bexpenses?\b|成本",
    r"\bpric(?:e|es|ed|ing)\b|\btariffs?\b|\bfees?\b|\bcharged?\b|价格|电价|票价|收费",
    r"\brevenues?\b|\bsales\b|\bturnover\b|\bincome\b|收入|营收",
    r"\bspen(?:d|ding|t)\b|\bexpenditures?\b|支出|花费",
    r"\binvest(?:ed|ment|ments)?\b|投资",
)]


def wants_money(part: str) -> bool:
    return bool(_ASKS_MONEY.search(part))


def same_measure(text: str, part: str) -> bool:
    """The sentence speaks of the money measure the part asks about (if it names one)."""
    asked = [m for m in _MEASURES if m.search(part)]
    return not asked or any(m.search(text) for m in asked)


def states_money(text: str) -> bool:
    return bool(_MONEY.search(text))


def is_statement(text: str) -> bool:
    """A sentence, not a heading or caption that lost its markup."""
    return text.rstrip(" ”\"'）)").endswith((".", "!", "?", "。", "！", "？")) or len(text.split()) >= 12


def may_answer(text: str, part: str, question: str, title: str = "") -> bool:
    """A statement, with a figure where the part asks for one, about the question's time."""
    asked = part if content_words(part) else question  # a bare "by how much" borrows the question's subject
    figure = wants_figure(part) or wants_figure(asked)
    if figure and wants_money(asked) and not (states_money(text) and same_measure(text, asked)):
        return False
    return is_statement(text) and (bool(_figures(text)) or not figure) and not about_other_years(text, question,
                                                                                                  title)


def _leads(facts: list[Fact], part: str, score: Scorer, titles: dict[str, str], used: set[str]) -> list[Fact]:
    """The best verified sentence(s) for a part: the top one, and any rival from another
    source that scores nearly as well but gives other figures."""
    question = score.question
    scored = sorted(((score(f.text, part) + (0.05 if f.confirmed_by else 0.0), n, f)
                     for n, f in enumerate(facts)
                     if f.text not in used and may_answer(f.text, part, question, titles.get(f.source_id, ""))
                     and not score.other_subject(f.text)),
                    key=lambda t: (-t[0], t[1]))
    if not scored or scored[0][0] < ANSWERS_PART:
        return []
    best_score, _, best = scored[0]
    leads = [best]
    for value, _, fact in scored[1:]:
        if len(leads) >= MAX_LEADS or value < max(ANSWERS_PART, RIVAL_SHARE * best_score):
            break
        if fact.source_id != best.source_id and _figures(fact.text) != _figures(best.text):
            leads.append(fact)
    return leads


def _quote(fact: Fact, attribution: str | None = None) -> Claim:
    return Claim(text=f"“{fact.text}”", source_ids=[fact.source_id], attribution=attribution)


def _is_title(text: str) -> bool:
    """A title names a subject; a sentence with figures is a claim, not a title."""
    words = text.split()
    return 2 <= len(words) <= 16 and not text.rstrip().endswith((".", "。")) and not _figures(text) \
        and len(text) <= 120


def outline(draft: WriterDraft, facts: list[Fact], question: str,
            titles: dict[str, str] | None = None, embed: Embed | None = None) -> ReportDraft:
    """Rebuild the model's draft around the question's parts (see the module docstring)."""
    lab = labels(question)
    titles = titles or {}
    parts = question_parts(question)
    model_claims = [c for s in draft.sections for c in s.claims]
    facts = list({f.text: f for f in reversed(facts)}.values())[::-1]  # one per sentence, first kept
    score = Scorer(question, parts, [f.text for f in facts] + [c.text for c in model_claims], embed)
    used: set[str] = set()
    sections: list[DraftSection] = []
    for part in parts:
        leads = _leads(facts, part, score, titles, used)
        claims: list[Claim] = []
        if not leads:
            claims.append(Claim.model_construct(text=lab["not_said"], source_ids=[]))
        elif len(leads) > 1:
            claims.append(Claim.model_construct(text=lab["sources_differ"], source_ids=[]))
            claims += [_quote(f, titles.get(f.source_id)) for f in leads]
        else:
            claims.append(_quote(leads[0]))
        used.update(f.text for f in leads)
        if leads:  # the model's sentences that speak to this part as well as its lead does
            bar = max(ANSWERS_PART, MODEL_SHARE * score(leads[0].text, part))
            mine = sorted((c for c in model_claims if c.text not in used and c.source_ids
                           and may_answer(c.text, part, question) and not score.other_subject(c.text)
                           and score(c.text, part) >= bar),
                          key=lambda c: -score(c.text, part))
            for claim in mine[:3]:
                used.add(claim.text)
                claims.append(claim)
        heading = heading_for(part) if len(parts) > 1 else lab["findings"]
        sections.append(DraftSection.model_construct(heading=heading if len(heading.strip()) >= 2 else
                                                     lab["findings"], claims=claims))
    short = draft.short_answer
    first = next((c for c in sections[0].claims if c.source_ids), None)
    if first is None:  # nothing retrieved answers the first part: say so rather than guess
        short = Claim.model_construct(text=lab["no_answer"], source_ids=[])
    elif not _figures(first.text) & _figures(short.text):
        short = first  # the model's answer does not give the best figure: the figure answers instead
    relevant = [f for f in facts if f.text not in used and _figures(f.text) and is_statement(f.text)
                and not score.other_subject(f.text)
                and not about_other_years(f.text, question, titles.get(f.source_id, ""))
                and score(f.text, question) >= KEY_FIGURE]
    figures = [_quote(f) for f in relevant[:MAX_KEY_FIGURES]]
    title = draft.title if _is_title(draft.title) else heading_for(question)
    if len(title.strip()) < 3:  # a question of a word or two ("0"): the report still needs a title
        title = f"{lab['findings']}: {question.strip()}"[:120]
    return ReportDraft.model_construct(title=title, short_answer=short, sections=sections, key_figures=figures)
