"""Writer: the model writes the report's prose; code verifies every sentence and gives
the report its shape.

One turn: for each part of the question, code picks the verified source sentences that
answer it (`report.briefing`) and the model writes that part's section from them in its
own words (`writer_part.md`, one call a part); each sentence is checked against the
passages it cites, by code and by one bounded judgement call (`report.verify`); what
fails goes back once, to the part it was written for, with the reason
(`writer_revise.md`), then is replaced by the quote it rests on or dropped;
`report.shape` builds the report around the question's parts with the sources weighed
(`report.source_kinds`). A part that no verified fact of this run answers is looked up
in long-term memory before the report says the documents do not say
(`fill_from_memory`), then asked of the Searcher.
"""

from __future__ import annotations

import hashlib

from briefroom.agents.base import Role, Turn
from briefroom.agents.report_message import REPORT, ReportMessage
from briefroom.errors import ContractError, MustKeepOverBudget
from briefroom.events import Fallback, MemoryReuse, ReportRepair
from briefroom.memory.reading import memory_item, memory_reader, remembered_fact, unused_facts
from briefroom.prompts import load_template, render
from briefroom.protocol.bus import Subscription
from briefroom.protocol.extraction import content_words, numbers_in, statements
from briefroom.protocol.messages import MsgType, Priority
from briefroom.protocol.payloads import Answer, Critique, Question
from briefroom.protocol.prompt_assembly import mark_data
from briefroom.records import MAX_PARTS, Claim, DraftSection, Fact, Report, ReportDraft, SourceRecord, WriterDraft
from briefroom.report.briefing import PartEvidence, evidence_by_part, evidence_lines, evidence_sources
from briefroom.report.draft import render_markdown
from briefroom.report.language import LABELS, charter_language, part_query, plural_s, question_parts
from briefroom.report.outline import Scorer, answer_scorer, dedupe, documents_by_title, leads
from briefroom.report.restate import Restatements, quoted_sources, quotes_of, restated
from briefroom.report.shape import assemble
from briefroom.report.source_kinds import KIND_LABELS, SourceProfile, profiles
from briefroom.report.spec import ReportSpec
from briefroom.report.verify import (
    Judge,
    Repair,
    SupportReview,
    failures,
    narrowed_citations,
    no_claim,
    quote_of,
    settle,
)

# Sentences of a cited source shown beside a sentence under judgement: the ones sharing
# most of its words, so the call stays small whatever the sources' length.
PASSAGE_SENTENCES = 3


def accepted_conclusions(turn: Turn):
    rejected: set[str] = set()
    for critique in turn.inbox_of(MsgType.CRITIQUE):
        rejected.update(critique.payload_as(Critique).rejected)
    return [m for m in turn.inbox_of(MsgType.CONCLUSION) if m.body.references and m.msg_id not in rejected]


def passage_sentences(sources: dict[str, SourceRecord], round: int) -> list[Fact]:
    """Every statement of every passage the team saw, verbatim with its source (a
    paragraph addressing the reader is never quoted: `extraction.statements`)."""
    out = []
    for sid, record in sources.items():
        for passage in record.passages:
            for text in statements(passage.text):
                digest = hashlib.sha256(f"{sid}|{text}".encode()).hexdigest()[:10]
                out.append(Fact(fact_id=f"P{digest}", text=text, numbers=tuple(numbers_in(text)), source_id=sid,
                                found_by="passage", round=round))
    return out


def _evidence(turn: Turn, conclusions) -> tuple[list[Fact], list[str], dict[str, SourceRecord]]:
    """Confirmed facts, the source ids the draft may cite, and every retrieved source."""
    facts = [f for f in turn.all_facts() if f.confirmed_by]
    earlier = [r for record in turn.state.get("summaries", []) for p in record.summary.conclusions for r in p.source_ids]
    allowed = list(dict.fromkeys([r for m in conclusions for r in m.body.references] + earlier
                                 + [f.source_id for f in facts]))
    sources = turn.all_sources()
    return facts, [sid for sid in allowed if sid in sources], sources


