"""The report's shape: a title, a short answer, an executive summary, a section per part
of the question, what the documents do not say, and (in the footer) how it was made.

The Writer's model writes the prose and says which part each section answers; its
sentences arrive here already verified (`report.verify`). Code adds what a reader must
be able to trust whatever model wrote it:

- the short answer gives the most authoritative figure for the measure the first part
  asks about (`outline.leads`), not whatever the model opened with;
- a part the prose left empty gets the verified sentence that answers it, quoted, or
  goes under "What the documents do not say";
- figures that differ stand side by side, each with who gives it and what kind of
  source that is; an opinion's or a pitch's figure is labelled an estimate wherever it
  is cited;
- headings are whole phrases; the length follows `--report` and `--words`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from briefroom.protocol.extraction import content_words, folded, is_cjk
from briefroom.records import MAX_PARTS, Claim, DraftSection, Fact, ReportDraft, SourceRecord, WriterDraft
from briefroom.report.asking import (
    YEAR,
    about_the_report,
    answers_comparison,
    answers_measure,
    asks_change,
    asks_why,
    base_level,
    counts_what_is_asked,
    dated_year,
    figures,
    gives_only_differences,
    holds_table,
    is_title,
    labels_the_report,
    levels_of,
    measured_apart,
    measures_in,
    only_labels,
    projected,
    restates_question,
    states_share,
    wants_share,
)
from briefroom.report.checks import REPORT_WORDS
from briefroom.report.draft import bare_text
from briefroom.report.language import LABELS, question_scope, short_heading, whole_phrase
from briefroom.report.outline import (
    ANSWERS_PART,
    Embed,
    Scorer,
    dedupe,
    documents_by_title,
    may_answer,
    part_leads,
    series,
)
from briefroom.report.repeats import Says, new_sentences, without_repeats
from briefroom.report.source_kinds import SourceProfile
from briefroom.report.spec import ReportShape, ReportSpec
from briefroom.report.verify import anchor, echoes_feedback

# Words a model's heading may consist of and still say nothing of its part ("Findings,
# part 2"): such a heading gives way to the part's own words.
_GENERIC = REPORT_WORDS | {"part", "section", "details", "discussion", "information"}


# A question of at most this many words is the report's title as it stands.
TITLE_WORDS = 24
def word_count(text: str) -> int:
    """Words as a reader counts them; Chinese, which has no spaces, at two characters a word."""
    if is_cjk(text):
        return max(1, sum(1 for ch in text if "\u3400" <= ch <= "\u9fff") // 2)
    return len(text.split())


def quote(fact: Fact, attribution: str | None = None) -> Claim:
    return Claim(text=f"“{fact.text}”", source_ids=[fact.source_id], attribution=attribution)


class Labeller:
    """Who says a cited sentence, in the report's words: the source's title and kind; an
    estimate when every source it cites is an opinion or marketing."""

    def __init__(self, sources: dict[str, SourceRecord], profiles: dict[str, SourceProfile], language: str):
        self.sources, self.profiles, self.language = sources, profiles, language
        self.lab = LABELS[language]

    def unverified(self, claim: Claim) -> bool:
        found = [self.profiles[s] for s in claim.source_ids if s in self.profiles]
        return bool(found) and all(p.unverified for p in found)

    def who(self, sid: str) -> str:
        title = self.sources[sid].title if sid in self.sources else sid
        profile = self.profiles.get(sid)
        if profile is None:
            return title
        key = "estimate" if profile.unverified else "says"
        return self.lab[key].format(title=title, kind=profile.label(self.language))

    def labelled(self, claim: Claim, rival: bool = False) -> Claim:
        """The claim with its attribution: for a rival figure always (who gives it), for
        any other sentence only when it rests on an estimate alone."""
        if not claim.source_ids or not (rival or self.unverified(claim)):
            return claim
        return claim.model_copy(update={"attribution": self.who(claim.source_ids[0])})

    def beside(self, claim: Claim, lead: Fact) -> Claim:
        """A rival figure with who gives it and, when it measures something the lead does
        not (a forecast beside a count, sales beside installations), what it measures."""
        out = self.labelled(claim, rival=True)
        if out.attribution is None or self.unverified(claim):  # an estimate already says what it is
            return out
        what = measured_apart(claim.text, lead.text)
        if what is None:
            return out
        return out.model_copy(update={"attribution": self.lab[f"measures_{what}"].format(who=out.attribution)})


def sections_by_part(draft: WriterDraft, n_parts: int) -> list[list[DraftSection]]:
    """The model's sections grouped by the part each says it answers (its `part`, else its
    position). A section naming no existing part joins the last part."""
    grouped: list[list[DraftSection]] = [[] for _ in range(n_parts)]
    for position, section in enumerate(draft.sections):
        index = section.part - 1 if 1 <= section.part <= n_parts else min(position, n_parts - 1)
        grouped[index].append(section)
    return grouped


def place_sentences(grouped: list[list[DraftSection]], parts: list[str], score: Scorer) -> list[list[Claim]]:
    """The model's sentences of each part, in its order. A sentence stays in the part its
    section says it answers, unless it answers another part (`answers`) and scores higher
    there: then it goes to that part (a growth figure written under "how big" answers
    "who grew fastest")."""
    placed: list[list[Claim]] = [[] for _ in parts]
    for n, sections in enumerate(grouped):
        for claim in (c for s in sections for c in s.claims):
            own = score(claim.text, parts[n])
            better = [(score(claim.text, p), k) for k, p in enumerate(parts)
                      if k != n and answers(claim, p, score)]
            best = max(better, default=None)
            placed[best[1] if best is not None and best[0] > own else n].append(claim)
    return placed


def grounded_phrase(text: str, vocabulary: frozenset[str] | None) -> bool:
    """A heading or title is a phrase (no sentence: it does not end as one, "Adopted by the
    Port Authority on June 6, 2019." is a source's byline) of words the question or the
    run's sources use: a word found in neither ("Songtang", or 情决 in "人口情决等") was made
    up by the model. `vocabulary` None: no sources to hold it to (only the phrase rule)."""
    if text.rstrip().endswith((".", "。", "!", "！")):
        return False
    return vocabulary is None or content_words(text) - _GENERIC <= vocabulary


def vocabulary_of(question: str, facts: list[Fact], sources: dict[str, SourceRecord]) -> frozenset[str]:
    """The words a heading or title may use: the question's, and those of the retrieved
    sources' titles, passages and verbatim sentences."""
    texts = [question, *(f.text for f in facts)]
    for record in sources.values():
        texts += [record.title, *(p.text for p in record.passages)]
    return frozenset(content_words("\n".join(texts)))


def heading_key(heading: str) -> str:
    """A heading as two headings are told apart: case, spacing and closing punctuation
    aside ("…in 2025?" is "…in 2025")."""
    return folded(heading).rstrip("?.!:;。？！：；")


def heading_of(model_headings: list[str], part: str, question: str, fallback: str = "Findings",
               taken: frozenset[str] = frozenset(), vocabulary: frozenset[str] | None = None) -> str:
    """The model's heading when it is a whole phrase about its part (not about the report),
    made of the question's and the sources' words (`grounded_phrase`), and not already the
    title's or another section's or another part's (`taken`, by `heading_key`); else the
    part's own words,
    shortened at a phrase boundary (`short_heading`)."""
    wanted = content_words(part) | content_words(question)
    for heading in model_headings:
        words = content_words(heading)
        if (heading.strip() and whole_phrase(heading) and len(heading.split()) <= 12 and words - _GENERIC
                and words & wanted and not labels_the_report(heading) and grounded_phrase(heading, vocabulary)
                and heading_key(heading) not in taken):
            heading = heading.strip().rstrip("?？").rstrip()  # as a part's own words read (`short_heading`)
            return heading[:1].upper() + heading[1:]
    heading = short_heading(part)
    return heading if len(heading.strip()) >= 2 else fallback


def answers(claim: Claim, part: str, score: Scorer) -> bool:
    """A sentence of the model's answers the part by itself: it may (a statement, with a
    figure where one is asked, of the question's time), gives a level where the part asks
    one (a gap of 0.77 million between sold and installed does not say how many were
    installed) and scores as a lead must (`outline.ANSWERS_PART`)."""
    return (may_answer(claim.text, part, score.question) and not score.names_only(claim.text, part)
            and (asks_change(part) or not gives_only_differences(claim.text))
            and score(claim.text, part) >= ANSWERS_PART)


def _says_figures_of(claims: list[Claim], fact: Fact) -> bool:
    wanted = figures(fact.text)
    return not wanted or any(wanted <= figures(c.text) for c in claims)


def _within_words(sections: list[DraftSection], fixed: int, target: int) -> list[DraftSection]:
    """Sections cut to the target length: the last sentence of the longest section goes
    first; every section keeps its first sentence (its answer)."""
    sections = [s.model_copy() for s in sections]
    total = fixed + sum(word_count(c.text) for s in sections for c in s.claims)
    while total > target:
        longest = max(sections, key=lambda s: (len(s.claims), -sections.index(s)), default=None)
        if longest is None or len(longest.claims) <= 1:
            break
        total -= word_count(longest.claims[-1].text)
        longest.claims = longest.claims[:-1]
    return sections


def assemble(draft: WriterDraft, parts: list[str], question: str, facts: list[Fact],
             sources: dict[str, SourceRecord], profiles: dict[str, SourceProfile], spec: ReportSpec,
             language: str, embed: Embed | None = None,
             accept_sentence: Callable[[Claim], bool] | None = None,
             texts: dict[str, str] | None = None) -> ReportDraft:
    """The report from a verified draft (see the module docstring). `facts` are verbatim
    sentences of retrieved sources, the candidates code may quote; `accept_sentence`
    filters the model's sentences once more (None: all stay); `texts`: the sources' whole
    texts, by id (their passages when not given)."""
    lab = LABELS[language]
    draft = _findings_only(draft, question)
    # a question of more parts than a report has sections: the report names those it leaves out
    omitted = [short_heading(p) for p in parts[MAX_PARTS:]]
    parts = parts[:MAX_PARTS] if parts else [question]
    facts = dedupe(facts)
    label = Labeller(sources, profiles, language)
    model_claims = [c for s in draft.sections for c in s.claims]
    score = Scorer(question, parts, [f.text for f in facts] + [c.text for c in model_claims], embed, language,
                   documents_by_title(sources, texts))
    vocabulary = vocabulary_of(question, facts, sources)
    title = _title(draft.title, question, lab, vocabulary)
    writer = _PartWriter(facts, score, label, titles={sid: r.title for sid, r in sources.items()},
                         authority={sid: p.authority for sid, p in profiles.items()}, shape=spec.shape,
                         accept_sentence=accept_sentence)
    sections: list[DraftSection] = []
    not_said: list[str] = []
    first_lead: Fact | None = None
    writer.reserve(parts)
    grouped = sections_by_part(draft, len(parts))
    placed = place_sentences(grouped, parts, score)
    for n, (part, mine) in enumerate(zip(parts, grouped)):
        found, claims = writer.claims_of(part, placed[n])
        if n == 0 and found:
            first_lead = found[0]
        if not claims:
            not_said.append(lab["not_said_part"].format(part=short_heading(part)))
            claims = [Claim.model_construct(text=lab["not_said"], source_ids=[], attribution=None)]
        others = [short_heading(p) for m, p in enumerate(parts) if m != n]
        taken = frozenset(heading_key(h) for h in [title, *(s.heading for s in sections), *others])
        heading = heading_of([s.heading for s in mine], part, question, lab["findings"], taken, vocabulary)
        sections.append(DraftSection.model_construct(heading=heading, claims=claims, part=n + 1))
    short = _short_answer(draft.short_answer, first_lead, sections, profiles, label, lab)
    summary = _summary(draft.summary, short, sections, summary_length(spec.shape, len(sections)), label, title, parts)
    fixed = word_count(short.text) + sum(word_count(c.text) for c in summary)
    sections = _within_words(sections, fixed, spec.target_words)
    cited = {sid for s in [short, *summary, *(c for sec in sections for c in sec.claims)] for sid in s.source_ids}
    return ReportDraft.model_construct(
        title=title, short_answer=short, summary=summary, sections=sections, key_figures=[], omitted=omitted,
        not_said=not_said, source_labels={sid: profiles[sid].label(language) for sid in cited if sid in profiles})


def _findings_only(draft: WriterDraft, question: str) -> WriterDraft:
    """The draft without the model's sentences about the report itself ("The report
    includes a section on…"), that only label a source (`only_labels`), only say the
    question back (`restates_question`) or carry the checks' feedback
    (`verify.echoes_feedback`): they are no finding, wherever the model put them."""
    def finding(text: str) -> bool:
        return not about_the_report(text) and not only_labels(text) and not restates_question(text, question) \
            and not echoes_feedback(text)

    def kept(claims: list[Claim]) -> list[Claim]:
        return [c for c in claims if finding(c.text)]

    short = draft.short_answer
    if not finding(short.text):
        short = Claim.model_construct(text="", source_ids=[], attribution=None)
    return draft.model_copy(update={
        "short_answer": short, "summary": kept(draft.summary),
        "sections": [s.model_copy(update={"claims": kept(s.claims)}) for s in draft.sections]})


def _title(model_title: str, question: str, lab: dict[str, str], vocabulary: frozenset[str] | None = None) -> str:
    """The model's title when it is one (a whole phrase naming a subject of the question,
    not the report itself: "The report is about the current task" is none, in the
    question's and the sources' words: `grounded_phrase`), else the
    scope the question sets ("For Brennick International Airport in 2025: …"), else
    the question's own words, shortened."""
    names_the_subject = bool(content_words(model_title) & content_words(question)) and not labels_the_report(model_title)
    if is_title(model_title) and whole_phrase(model_title) and names_the_subject \
            and grounded_phrase(model_title, vocabulary):
        title = model_title.strip()
    elif scope := question_scope(question):  # "For Brennick International Airport in 2025: …"
        title = scope.split(None, 1)[1]
        title = title[:1].upper() + title[1:]
    else:  # the question itself, as the Critic's repair of a title would put it, unless it is too long to read
        title = " ".join(question.split()) if len(question.split()) <= TITLE_WORDS else short_heading(question, 14)
    if len(title.strip()) < 3:  # a question of a word or two ("0"): the report still needs a title
        title = f"{lab['findings']}: {question.strip()}"[:120]
    return title


@dataclass
class _PartWriter:
    """The claims of each part's section, written part by part in the question's order.
    It remembers which facts already led a part (`used`) and which sentences were already
    said (`said`), so a later part neither quotes the same lead nor says a sentence twice."""

    facts: list[Fact]
    score: Scorer
    label: Labeller
    titles: dict[str, str]
    authority: dict[str, float]
    shape: ReportShape
    accept_sentence: Callable[[Claim], bool] | None
    used: set[str] = field(default_factory=set)
    said_words: list[Says] = field(default_factory=list)
    said_claims: list[Claim] = field(default_factory=list)  # what the parts said so far, in order
    reserved: dict[str, Fact] = field(default_factory=dict)  # part -> the fact that leads it alone

    def reserve(self, parts: list[str]) -> None:
        """Each part's own lead, chosen as if it were the only part: an earlier part does
        not quote it as its lead or a rival (the analysts' 2027 outlook answers "how much
        is expected in 2027", however well it scores for "how much was added in 2025")."""
        for part in parts:
            found = part_leads(self.facts, part, self.score, self.titles, set(), self.authority)
            if found:
                self.reserved[part] = found[0]

    def claims_of(self, part: str, placed: list[Claim]) -> tuple[list[Fact], list[Claim]]:
        """The part's leads (`outline.part_leads`: another part's own lead left to it) and
        its claims, without those an earlier part said; no claims: nothing answers the part."""
        prose = self._prose(placed, part)
        own = self.reserved.get(part)
        others = {f.text for p, f in self.reserved.items() if p != part and (own is None or f.text != own.text)}
        above = self._answered_above(own, part)
        # another part's own lead stays for it, unless nothing else answers this part
        found = part_leads(self.facts, part, self.score, self.titles, self.used | others, self.authority) \
            or part_leads(self.facts, part, self.score, self.titles, self.used, self.authority) \
            or self._levels_behind(prose, part)
        # a comparison answered only by a sentence an earlier part quotes ("与2024年相比各增加了
        # 多少" by "…1268万千瓦，比2024年底增加187万千瓦"): that sentence, which the report
        # then points back to, not "the documents do not say" while the answer stands above
        # ("各": every part's own lead that gives its change on the year, in the parts' order;
        # those an earlier section wrote are pointed back to)
        again = [] if found and above is None else \
            list({f.text: f for f in [*([own] if own else []), *self.reserved.values()]
                  if answers_comparison(f.text, part)}.values())
        if above is not None and own is not None:
            found, claims = again or [own], [quote(f) for f in again] or [above]
            claims += self._context_of(prose, part, own)
            claims += self._base_year(part, claims)  # the change's base, though the change stands above
            claims += self._series(part, claims)
            self._say(claims)
            return found, claims
        if not found and not any(answers(c, part, self.score) for c in prose):
            # Nothing verified answers the part and the model's sentences do not either: they
            # are about something else (a figure of another year or subject), and the part
            # is "not said", which the Writer then asks the Searcher about.
            prose = []
        if asks_why(part) and len({f.source_id for f in found}) == 1:
            # one source's explanation, in its order: its sentences, not rivals of each other,
            # each quoted unless the model's verified prose already says it
            claims = [quote(f) for f in found if not self._restated(prose, f)] \
                + [self.label.labelled(c) for c in prose[:self.shape.sentences_per_section]]
        else:
            claims = self._with_rivals(self._lead_and_prose(prose, found), found)
        self.used.update(f.text for f in found)
        claims = [c for c in claims if c.text.strip() not in self.said]  # said once, in the first part it answers
        claims = new_sentences([without_repeats(c) for c in claims], self.said_words)
        if not claims and again:
            found, claims = again, [quote(f) for f in again]
        claims += self._base_year(part, claims)
        claims += self._series(part, claims)
        self._say(claims)
        return found, claims

    def _levels_behind(self, prose: list[Claim], part: str) -> list[Fact]:
        """For a part asking a level that the model's sentences give only as a difference
        ("The gap between heat pumps sold and installed … was 0.77 million units" for "how
        many were installed"): the verified sentence of a source it cites that gives the
        levels that difference is made of, one of them the measure asked ("Manufacturers
        sold 2.61 million units …, while installers put 1.84 million units into service"),
        which shares too few of the part's words to be found as a lead by them."""
        if asks_change(part):
            return []
        gaps = [c for c in prose if gives_only_differences(c.text)]
        return [f for c in gaps for f in self.facts
                if f.source_id in c.source_ids and f.text not in self.used and levels_of(f.text, c.text)
                and answers_measure(f.text, part) and may_answer(f.text, part, self.score.question)
                and not self.score.other_subject(f.text)][:1]

    def _restated(self, prose: list[Claim], fact: Fact) -> bool:
        """A sentence of the model's says what the fact says: it gives the fact's figures,
        or, for a fact without figures (a reason: "distributors held more stock"), it rests
        on that sentence (`verify.anchor`: of the sentences code knows from the fact's
        source, the one sharing most of its words). Verified prose then stands in for the
        quote instead of repeating it beside it."""
        if figures(fact.text):
            return _says_figures_of(prose, fact)
        known = "\n\n".join(f.text for f in self.facts if f.source_id == fact.source_id)
        return any(fact.source_id in c.source_ids and (found := anchor(c, {fact.source_id: known})) is not None
                   and found[1] == fact.text for c in prose)

    def _say(self, claims: list[Claim]) -> None:
        self.said_claims += claims

    @property
    def said(self) -> set[str]:
        """The sentences the parts said so far (a report's few dozen at most)."""
        return {c.text.strip() for c in self.said_claims}

    def _answered_above(self, own: Fact | None, part: str) -> Claim | None:
        """For a part asking for the share or the change of an earlier part's figure: the
        sentence an earlier part said that is its own best answer, quoted or restated by the
        model with the same figures ("…carried 2.46 million passengers in 2025, which was
        58.2% of all ferry passengers" for the count, then for the share). The section points
        back to it; the next best sentence (another year's share, a share of freight) does
        not stand in as the answer."""
        if own is None or not ((wants_share(part) and states_share(own.text)) or answers_comparison(own.text, part)):
            return None
        wanted = figures(own.text)
        return next((c for c in self.said_claims
                     if bare_text(c.text) == own.text or (wanted and wanted <= figures(c.text))), None)

    def _context_of(self, prose: list[Claim], part: str, own: Fact) -> list[Claim]:
        """The model's verified sentences of a part whose answer an earlier part gave: the
        ones that are no rival answer of the kind asked (no other share where the part asks
        a share, no other change where it asks a change) tell the reader what the answer is
        measured against ("The city's heat demand … was 8.30 TWh" under "what share of the
        city's heat demand did that meet"); a share of freight under a share of passengers
        would stand as the answer, and is left out."""
        def rival(claim: Claim) -> bool:
            return (wants_share(part) and states_share(claim.text)) or answers_comparison(claim.text, part)

        def restates(claim: Claim) -> bool:  # only figures the answer above gives
            given = figures(claim.text)
            return bool(given) and given <= figures(own.text)

        kept = [c for c in prose if not rival(c) and not restates(c)]
        said = [Says.of(c.text) for c in self.said_claims]
        return new_sentences([self._beside_the_lead(without_repeats(c), own)
                              for c in kept[:self.shape.sentences_per_section]], said)

    def _base_year(self, part: str, claims: list[Claim]) -> list[Claim]:
        """A part asking how something changed compared with a year it names ("与2024年相比
        变化如何") also gives that year's level, which the change is measured from, when the
        section does not: the verified sentence of the quantity compared (the level among the
        parts' own leads sharing most words with the part, else the first) dated that year,
        from the most authoritative source that gives it."""
        years = YEAR.findall(part)
        leads = [f for f in self.reserved.values() if not gives_only_differences(f.text)]  # levels, not changes
        if not asks_change(part) or len(years) != 1 or not leads or not claims:
            return []
        wanted = content_words(part)
        compared = max(leads, key=lambda f: len(content_words(f.text) & wanted))  # ties: the first (max keeps it)
        given = {c.text.strip().strip("“”") for c in claims}
        said = self.said
        base = [f for f in self.facts if base_level(f.text, compared.text, years[0]) and f.text not in given
                and f"“{f.text}”" not in said and not self.score.other_subject(f.text)]
        if not base or any(dated_year(c.text) == years[0] and not gives_only_differences(c.text) for c in claims):
            return []  # none, or the section already gives a level of that year
        best = max(base, key=lambda f: self.authority.get(f.source_id, 0.0))  # ties: the first found (max keeps it)
        return [self.label.labelled(quote(best))]

    def _series(self, part: str, claims: list[Claim]) -> list[Claim]:
        """A part asking how something went over a span of years gives the level of every
        year of it (`outline.series`, of the quantity of the part's lead) that the section
        does not: a statistics office's table gave the years before the last, which its
        prose alone, quoted, left out. In the years' order, each with who gives it."""
        leads = [f for f in self.reserved.values() if not gives_only_differences(f.text)]
        if not leads or not claims:
            return []
        wanted = content_words(part)
        lead = max(leads, key=lambda f: len(content_words(f.text) & wanted))  # ties: the first
        said = [*self.said_claims, *claims]
        return [self.label.labelled(quote(f), rival=True)
                for f in series(self.facts, part, lead, self.score, self.authority).values()
                if not any(f.text in c.text for c in said) and not _says_figures_of(said, f)]

    def _prose(self, placed: list[Claim], part: str) -> list[Claim]:
        """The model's sentences stay where it put them, unless they are about another
        subject than the one asked ("Contractors installed 3.48 million … across North
        America", or a figure only a source that never names it gives), were said already
        (word for word, or within an earlier part's sentence and no answer to this part:
        `_told_above`), or `accept_sentence` refuses them."""
        said = self.said
        return [c for c in placed if c.text.strip() and not self.score.other_subject(c.text)
                and not self._from_other_subjects(c) and c.text.strip() not in said
                and not self._told_above(c, part)
                and (self.accept_sentence is None or self.accept_sentence(c))]

    def _told_above(self, claim: Claim, part: str) -> bool:
        """Every word and figure of the model's sentence is in one an earlier part said, and
        none of its figures counts what this part asks how many of: "Kestrel Bus Company
        carried 48.6 million passengers in 2025." put under "how many buses did it run",
        after the first part quoted "In 2025 Kestrel Bus Company carried 48.6 million
        passengers, up from…" (the company's name shares "bus" with the part, so scores
        do not tell). An answer an earlier part gave in passing is still this part's."""
        says = Says.of(claim.text)
        return not counts_what_is_asked(claim.text, part) and any(says.within(earlier) for earlier in self.said_words)

    def _from_other_subjects(self, claim: Claim) -> bool:
        """Every source the model's sentence cites makes it another subject's, as it would
        make the same sentence of its own (`Scorer.other_subject` with the source's title):
        Brookfell Water's "Leakage was 14.2% of water put into supply" copied for Lindale
        Water Company, or a figure only a source that never names the subject gives."""
        cited = [self.titles[sid] for sid in claim.source_ids if sid in self.titles]
        return bool(cited) and all(self.score.other_subject(claim.text, "", title) for title in cited)

    def _lead_and_prose(self, prose: list[Claim], found: list[Fact]) -> list[Claim]:
        """The model's sentences, after the authoritative figure when the prose lacks it, and
        led by the sentence that gives it when the prose has it (the answer before the
        forecast beside it); the lead alone when there are none."""
        claims: list[Claim] = []
        if found and not _says_figures_of(prose, found[0]):
            claims.append(quote(found[0]))
        lead = found[0] if found else None
        if lead is not None and figures(lead.text):  # the answer first: the sentence giving the lead's figures
            first = next((c for c in prose if figures(lead.text) <= figures(c.text)), None)
            prose = prose if first is None else [first, *(c for c in prose if c is not first)]
        claims += [self._beside_the_lead(c, lead) for c in prose[:self.shape.sentences_per_section]]
        if not claims and found:
            claims.append(quote(found[0]))
        return claims

    def _beside_the_lead(self, claim: Claim, lead: Fact | None) -> Claim:
        """A sentence of the model's (or the quote that replaced it) labelled as a rival when
        it gives other figures than the lead's that measure something else (a plan's
        forecast the model wrote beside the measured count says it is a forecast, as the
        rivals code places do) or that another source gives (the dealers' 621,800 plug-in
        cars beside the register's 418,300 battery-electric ones says whose it is)."""
        own = figures(claim.text)
        if lead is not None and own and not own <= figures(lead.text) and (
                measured_apart(claim.text, lead.text) or lead.source_id not in claim.source_ids):
            return self.label.beside(claim, lead)
        return self.label.labelled(claim)

    def _with_rivals(self, claims: list[Claim], found: list[Fact]) -> list[Claim]:
        """Rival figures the claims do not give yet, each with who gives it; beside any
        figure labelled with another source the lead says who gives it too, quoted or in
        the model's words ("…forecast to reach 723 billion USD in 2026" beside the
        newswire's 680 billion)."""
        rivals = [f for f in found[1:1 + self.shape.rivals] if not _says_figures_of(claims, f)]
        claims = claims + [self.label.beside(quote(f), found[0]) for f in rivals]
        if not found or not any(c.attribution and found[0].source_id not in c.source_ids for c in claims):
            return claims
        lead = found[0]

        def gives_lead(claim: Claim) -> bool:
            return not claim.attribution and lead.source_id in claim.source_ids and (
                claim.text == f"“{lead.text}”" or bool(figures(lead.text)) and figures(lead.text) <= figures(claim.text))

        first = next((c for c in claims if gives_lead(c)), None)
        return [c.model_copy(update={"attribution": self.label.who(lead.source_id)}) if c is first else c
                for c in claims]


def _short_answer(model: Claim, lead: Fact | None, sections: list[DraftSection],
                  profiles: dict[str, SourceProfile], label: Labeller, lab: dict[str, str]) -> Claim:
    """The model's short answer if it gives the lead figure of the first part, rests on a
    source at least as authoritative as the lead's and is a sentence (a table copied whole
    holds the figure among a dozen others); else the lead itself, quoted."""
    first_cited = next((c for c in sections[0].claims if c.source_ids), None) if sections else None
    if lead is None:
        if first_cited is None:
            return Claim.model_construct(text=lab["no_answer"], source_ids=[], attribution=None)
        return model if model.text.strip() and model.source_ids else first_cited
    best = profiles[lead.source_id].authority if lead.source_id in profiles else 1.0
    rests_on = max((profiles[s].authority for s in model.source_ids if s in profiles), default=0.0)
    if model.text.strip() and model.source_ids and figures(lead.text) & figures(model.text) and rests_on >= best \
            and not holds_table(model.text):
        return label.labelled(model)
    return label.labelled(quote(lead))  # an estimate that is all there is says it is one


def _finding_of(section: DraftSection, part: str) -> Claim | None:
    """The section's first cited sentence, unless it is a forecast or an estimate and the
    part does not ask for one (then none: the section weighs it, the summary does not)."""
    first = section.claims[0] if section.claims and section.claims[0].source_ids else None
    if first is None or (projected(first.text) and "forecast" not in measures_in(part)):
        return None
    return first


def summary_length(shape: ReportShape, sections: int) -> int:
    """The most sentences the executive summary keeps: the report kind's, or one for each
    section after the first (the short answer's) when the kind sums up every part."""
    return max(shape.summary_sentences, sections - 1) if shape.summary_every_part else shape.summary_sentences


def _summary(model: list[Claim], short: Claim, sections: list[DraftSection], limit: int,
             label: Labeller, title: str, parts: list[str]) -> list[Claim]:
    """The model's executive summary (verified); without one, each later section's first
    sentence that is not a forecast where its part asks what was (a 2021 plan's "we forecast
    … 402 euros" is what the section weighs, not what a reader should take away as the
    bill): what a reader who stops here still takes away. A sentence that only
    repeats the title's words says nothing and is left out, and so is a source's sentence
    quoted in place of one that failed, unless a section holds it: a summary sums up the
    sections, and a quote no section weighed (a plan's target beside the measured figure)
    would stand there unlabelled."""
    named = set(content_words(title))
    held = {bare_text(c.text) for s in sections for c in s.claims}
    chosen = [label.labelled(c) for c in model if c.text.strip() and c.source_ids
              and not set(content_words(c.text)) <= named
              and (not c.text.lstrip().startswith("“") or bare_text(c.text) in held)]
    if not chosen:
        asked = dict(enumerate(parts, 1))
        chosen = [c for s in sections[1:] if (c := _finding_of(s, asked.get(s.part or 0, "")))]
        chosen = [c.model_copy(update={"attribution": None}) if c.attribution and not label.unverified(c) else c
                  for c in chosen]
    out = [c for c in chosen if c.text.strip() != short.text.strip()]
    return new_sentences([without_repeats(c) for c in out], [Says.of(short.text)])[:limit]
