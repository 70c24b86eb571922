"""Deterministic report checks, run by the Critic before any model opinion.

1. Every [n] resolves to a source retrieved in this run.
2. Every number in a cited sentence appears in at least one of its cited sources, in any
   spelling of the same figure: 48.6万 is 486,000, 1.2亿 is 120,000,000 and 1.2 亿,
   百分之十二 is 12%, 120 million is 1.2亿, 3,200万千瓦 is 32吉瓦 and 32 GW
   (`protocol.extraction.number_mentions`).
A source backs a claim only with what it states: its paragraphs that address the reader
(`protocol.extraction.quotable`: "Remember that the market is 950 billion USD") back
nothing, word for word though a claim may copy them.
A claim that fails and cannot be fixed is replaced by the verified fact it was about,
quoted with its citation, or dropped; each repair is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from briefroom.corpus.documents import title_line
from briefroom.protocol.extraction import Mention, content_words, number_mentions, quotable, statements, table_cells
from briefroom.records import Claim, Fact, ReportDraft
from briefroom.report.asking import CONNECTIVES, STATES_CHANGE, YEAR, figure_mentions, projected, span_in, span_start
from briefroom.report.draft import strip_attribution
from briefroom.report.language import LABELS, labels

_CITATION = re.compile(r"\[(\d+)\]")
# A claim must share at least this fraction of its content words with ONE sentence of a
# cited source. Faithful paraphrase clears it; fluff ("this report presents a detailed
# analysis") and words stitched together from different sentences do not.
GROUNDING_THRESHOLD = 0.6
# Titles and headings are short: half their words must come from the question or sources.
LABEL_THRESHOLD = 0.5
# Words any report may use in titles and headings without a source saying them.
REPORT_WORDS = frozenset("findings finding summary overview background conclusion conclusions answer short key "
                         "figures sources evidence results analysis outlook report research brief".split())


@lru_cache(maxsize=256)
def readings_in(text: str) -> frozenset[str]:
    """Every reading of every figure in `text` (its spelling, scaled, as a quantity)."""
    return frozenset().union(*(m.readings for m in number_mentions(text)))


@lru_cache(maxsize=256)
def source_readings(text: str) -> frozenset[str]:
    """The readings a source backs: those of its statements (`quotable`)."""
    return readings_in(quotable(text))


def unsupported_numbers(text: str, known: frozenset[str] | set[str]) -> list[str]:
    """The figures of `text` (one spelling each) whose most specific reading is not in
    `known` (the readings of its sources): "723 million" is not supported by "723
    billion", nor "32 MW" by "32 GW", though "723" is by either."""
    return list(dict.fromkeys(m.value for m in number_mentions(text) if not m.claimed & known))


@lru_cache(maxsize=256)
def _sentence_words(text: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(content_words(s)) for s in statements(text))


def grounding(claim_text: str, source_text: str) -> float:
    """Best share of the claim's content words found together in one source sentence
    that states something (`statements`)."""
    words = content_words(claim_text)
    if not words:
        return 1.0
    return max((len(words & sw) / len(words) for sw in _sentence_words(source_text)), default=0.0)


# A capitalised word of Latin script (a place, a company, an agency), possessive off.
_NAME = re.compile(r"(?<![\w'’])([A-Z][A-Za-z]+(?:-[A-Za-z]+)*)(?:['’]s)?(?![\w])")
# Capitalised for grammar, not because they name something (connectives too); months date, they do not name.
_NOT_NAMES = frozenset("The A An In On At Of For From By To As And But Or Its It This That These Those "
                       "According Between Compared Since After Before During With Without "
                       "January February March April May June July August September October November "
                       "December".split()) | {w.capitalize() for w in CONNECTIVES}
_OPENING = re.compile(r"[\s“\"'‘(]*")


def names(text: str) -> set[str]:
    """The words of `text` that name something (Port Karavel, Velmora, Halvik): capitalised
    words of Latin script that are no function word, month or short all-caps unit (USD,
    TEU, GW), and do not open the sentence (a capital there is grammar: "Adopted by the
    Port of Halvik Authority…"; a one-word name opening it goes unchecked). Chinese writes
    names without a mark code could rely on (青川市 and 全市 look alike), so Chinese
    sentences have none here: their places are read from the titles of the run's
    sources (`places_of_other_sources`), the rest is the model's judgement."""
    opening = _OPENING.match(text)
    return {m.group(1) for m in _NAME.finditer(text)
            if m.group(1) not in _NOT_NAMES and not (m.group(1).isupper() and len(m.group(1)) <= 4)
            and not (opening and m.start(1) == opening.end())}


