"""Writer: drafts the cited report from accepted conclusions and verified facts.

A part of the question that no verified fact of this run answers is looked up in
long-term memory before the report says the documents do not say (`fill_from_memory`).
"""

from __future__ import annotations

import hashlib

from briefroom.agents.base import Role, Turn
from briefroom.memory.reading import memory_item, memory_reader, remembered_fact, unused_facts
from briefroom.protocol.bus import Subscription
from briefroom.protocol.extraction import numbers_in, statements
from briefroom.protocol.messages import MsgType, Priority
from briefroom.protocol.payloads import Answer, Critique, Question, ReportMessage
from briefroom.protocol.prompt_assembly import mark_data
from briefroom.records import Claim, DraftSection, Fact, Report, ReportDraft, SourceRecord, WriterDraft
from briefroom.report.draft import render_markdown
from briefroom.report.language import LABELS, charter_language, part_query, question_parts
from briefroom.report.outline import answer_scorer, outline


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


def _embed(turn: Turn):
    """Semantic scoring for the outline, on English questions (`outline.answer_scorer`);
    none without an index (unit tests of the Writer alone)."""
    if turn.ctx.index is None or charter_language(turn.charter) != "en":
        return None
    return answer_scorer()


def fill_from_memory(turn: Turn, gaps: list[str], draft: WriterDraft, asked: set[str]) -> list[Fact]:
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
    probe = outline(draft, _ranked(turn, sources, candidates), goal, {sid: sources[sid].title for sid in sources},
                    _embed(turn))
    parts = question_parts(goal)
    quoted = {part: {(c.text, tuple(c.source_ids)) for c in section.claims}
              for part, section in zip(parts, probe.sections) if part in gaps}
    used: list[Fact] = []
    for fact, record in found.values():
        filled = next((part for part, claims in quoted.items()
                       if (f"“{fact.text}”", (fact.source_id,)) in claims), None)
        if filled is None:
            continue
        used.append(fact)
        turn.add_sources([record])
        turn.ctx.log.event("memory_reuse", agent=turn.role.name, round=turn.round, question=filled,
                           fact=fact.fact_id, source=fact.source_id)
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
    if not allowed:
        # No part of the question has verified evidence: memory is asked for each first.
        nothing = WriterDraft.model_construct(title=goal, short_answer=Claim.model_construct(text="", source_ids=[]),
                                              sections=[])
        if fill_from_memory(turn, parts, nothing, asked):
            facts, allowed, sources = _evidence(turn, conclusions)
    if not allowed:
        draft = WriterDraft(title=lab["no_evidence_title"].format(goal=goal)[:200],
                            short_answer=Claim.model_construct(text=lab["no_evidence"], source_ids=[]),
                            sections=[DraftSection.model_construct(heading=lab["searched"], claims=[
                                Claim.model_construct(text=lab["rounds"].format(n=turn.round), source_ids=[])])])
        turn.note("no accepted conclusions: wrote an explicit no-evidence report")
        report = ReportDraft.model_construct(**dict(draft), key_figures=[])
    else:
        critiques = [m.body.content for m in turn.unread_of(MsgType.CRITIQUE)
                     if m.payload_as(Critique).kind == "revise"]
        task = ("Write the report: a title, a one-sentence short answer, and sections of claims. Use only the "
                "accepted conclusions and facts; copy numbers exactly; cite source ids for every claim. "
                f"Write in {lab['language_name']}, the language of the question.")
        if critiques:
            task += "\nThe Critic sent the last draft back:\n" + mark_data("critique", "\n".join(critiques))
        # a memory fact this role already used at a decision point is not shown again
        draft = turn.ask(task, WriterDraft, facts=unused_facts(facts, turn.state, turn.role.name),
                         enums={"source_ids": allowed})
        embed = _embed(turn)
        report = outline(draft, _ranked(turn, sources), goal, {sid: sources[sid].title for sid in sources}, embed)
        # Parts nothing verified answers would say "the documents do not say": memory first.
        if fill_from_memory(turn, _unanswered(report, parts), draft, asked):
            sources = turn.all_sources()
            report = outline(draft, _ranked(turn, sources), goal, {sid: sources[sid].title for sid in sources},
                             embed)
        ask_searcher(turn, _unanswered(report, parts))
    markdown, cited = render_markdown(report, sources, footer=footer, language=language)
    revision = turn.state.get("revisions", 0)
    turn.extra["report"] = Report(markdown=markdown, cited_sources=tuple(cited), round=turn.round, revision=revision)
    turn.publish(MsgType.REPORT, f"Report draft (revision {revision}): {report.title}", to="check",
                 references=cited, payload=ReportMessage(draft=report, markdown=markdown, footer=footer))


ROLE = Role(
    name="writer",
    prompt="writer.md",
    subscriptions=(Subscription(msg_type=MsgType.CONCLUSION), Subscription(msg_type=MsgType.CRITIQUE),
                   Subscription(msg_type=MsgType.ANSWER)),
    capabilities=("draft",),
    publications=(MsgType.REPORT, MsgType.QUESTION),
    step=step,
    order=40,
    finishing_duty="draft",
    budget_tokens=6000,
    description="writes the cited report",
)