def _ranked(turn: Turn, sources: dict[str, SourceRecord], first: list[Fact] | None = None) -> list[Fact]:
    """What may open a section: verbatim sentences of retrieved sources, confirmed facts
    first; sentences without figures too, since "why…" is answered in words."""
    retrieved = [f for f in turn.all_facts() if f.source_id in sources]
    return [*(first or []), *sorted(retrieved, key=lambda f: not f.confirmed_by),
            *passage_sentences(sources, turn.round)]


def _unanswered(report: ReportDraft, parts: list[str]) -> list[str]:
    """The parts whose section cites nothing: where the report says the documents do not say."""
    return [part for part, section in zip(parts, report.sections) if not any(c.source_ids for c in section.claims)]


def report_spec(turn: Turn) -> ReportSpec:
    return turn.ctx.report


def part_task(turn: Turn, part: str, evidence: PartEvidence, kinds: dict[str, SourceProfile],
              critiques: list[str]) -> str:
    """The task of one section (`writer_part.md`): the part, the whole question, the part's
    evidence with each source's kind (`report.briefing`), the report asked for; a critique
    of the last draft after it, as data. One part at a time: a small model shown the whole
    question's evidence at once copies it sentence by sentence; shown one part's, it writes."""
    spec = report_spec(turn)
    language = charter_language(turn.charter)
    task = render(load_template("writer_part.md"), language=LABELS[language]["language_name"], part=part,
                  question=turn.charter.goal, evidence=mark_data("evidence", evidence_lines(evidence, kinds, language)),
                  kind=spec.kind, words=spec.target_words, audience=spec.audience or "a general reader")
    if critiques:
        task += "\nThe Critic sent the last draft back:\n" + mark_data("critique", "\n".join(critiques))
    return task


def passages_for(claim: Claim, texts: dict[str, str]) -> str:
    """The sentences of each cited source shown beside `claim` under judgement."""
    words = content_words(claim.text)
    lines = []
    for sid in claim.source_ids:
        ranked = sorted(statements(texts.get(sid, "")), key=lambda s: -len(words & content_words(s)))
        lines += [f"  [{sid}] {s}" for s in ranked[:PASSAGE_SENTENCES]]
    return "\n".join(lines)


def support_judge(turn: Turn, texts: dict[str, str]) -> Judge:
    """The team's model judging sentences against the passages they cite: one structured
    call per check (`SupportReview`, `writer_support.md`), its size bounded by
    `verify.MAX_JUDGED` sentences and `PASSAGE_SENTENCES` per cited source. A call that
    does not fit the Writer's budget is split in two, down to one sentence; a sentence
    whose check alone does not fit keeps code's checks only (logged): a six-part
    question's sixteen sentences with their passages outgrew SmolLM2's budget and ended
    the run."""

    def judge(claims: list[Claim]) -> dict[int, str]:
        try:
            return judged(claims)
        except MustKeepOverBudget as exc:
            if len(claims) == 1:
                turn.ctx.log.write(Fallback(agent=turn.worker, round=turn.round,
                                            reason=f"a sentence not judged, code's checks stand: {str(exc)[:200]}"))
                return {}
            half = len(claims) // 2
            first, later = judge(claims[:half]), judge(claims[half:])  # in the sentences' order
            return {**first, **{half + n: why for n, why in later.items()}}

    def judged(claims: list[Claim]) -> dict[int, str]:
        task, ids = support_task(claims, texts)
        review = turn.ask(task, SupportReview, enums={"sentence_id": ids}, max_items={"verdicts": len(ids)},
                          focused=True)
        return unsupported_in(review, ids)

    return judge


def support_task(claims: list[Claim], texts: dict[str, str], template: str | None = None) -> tuple[str, list[str]]:
    """The judgement task for `claims` (`writer_support.md`, or `template` for a bench's
    variant) and the sentence ids it gives them (s1, s2, …)."""
    ids = [f"s{n}" for n in range(1, len(claims) + 1)]
    shown = "\n\n".join(f"{i}: {c.text}\n{passages_for(c, texts)}" for i, c in zip(ids, claims))
    return render(template or load_template("writer_support.md"), sentences=mark_data("sentences", shown)), ids