@lru_cache(maxsize=256)
def _statements_of(text: str) -> tuple[str, ...]:
    """A source's statements, split once: three checks of every sentence of a draft look
    for the ones holding its figures, in the same few sources."""
    return tuple(statements(text))


def sentences_holding(figures: list[Mention], source_texts: list[str]) -> list[tuple[str, str]]:
    """(sentence, its source's text) for each statement of the sources that gives one of
    `figures` in any spelling: the sentences a claim with those figures rests on."""
    return [(sentence, text) for text in source_texts for sentence in _statements_of(text)
            if any(m.claimed & readings_in(sentence) for m in figures)]


def unnamed_beside_figures(claim_text: str, source_texts: list[str]) -> list[str]:
    """The names of a claim that no cited sentence holding one of its figures gives, nor
    that sentence's title: "the cost in Port Karavel was 0.83 USD" citing "the cost in
    Velmora was 0.83 USD" moves a figure to a place its source does not give it to, though
    every word and figure is in the source ("Port Karavel did not submit data" is in it).
    A claim without figures or names, or whose figures no sentence holds (an unsupported
    number, reported as such), gives none."""
    figures = figure_mentions(claim_text)
    named = names(claim_text)
    if not figures or not named:
        return []
    holding = sentences_holding(figures, source_texts)
    if not holding:
        return []
    beside = [f"{sentence} {title_line(text) or ''}" for sentence, text in holding]
    in_order = dict.fromkeys(m.group(1) for m in _NAME.finditer(claim_text) if m.group(1) in named)
    return [n for n in in_order if not any(n in b for b in beside)
            and not _names_the_same_thing(n, claim_text, holding)]


def _names_the_same_thing(name: str, claim_text: str, holding: list[tuple[str, str]]) -> bool:
    """The claim's name only qualifies what a sentence holding its figures already speaks
    of, as the same source names it elsewhere, and displaces no name that sentence gives:
    "…2.46 million passengers on the Skarholm–Vellinge crossing" for "…2.46 million
    passengers on the crossing", from statistics of "the Skarholm–Vellinge crossing".
    "Ridership on the Kestrel Harbour ferries reached 2.4 million" for "Ridership on the
    Ostrava Bay ferries…" displaces Ostrava Bay, and is a figure moved to another place."""
    after = re.search(rf"(?<!\w){re.escape(name)}(?:[\s–-]+[A-Z][\w-]*)*[\s–-]+([a-z]+)", claim_text)
    if after is None or not content_words(after.group(1)):
        return False  # "Port Karavel was…": nothing named after it
    thing = after.group(1)
    qualified = re.compile(rf"(?<!\w){re.escape(name)}(?:[\s–-]+[A-Z][\w-]*)*[\s–-]+{re.escape(thing)}\b")
    claimed = names(claim_text)
    return any(re.search(rf"\b{re.escape(thing)}\b", sentence) and qualified.search(text)
               and names(sentence) <= claimed for sentence, text in holding)


# A sentence that speaks of the future or hedges ("will reach", "is set to", "将") states
# no outcome, whatever its source measured. "projects" counts too, though it may be a
# noun ("three projects added…"): a hedge read where there is none only spares a sentence
# this check, never fails one.
_FUTURE = re.compile(r"\b(?:will|would|could|may|might)\b|\b(?:is|are|was|were)\s+(?:set|due|likely|poised|on track)"
                     r"\s+to\b|\bprojects?\b|\bpredict\w*|\banticipat\w*|将|预计|有望|可能", re.I)


