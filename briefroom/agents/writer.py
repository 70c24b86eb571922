"""Writer: drafts the cited report from accepted conclusions and verified facts."""

from __future__ import annotations

import hashlib

from briefroom.agents.base import Role, Turn
from briefroom.protocol.bus import Subscription
from briefroom.protocol.extraction import numbers_in, sentences
from briefroom.protocol.messages import MsgType
from briefroom.protocol.payloads import Critique, ReportMessage
from briefroom.protocol.prompt_assembly import mark_data
from briefroom.records import Fact, Report, SourceRecord
from briefroom.report.draft import (
    Claim,
    DraftSection,
    ReportDraft,
    WriterDraft,
    render_markdown,
)
from briefroom.report.language import LABELS, language_of
from briefroom.report.outline import outline


def accepted_conclusions(turn: Turn):
    rejected: set[str] = set()
    for critique in turn.inbox_of(MsgType.CRITIQUE):
        rejected.update(critique.payload_as(Critique).rejected)
    return [m for m in turn.inbox_of(MsgType.CONCLUSION) if m.body.references and m.msg_id not in rejected]


def passage_sentences(sources: dict[str, SourceRecord], round: int) -> list[Fact]:
    """Every sentence of every passage the team saw, verbatim with its source."""
    out = []
    for sid, record in sources.items():
        for passage in record.passages:
            for text in sentences(passage.text):
                digest = hashlib.sha256(f"{sid}|{text}".encode()).hexdigest()[:10]
                out.append(Fact(fact_id=f"P{digest}", text=text, numbers=tuple(numbers_in(text)), source_id=sid,
                                found_by="passage", round=round))
    return out


def step(turn: Turn) -> None:
    conclusions = accepted_conclusions(turn)
    facts = [f for f in turn.all_facts() if f.confirmed_by]
    earlier = [r for record in turn.state.get("summaries", []) for p in record.summary.conclusions for r in p.source_ids]
    allowed = list(dict.fromkeys([r for m in conclusions for r in m.body.references] + earlier
                                 + [f.source_id for f in facts]))
    sources = turn.all_sources()
    allowed = [sid for sid in allowed if sid in sources]
    goal = turn.charter.goal
    language = language_of(goal)
    lab = LABELS[language]
    label = " / ".join(sorted(turn.ctx.models.labels))
    footer = lab["generated"].format(label=label)
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
        draft = turn.ask(task, WriterDraft, facts=facts, enums={"source_ids": allowed})
        # What may open a section: verbatim sentences of retrieved sources, confirmed facts
        # first; sentences without figures too, since "why…" is answered in words.
        retrieved = [f for f in turn.all_facts() if f.source_id in sources]
        ranked = sorted(retrieved, key=lambda f: not f.confirmed_by) + passage_sentences(sources, turn.round)
        embed = turn.ctx.index.embedder.embed if turn.ctx.index is not None else None
        report = outline(draft, ranked, goal, {sid: sources[sid].title for sid in sources}, embed)
    markdown, cited = render_markdown(report, sources, footer=footer, language=language)
    revision = turn.state.get("revisions", 0)
    turn.extra["report"] = Report(markdown=markdown, cited_sources=tuple(cited), round=turn.round, revision=revision)
    turn.publish(MsgType.REPORT, f"Report draft (revision {revision}): {report.title}", to="check",
                 references=cited, payload=ReportMessage(draft=report, markdown=markdown, footer=footer))


ROLE = Role(
    name="writer",
    prompt="writer.md",
    subscriptions=(Subscription(msg_type=MsgType.CONCLUSION), Subscription(msg_type=MsgType.CRITIQUE)),
    capabilities=("draft",),
    publications=(MsgType.REPORT,),
    step=step,
    order=40,
    finishing_duty="draft",
    budget_tokens=6000,
    description="writes the cited report",
)