def unsupported_in(review: SupportReview, ids: list[str]) -> dict[int, str]:
    """{index: reason} of the sentences the review judges unsupported; the first verdict
    on a sentence counts."""
    out: dict[int, str] = {}
    decided: set[str] = set()
    for verdict in review.verdicts:
        if verdict.sentence_id in ids and verdict.sentence_id not in decided:
            decided.add(verdict.sentence_id)
            if verdict.verdict == "unsupported":
                out[ids.index(verdict.sentence_id)] = verdict.reason
    return out


def write_verified(turn: Turn, tasks: dict[int, str], allowed: dict[int, list[str]],
                   facts: list[Fact]) -> tuple[WriterDraft, list[Repair]]:
    """The model's sections, one call per part (`tasks`: part index -> its task; `allowed`:
    the source ids it may cite), every sentence verified (`verify.settle`): failures go
    back once with their reasons, to the part they were written for, then are quoted or
    dropped. Each outcome is logged. The short answer is part 1's first sentence that
    stood; code's shape weighs it against the authoritative figure."""
    texts = turn.source_texts()
    shown = unused_facts(facts, turn.state, turn.role.name)  # a memory fact already used is not shown again

    def section(n: int, task: str) -> DraftSection | None:
        try:
            # cut at the output cap (a small model's long section), asking again only repeats it
            written = turn.ask(task, DraftSection, facts=shown, enums={"source_ids": allowed[n]},
                               give_up_when_cut=True)
        except ContractError as exc:
            # A model that cannot write the section's JSON at all: the part is answered from
            # verified source sentences alone, as any part the prose leaves unanswered.
            _gave_up(turn, f"the model's section for part {n + 1} was invalid JSON or cut at the output cap", exc)
            return None
        return written.model_copy(update={"part": n + 1})

    def revised(n: int, task: str, first: DraftSection | None) -> DraftSection | None:
        try:
            return section(n, task) or first  # invalid again: the first stands
        except MustKeepOverBudget as exc:
            # A revision is worth asking only while it fits: SmolLM2's Chinese section of
            # eight sentences, each failing several checks, made the list sent back outgrow
            # the Writer's budget. The first section stands; what fails in it is quoted or dropped.
            turn.ctx.log.write(Fallback(agent=turn.worker, round=turn.round,
                                        reason=f"part {n + 1} not sent back: {str(exc)[:200]}"))
            return first

    written = {n: section(n, task) for n, task in tasks.items()}
    draft = sections_draft(written)
    judge = support_judge(turn, texts)

    def redraft(failed: list[tuple[Claim, str]]) -> WriterDraft:
        for n, sent in list(written.items()):
            mine = [f"- {claim.text} — {why}" for claim, why in failed
                    if sent is not None and any(claim is c for c in sent.claims)]
            if mine:
                again = render(load_template("writer_revise.md"), failures=mark_data("failures", "\n".join(mine)))
                written[n] = revised(n, tasks[n] + "\n\n" + again, sent)
        return sections_draft(written)

    def check(claims: list[Claim]) -> dict[int, str]:  # the empty short answer is code's to fill, not a failure
        return {n: why for n, why in failures(claims, texts, judge).items() if claims[n].text.strip()}

    settled, repairs, sent_back = settle(draft, check, redraft, lambda claim: quote_of(claim, texts))
    settled = narrowed_citations(settled, texts)
    opening = next((c for s in settled.sections if s.part == 1 for c in s.claims if c.source_ids), None)
    if opening is not None:
        settled = settled.model_copy(update={"short_answer": opening})
    if sent_back:
        turn.note(f"sent {sent_back} sentence(s) back to the model once with the reasons")
    for repair in repairs:
        turn.ctx.log.write(ReportRepair(agent=turn.role.name, round=turn.round, repair=repair.line()))
    return settled, repairs