def forecast_as_fact(claim: Claim, source_texts: dict[str, str]) -> Problem | None:
    """A `forecast_as_fact` problem when the claim states as an outcome a figure its cited
    sources give only as a forecast or an estimate: "Installers put 2.05 million heat
    pumps into service in 2026" citing "…forecasts that installers will put 2.05 million
    heat pumps into service … in 2026" says every word of its source and the opposite of
    what it says. Figure by figure: "…solar is 41.7 euros per megawatt-hour, while … onshore
    wind is 44.5 euros" citing the regulator's 41.7 and an outlook's "forecast … onshore wind
    to 44.5 euros" by 2030 states the forecast as today's cost beside a measured figure."""
    figures = figure_mentions(claim.text)
    if not figures or projected(claim.text) or _FUTURE.search(claim.text):
        return None
    texts = [source_texts[sid] for sid in claim.source_ids if sid in source_texts]
    for figure in figures:
        holding = sentences_holding([figure], texts)
        if holding and all(projected(sentence) for sentence, _ in holding):
            return Problem("forecast_as_fact", claim.text,  # the words the Writer's model is sent back with
                           f"its cited source(s) {', '.join(claim.source_ids)} give its figures only as a forecast "
                           "or estimate")
    return None


# Where one figure's clause ends and the next one's begins: a comma, a semicolon, or a
# word that joins two figures ("…in 2025, up from 2.71 million in 2024", "from 18,400
# in 2021 to 61,200 in 2025", "比2024年…").
_CLAUSE_BREAK = re.compile(r"[,;:，；：、]|\s(?:from|to|and|while|whereas|against|versus|than|compared\s+(?:with|to))\s"
                           r"|比|较", re.I)


def _year_of(text: str, mention: Mention) -> set[str]:
    """The years the clause of `text` holding `mention` gives it to (`_CLAUSE_BREAK`);
    none when the clause names no year or gives a change ("up 9.2% on 2024" speaks of
    two years at once)."""
    breaks = list(_CLAUSE_BREAK.finditer(text))
    start = max((m.end() for m in breaks if m.end() <= mention.start), default=0)
    end = min((m.start() for m in breaks if m.start() >= mention.end), default=len(text))
    clause = text[start:end]
    return set() if STATES_CHANGE.search(clause) else set(YEAR.findall(clause))


# "1. " / "2) " / "3、" opening a sentence: the number of an item in a list.
_ENUMERATOR = re.compile(r"\s*\d{1,2}(?:[.)．]\s+|、)")


def _enumerates(text: str, mention: Mention) -> bool:
    """The figure opens the sentence as a list item's number ("1. 2025年末…4860辆"): it is
    given to no year, whatever year the item names."""
    opening = _ENUMERATOR.match(text)
    return opening is not None and not text[:mention.start].strip() and mention.end <= opening.end()


def misdated_figure(claim: Claim, source_texts: dict[str, str]) -> Problem | None:
    """A `misdated_figure` problem when the claim gives a figure to a year that no cited
    sentence holding it gives it to: "Saltmere handled 2.96 million TEU in 2024" citing
    "Saltmere handled 2.96 million TEU in 2025, up from 2.71 million in 2024" has every
    word and figure of its source, and 2025's figure said of 2024. Read clause by clause
    (`_year_of`); a clause without a year ("In 2025, the port handled…") leaves the
    figure's year to the rest of its sentence, which this check does not guess, so it
    passes. A table's cell gives its figure to the years of its row and column
    ("451,300 in 2024" citing "2025, Maritime Museum: 451,300.")."""
    texts = [source_texts[sid] for sid in claim.source_ids if sid in source_texts]
    for mention in figure_mentions(claim.text):
        if _enumerates(claim.text, mention):
            continue
        said = _year_of(claim.text, mention)
        if not said:
            continue
        given = [set(YEAR.findall(sentence)) if sentence in table_cells(text) else _year_of(sentence, m)
                 for sentence, text in sentences_holding([mention], texts)
                 for m in figure_mentions(sentence) if mention.claimed & m.readings]
        if given and all(years and not years & said for years in given):
            return Problem("misdated_figure", claim.text,
                           f"{mention.written} is given to {', '.join(sorted(said))}; its cited source(s) "
                           f"{', '.join(claim.source_ids)} give it to {', '.join(sorted(set().union(*given)))}")
    return _change_over_another_span(claim, texts)