def sections_draft(written: dict[int, DraftSection | None]) -> WriterDraft:
    """The sections written, in the parts' order, as a draft: no title, short answer or
    summary yet (code's shape gives the title and the summary; the short answer is the
    first sentence of part 1 that stands)."""
    return WriterDraft.model_construct(title="", short_answer=no_claim(), summary=[],
                                       sections=[s for _, s in sorted(written.items()) if s is not None])


def _gave_up(turn: Turn, reason: str, exc: ContractError) -> None:
    turn.ctx.log.write(Fallback(agent=turn.worker, round=turn.round, reason=f"{reason}: {str(exc)[:200]}"))
    turn.note(f"{reason}; the report quotes verified sentences instead")


def _embed(turn: Turn):
    """Semantic scoring for the outline, on English questions (`outline.answer_scorer`);
    none without an index (unit tests of the Writer alone)."""
    if turn.ctx.index is None or charter_language(turn.charter) != "en":
        return None
    return answer_scorer()


def fill_from_memory(turn: Turn, gaps: list[str], asked: set[str]) -> list[Fact]:
    """Decision point: parts of the question no verified fact of this run answers.

    Before writing that the documents do not say, each such part is looked up in
    long-term memory (logged). A verified fact found whose source is still in the corpus,
    saying it verbatim, is tried the way every fact is: the outline decides whether it
    answers the part (a fact on the subject for another year, or without the figure the
    part asks for, does not). One that fills a gap joins the run's facts with its original
    source, so it is cited by that source; it is logged and marked used by the Writer,
    whose later prompts leave it out (`unused_facts`). The rest are dropped unused."""
    reader = memory_reader(turn.ctx.tools)
    gaps = [p for p in gaps if p not in asked]
    if reader is None or turn.ctx.index is None or not gaps:
        return []
    asked.update(gaps)
    goal = turn.charter.goal
    known = {f.fact_id for f in turn.all_facts()}
    found: dict[str, tuple[Fact, SourceRecord]] = {}
    for part in gaps:
        query = part_query(part, goal)
        recalled = reader.verified_facts(query)
        reader.log(turn.ctx.log, turn.role.name, recalled)
        for r in recalled:
            remembered = remembered_fact(r, turn.ctx.index)
            if remembered is not None and remembered[0].fact_id not in known | set(found):
                found[remembered[0].fact_id] = remembered
    if not found:
        return []
    sources = {**{record.source_id: record for _, record in found.values()}, **turn.all_sources()}
    candidates = [fact for fact, _ in found.values()]
    ranked = dedupe(_ranked(turn, sources, candidates))
    parts = question_parts(goal)
    score = Scorer(goal, parts, [f.text for f in ranked], _embed(turn), charter_language(turn.charter),
                   documents_by_title(sources, turn.source_texts()))
    titles = {sid: sources[sid].title for sid in sources}
    authority = {sid: p.authority for sid, p in profiles(sources).items()}
    answered = {part: {f.fact_id for f in leads(ranked, part, score, titles, set(), authority)}
                for part in parts if part in gaps}
    used: list[Fact] = []
    for fact, record in found.values():
        filled = next((part for part, ids in answered.items() if fact.fact_id in ids), None)
        if filled is None:
            continue
        used.append(fact)
        turn.add_sources([record])
        turn.ctx.log.write(MemoryReuse(agent=turn.role.name, round=turn.round, question=filled,
                                       fact=fact.fact_id, source=fact.source_id))
    if used:
        turn.add_facts(used)
        marked = turn.extra.setdefault("memory_used", {}).setdefault(turn.role.name, [])
        marked += [i for f in used if (i := memory_item(f))]
    return used


def ask_searcher(turn: Turn, parts: list[str]) -> None:
    """Decision point after memory: a part of the question nothing verified answers is
    asked of whoever can search (`question` message, answered to the Writer), once per
    run and only while a round remains for the answer to arrive."""
    if turn.finishing or turn.round >= turn.charter.max_rounds:
        return
    mine = [*turn.state.get("archive", []), *turn.state.get("whiteboard", []), *turn.published]
    asked = {m.body.content for m in mine if m.header.sender == turn.role.name
             and m.header.msg_type is MsgType.QUESTION}
    goal = turn.charter.goal
    for part in parts:
        text = part_query(part, goal)
        if text in asked:
            continue
        asked.add(text)
        turn.publish(MsgType.QUESTION, text, to="search", payload=Question(), priority=Priority.P1)