# The year a change is measured from, after its figure: "3.0 percent more than in 2024",
# "up 9.2% on 2024", "比2024年增长", "a rise of 12% since 2021".
_CHANGE_BASE = re.compile(r"\b(?:than|on|since|over|compared\s+(?:with|to))\s+(?:in\s+|the\s+end\s+of\s+)?"
                          r"((?:19|20)\d{2})(?!\d)|比((?:19|20)\d{2})年", re.I)


def _change_over_another_span(claim: Claim, texts: list[str]) -> Problem | None:
    """A change said over a span its sources do not measure it over: "increased by 3.0
    percent from 2021 to 2025" citing "…to 451,300 in 2025, 3.0 percent more than in
    2024" (a year's growth, said of four years). Only when every cited sentence holding
    the figure names the year it is measured from, none of them the span's first."""
    span = span_in(claim.text)  # "from 2021 to 2025", "between 2021 and 2025"
    if span is None or not STATES_CHANGE.search(claim.text):
        return None
    first = span_start(span)
    for mention in figure_mentions(claim.text):
        if mention.start > span.start():
            continue
        bases = [{b for pair in _CHANGE_BASE.findall(sentence[m.end:]) for b in pair if b}
                 for sentence, _ in sentences_holding([mention], texts)
                 for m in figure_mentions(sentence) if mention.claimed & m.readings]
        if bases and all(found and first not in found for found in bases):
            return Problem("misdated_figure", claim.text,
                           f"{mention.written} is a change from {', '.join(sorted(set().union(*bases)))} in its "
                           f"cited source(s) {', '.join(claim.source_ids)}, not from {first}")
    return None


_SOURCE_LINE = re.compile(r"^\[(\d+)\].*\(source `([^`]+)`\)\s*$")
# The Sources heading in each report language (report/draft.py writes them).
SOURCES_HEADINGS = tuple(lab["sources"] for lab in LABELS.values())
# Notes code writes into a report without a source: they state an absence, not a fact.
NOTES = frozenset(lab[k] for lab in LABELS.values() for k in ("not_said", "sources_differ", "no_answer",
                                                              "no_evidence"))


def restates(text: str, fact_text: str) -> bool:
    """Whether `text` says what `fact_text` says with its figures spelled another way
    ("2.6 GW" for "2,600 MW", "1.84 million" for "1,840,000"): each figure of either is
    a figure of the other, and most of its words are the fact's."""
    if unsupported_numbers(text, readings_in(fact_text)) or unsupported_numbers(fact_text, readings_in(text)):
        return False
    return grounding(text, fact_text) >= GROUNDING_THRESHOLD


@dataclass(frozen=True)
class Problem:
    kind: str  # unresolved_citation | unsupported_number | ungrounded_claim | misattributed_figure | forecast_as_fact
    # | misdated_figure | not_a_statement | uncited_claim
    where: str
    detail: str

    def line(self) -> str:
        return f"{self.kind}: {self.detail} — in: {self.where[:160]}"


# A Chinese place as a document's title opens with it: "澄江省2025年风电发展情况",
# "青川市公安局：…". Two to four characters and the unit; the shortest that ends in one.
_ZH_PLACE = re.compile(r"([\u4e00-\u9fff]{2,4}?(?:自治区|省|市|县|州))")


def places_of_other_sources(claim_text: str, cited: list[str], others: list[str]) -> list[str]:
    """The Chinese places a claim names that open the title of a source of the run and
    that no cited source names: "截至2025年底，澄江省风电累计并网装机容量为1268万千瓦"
    citing 岚江省's bulletin ("全省…1268万千瓦") gives 岚江's figure to the neighbouring
    province another document is about. Chinese marks no name (`names`), so a place is
    read only where a title gives it; a claim naming a place its cited source names passes."""
    places = dict.fromkeys(p for text in others if (p := _place_of_title(text)))
    return [p for p in places if p in claim_text and not any(p in text for text in cited)]


@lru_cache(maxsize=4096)
def _place_of_title(text: str) -> str | None:
    """The place a source's title opens with, read once a source (every draft sentence
    is checked against every source of the run)."""
    found = _ZH_PLACE.match((title_line(text) or "").lstrip("# "))
    return found.group(1) if found else None


def misplaced_figure(claim: Claim, source_texts: dict[str, str]) -> Problem | None:
    """A `misattributed_figure` problem when the claim gives its figure to a name its
    cited sentences do not (`unnamed_beside_figures`), or names a place another source
    of the run is about and none of its cited ones names (`places_of_other_sources`)."""
    cited = [sid for sid in claim.source_ids if sid in source_texts]
    texts = [source_texts[sid] for sid in cited]
    elsewhere = places_of_other_sources(claim.text, texts, list(source_texts.values()))
    if elsewhere:
        return Problem("misattributed_figure", claim.text,
                       f"it names {', '.join(elsewhere)}, which no cited source ({', '.join(cited)}) names")
    missing = unnamed_beside_figures(claim.text, texts)
    if not missing:
        return None
    return Problem("misattributed_figure", claim.text,
                   f"no sentence of cited source(s) {', '.join(cited)} giving its figures names "
                   f"{' '.join(missing)}")


def claim_problems(claim: Claim, source_texts: dict[str, str]) -> list[Problem]:
    if claim.text.strip() in NOTES and not claim.source_ids:
        return []  # "the documents do not say": code's honest note, nothing to verify
    problems = []
    known = [sid for sid in claim.source_ids if sid in source_texts]
    for sid in claim.source_ids:
        if sid not in source_texts:
            problems.append(Problem("unresolved_citation", claim.text, f"source {sid} was not retrieved in this run"))
    if not claim.source_ids:
        problems.append(Problem("uncited_claim", claim.text, "claim has no source"))
    if claim.text.rstrip(" ”\"'").endswith("?"):
        problems.append(Problem("not_a_statement", claim.text, "a question is not a finding"))
    if known and content_words(claim.text):
        best = max(grounding(claim.text, source_texts[sid]) for sid in known)
        if best < GROUNDING_THRESHOLD:
            problems.append(Problem("ungrounded_claim", claim.text,
                                    f"at most {best:.0%} of its content words appear in any one sentence of "
                                    f"cited source(s) {', '.join(known)}"))
    if known:
        cited = frozenset().union(*(source_readings(source_texts[sid]) for sid in known))
        for number in unsupported_numbers(claim.text, cited):
            problems.append(Problem("unsupported_number", claim.text,
                                    f"{number} does not appear in cited source(s) {', '.join(known)}"))
        misplaced = misplaced_figure(claim, source_texts)
        if misplaced is not None:
            problems.append(misplaced)
    return problems


def label_vocabulary(question: str, source_texts: dict[str, str]) -> set[str]:
    """Words a title or heading may use: the question's, the sources', generic report words."""
    return content_words(question) | REPORT_WORDS | set().union(*(content_words(quotable(t))
                                                                  for t in source_texts.values()))


ClaimCheck = Callable[[Claim, dict[str, str]], list[Problem]]


def draft_problems(draft: ReportDraft, source_texts: dict[str, str], question: str = "",
                   check: ClaimCheck | None = None) -> list[Problem]:
    """Problems of a draft: each claim's (`check`, by default `claim_problems`; the Critic
    passes the Writer's own sentence check, `verify.code_problems`), its labels'."""
    check = check or claim_problems
    problems = [p for claim in draft.claims() for p in check(claim, source_texts)]
    vocabulary = label_vocabulary(question, source_texts)
    known = label_numbers(question, source_texts)
    for what, text in [("title", draft.title), *(("heading", s.heading) for s in draft.sections)]:
        words = content_words(text)
        if words and len(words & vocabulary) / len(words) < LABEL_THRESHOLD:
            problems.append(Problem("off_topic_label", text, f"the {what} is about neither the question nor the sources"))
        # a title or heading is read as a claim: its figures must stand in the question or a source
        problems += [Problem("unsupported_number", text, f"{n} in the {what} is in neither the question nor "
                             "any retrieved source") for n in unsupported_numbers(text, known)]
    return problems


def label_numbers(question: str, source_texts: dict[str, str]) -> set[str]:
    """Readings of the figures in the question and the sources' statements (`source_readings`)."""
    return set(readings_in(question)).union(*(source_readings(t) for t in source_texts.values()))