def method_note(turn: Turn, sources: dict[str, SourceRecord], cited: list[str], language: str,
                attributed: bool) -> str:
    """How the report was made, for its footer: rounds searched, documents read and cited,
    those read but left out (in the footer, past the checked body: its counts are the
    run's, not the sources'); that differing figures stand side by side only when the
    report shows some with who gives them (`attributed`)."""
    lab = LABELS[language]
    left = [sources[sid].title for sid in sources if sid not in cited]
    left_out = lab["left_out"].format(titles="; ".join(left[:6]) + ("; …" if len(left) > 6 else "")) if left else ""
    note = lab["method"].format(rounds=turn.round, rounds_s=plural_s(turn.round), read=len(sources),
                               read_s=plural_s(len(sources)), cited=len(cited), left_out=left_out)
    return note + (lab["side_by_side"] if attributed else "")


def compose(turn: Turn, draft: WriterDraft, sources: dict[str, SourceRecord]) -> ReportDraft:
    goal = turn.charter.goal
    return assemble(draft, question_parts(goal), goal, _ranked(turn, sources), sources, profiles(sources),
                    report_spec(turn), charter_language(turn.charter), _embed(turn), texts=turn.source_texts())


def restate_quotes(turn: Turn, report: ReportDraft) -> ReportDraft:
    """`--quotes restate`: the report's quotes said again in the model's words, in one
    bounded call (`writer_restate.md`); a rewrite takes its quote's place only where code
    finds it says the same and it passes the checks and the support judgement of any
    sentence of the model's (`report.restate`). Every quote kept is logged with why."""
    quotes = quotes_of(report)
    if not quotes:
        return report
    ids = [f"q{n}" for n in range(1, len(quotes) + 1)]
    language = charter_language(turn.charter)
    sources, cited = turn.all_sources(), quoted_sources(report)
    kinds = profiles(sources)

    def who(quote: str) -> str:  # "analyst: Public Cloud Outlook 2026": the source the rewrite may name
        sid = cited[quote][0]
        title = sources[sid].title if sid in sources else sid
        return f"{KIND_LABELS[language][kinds[sid].kind]}: {title}" if sid in kinds else title

    sources_shown = {q: who(q) for q in quotes}
    task = render(load_template("writer_restate.md"), language=LABELS[language]["language_name"],
                  sentences=mark_data("quotes", "\n".join(f"{i} [{sources_shown[q]}]: {q}" for i, q in zip(ids, quotes))))
    try:
        answer = turn.ask(task, Restatements, enums={"sentence_id": ids}, max_items={"rewrites": len(ids)},
                          give_up_when_cut=True)
    except ContractError as exc:
        turn.ctx.log.write(Fallback(agent=turn.worker, round=turn.round,
                                    reason=f"the quotes' rewrites were invalid JSON or cut: {str(exc)[:200]}"))
        return report
    rewrites: dict[str, str] = {}
    for rewrite in answer.rewrites:  # the first rewrite of a quote counts
        if rewrite.sentence_id in ids:
            rewrites.setdefault(quotes[ids.index(rewrite.sentence_id)], rewrite.text)
    texts = turn.source_texts()
    judge = support_judge(turn, texts)
    report, refused = restated(report, rewrites, lambda claims: failures(claims, texts, judge), sources_shown)
    kept = {q: refused.get(q, "no rewrite") for q in quotes if q not in rewrites or q in refused}
    turn.note(f"restated {len(quotes) - len(kept)} of {len(quotes)} quote(s) in the model's words")
    for quote, why in kept.items():
        turn.ctx.log.write(ReportRepair(agent=turn.role.name, round=turn.round,
                                        repair=f"kept the quote “{quote[:160]}”: its rewrite: {why[:160]}"))
    return report