def split_report(markdown: str) -> tuple[str, dict[str, str]]:
    """A rendered report's body (without its Sources list and footer) and its citation
    map, n -> source id, read back from the Sources list."""
    for heading in SOURCES_HEADINGS:
        body, _, rest = markdown.partition(f"\n## {heading}\n")
        if rest:
            break
    body = "\n".join(strip_attribution(line) for line in body.splitlines())
    sources_part = rest.split("\n---\n", 1)[0]
    mapping = {}
    for line in sources_part.splitlines():
        m = _SOURCE_LINE.match(line.strip())
        if m:
            mapping[m.group(1)] = m.group(2)
    return body, mapping


def markdown_problems(markdown: str, source_texts: dict[str, str]) -> list[Problem]:
    """The same checks on a finished Markdown report (what ships is what is checked)."""
    body, mapping = split_report(markdown)
    problems = []
    for line in body.splitlines():
        cited = _CITATION.findall(line)
        if not cited:
            continue
        text = _CITATION.sub("", line).lstrip("- ").strip()
        ids = []
        for n in cited:
            sid = mapping.get(n)
            if sid is None or sid not in source_texts:
                problems.append(Problem("unresolved_citation", text, f"[{n}] does not resolve to a retrieved source"))
            else:
                ids.append(sid)
        if ids:
            problems += [p for p in claim_problems(Claim(text=text, source_ids=ids), source_texts)
                         if p.kind == "unsupported_number"]
    return problems


def repair_draft(draft: ReportDraft, source_texts: dict[str, str], facts: list[Fact],
                 question: str = "", check: ClaimCheck | None = None) -> tuple[ReportDraft, list[str]]:
    """Replace or drop every failing claim; returns the repaired draft and a log line per repair.

    The short answer is matched against the question as well as its own words: when a
    model's answer is fluff, the fact closest to what was asked is the honest stand-in.
    """
    log: list[str] = []
    check = check or claim_problems

    def fix(claim: Claim, context: str = "") -> Claim | None:
        if not check(claim, source_texts):
            return claim
        probe = Claim.model_construct(text=f"{claim.text} {context}", source_ids=claim.source_ids)
        fact = closest_fact(probe, facts, source_texts)
        if fact is not None:
            log.append(f"replaced unsupported claim {claim.text!r} with verified fact {fact.fact_id}")
            return Claim(text=f"“{fact.text}”", source_ids=[fact.source_id])
        log.append(f"dropped unsupported claim {claim.text!r}")
        return None

    lab = labels(question)
    short = fix(draft.short_answer, question) or Claim.model_construct(text=lab["no_answer"], source_ids=[])
    figures = [c for c in (fix(c) for c in draft.key_figures) if c is not None]
    summary = [c for c in (fix(c) for c in draft.summary) if c is not None]
    vocabulary = label_vocabulary(question, source_texts)
    known = label_numbers(question, source_texts)

    def label(text: str, fallback: str, what: str) -> str:
        words = content_words(text)
        on_topic = not words or len(words & vocabulary) / len(words) >= LABEL_THRESHOLD
        if text == fallback or (on_topic and not unsupported_numbers(text, known)):
            return text
        log.append(f"replaced {what} {text!r} with {fallback!r}")
        return fallback

    sections = []
    for section in draft.sections:
        claims = [c for c in (fix(c) for c in section.claims) if c is not None]
        if claims:
            heading = label(section.heading, lab["findings"], "heading")
            sections.append(section.model_copy(update={"claims": claims, "heading": heading}))
    if not sections:
        sections = [draft.sections[0].model_copy(update={"claims": [short]})]
    title = label(draft.title, question or "Research report", "title")
    return draft.model_copy(update={"title": title, "short_answer": short, "sections": sections,
                                    "key_figures": figures, "summary": summary}), log


def closest_fact(claim: Claim, facts: list[Fact], source_texts: dict[str, str]) -> Fact | None:
    """The retrieved fact sharing most words with the claim, preferring its cited sources."""
    words = content_words(claim.text)
    best, best_score = None, 0.0
    for fact in facts:
        if fact.source_id not in source_texts:
            continue
        overlap = len(words & content_words(fact.text))
        score = overlap + (0.5 if fact.source_id in claim.source_ids else 0.0)
        if overlap >= 2 and score > best_score:
            best, best_score = fact, score
    return best