def step(turn: Turn) -> None:
    for reply in turn.unread_of(MsgType.ANSWER):  # its evidence came as conclusions, checked by the Critic
        turn.note(f"asked: {reply.payload_as(Answer).question} -> {reply.body.content[:160]}")
    conclusions = accepted_conclusions(turn)
    facts, allowed, sources = _evidence(turn, conclusions)
    goal = turn.charter.goal
    parts = question_parts(goal)
    language = charter_language(turn.charter)
    lab = LABELS[language]
    label = " / ".join(sorted(turn.ctx.models.labels))
    footer = lab["generated"].format(label=label)
    asked: set[str] = set()  # parts looked up in memory this turn
    if not allowed and fill_from_memory(turn, parts, asked):
        # No part of the question had verified evidence: memory was asked for each first.
        facts, allowed, sources = _evidence(turn, conclusions)
    if not allowed:
        draft = WriterDraft(title=lab["no_evidence_title"].format(goal=goal)[:200],
                            short_answer=Claim.model_construct(text=lab["no_evidence"], source_ids=[]),
                            sections=[DraftSection.model_construct(heading=lab["searched"], claims=[
                                Claim.model_construct(text=lab["rounds"].format(n=turn.round, n_s=plural_s(turn.round)), source_ids=[])])])
        turn.note("no accepted conclusions: wrote an explicit no-evidence report")
        report = ReportDraft.model_construct(**dict(draft), key_figures=[])
    else:
        critiques = [m.body.content for m in turn.unread_of(MsgType.CRITIQUE)
                     if m.payload_as(Critique).kind == "revise"]
        kinds = profiles(sources)
        ranked = _ranked(turn, sources)
        # a memory fact the Writer used is not shown again (`unused_facts`), nor is the same sentence of its source
        kept = unused_facts(ranked, turn.state, turn.role.name)
        withdrawn = {f.text for f in ranked if f not in kept}
        shown = [f for f in kept if f.text not in withdrawn]
        # a report has at most MAX_PARTS sections (`shape.assemble` names the parts left out)
        evidence = evidence_by_part(shown, parts[:MAX_PARTS], goal, sources, kinds, language, _embed(turn),
                                    texts=turn.source_texts())
        # each part's section may cite what it is shown and what the team's findings rest on
        tasks = {n: part_task(turn, item.part, item, kinds, critiques) for n, item in enumerate(evidence) if item.facts}
        citable = {n: list(dict.fromkeys([*evidence_sources([evidence[n]]), *allowed])) for n in tasks}
        draft, _ = write_verified(turn, tasks, citable, facts)
        report = compose(turn, draft, sources)
        # Parts nothing verified answers would say "the documents do not say": memory first.
        if fill_from_memory(turn, _unanswered(report, parts), asked):
            sources = turn.all_sources()
            report = compose(turn, draft, sources)
        if report_spec(turn).quotes == "restate":
            report = restate_quotes(turn, report)
        ask_searcher(turn, _unanswered(report, parts))
    _, cited = render_markdown(report, sources, language=language)
    if cited:
        attributed = any(c.attribution for s in report.sections for c in s.claims)
        footer += "\n\n" + method_note(turn, sources, cited, language, attributed)
    markdown, cited = render_markdown(report, sources, footer=footer, language=language)
    revision = turn.state.get("revisions", 0)
    turn.extra["report"] = Report(markdown=markdown, cited_sources=tuple(cited), round=turn.round, revision=revision)
    turn.publish(REPORT, f"Report draft (revision {revision}): {report.title}", to="check",
                 references=cited, payload=ReportMessage(draft=report, markdown=markdown, footer=footer))


ROLE = Role(
    name="writer",
    prompt="writer.md",
    subscriptions=(Subscription(msg_type=MsgType.CONCLUSION), Subscription(msg_type=MsgType.CRITIQUE),
                   Subscription(msg_type=MsgType.ANSWER)),
    capabilities=("draft",),
    publications=(REPORT, MsgType.QUESTION),
    step=step,
    after=("check",),
    finishing_duty="draft",
    budget_tokens=6000,
    description="writes the cited report",
)
