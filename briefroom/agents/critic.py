"""Critic: checks conclusions and report drafts; deterministic checks first.

A conclusion is accepted only if its citations resolve and its numbers are in its
sources, and the model does not object. A report draft that fails the checks goes
back to the Writer (bounded); once revisions run out, what cannot be verified is
replaced by the verified fact it was about, or dropped, and the log says which.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from briefroom.agents.base import Role, Turn
from briefroom.agents.report_message import REPORT, ReportMessage
from briefroom.errors import ContractError
from briefroom.events import Fallback, MemoryReuse, ReportAccepted, ReportRepair
from briefroom.memory.reading import backs, memory_item, memory_reader, remembered_fact
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import AgentMessage, MsgType, Priority
from briefroom.protocol.payloads import Conclusion, Critique
from briefroom.records import DEFAULT_CRITERIA, Claim, Fact, Report, ReportDraft
from briefroom.report.checks import (
    claim_problems,
    draft_problems,
    markdown_problems,
    repair_draft,
    restates,
)
from briefroom.report.draft import render_markdown
from briefroom.report.language import LABELS, charter_language, criterion, plural_s
from briefroom.report.verify import code_problems


class Verdict(BaseModel):
    msg_id: str = Field(json_schema_extra={"x-fill": "distinct"})
    verdict: Literal["accept", "reject"]
    reason: str = Field(min_length=2, max_length=300, json_schema_extra={"maxLength": 120})


class Review(BaseModel):
    verdicts: list[Verdict] = Field(min_length=1)


# What the code checks say when the cited evidence does not bear a conclusion out. A
# verified fact from long-term memory may: the Critic looks it up before rejecting. Not
# for a question (not_a_statement), a fragment, or a model's objection (relevance, which
# no fact can answer).
EVIDENCE_PROBLEMS = ("unresolved_citation", "uncited_claim", "ungrounded_claim", "unsupported_number",
                     "misattributed_figure")


def _memory_backing(turn: Turn, message: AgentMessage, texts: dict[str, str]) -> tuple[Fact, str] | None:
    """Decision point: a conclusion about to be rejected for its evidence. Long-term
    memory is asked for a verified fact on the same subject; one that backs the claim
    (same numbers, most of its words; `reading.backs`) and whose source is in the corpus,
    saying it verbatim, joins the run's facts with that source. The lookup is logged.

    Returns the fact and what becomes of the conclusion: "accepted" when, with the
    memory's source now in the run, the conclusion *as cited* passes the same checks
    (its citation pointed at a source this run had not retrieved, and memory holds it):
    it then goes on to the model's review like any other. Otherwise it stays rejected,
    and the reason names the fact. The reason it is not accepted anyway: the Writer
    cites an accepted conclusion by its own references, and those do not say it; an
    acceptance would carry an unverifiable citation into the draft. The claim still
    reaches the report: the fact is in the run's facts, cited by its original source."""
    reader = memory_reader(turn.ctx.tools)
    if reader is None or turn.ctx.index is None:
        return None
    found = reader.verified_facts(message.body.content)
    reader.log(turn.ctx.log, turn.role.name, found)
    known = {f.fact_id: f for f in turn.all_facts()}
    for recalled in found:
        remembered = remembered_fact(recalled, turn.ctx.index)
        if remembered is None:
            continue  # its source left the corpus: nothing a citation could resolve to
        fact, record = remembered
        fact = known.get(fact.fact_id, fact)
        if not backs(message.body.content, fact):
            continue
        turn.add_sources([record])
        texts.update(turn.source_texts())
        passes = bool(message.body.references) and not claim_problems(
            Claim(text=message.body.content, source_ids=list(message.body.references)), texts)
        return fact, "accepted" if passes else "rejected"
    return None


def states(message: AgentMessage, fact: Fact) -> bool:
    """A conclusion states a fact when it holds the fact's sentence, or when it names the
    fact as one it restates (`Conclusion.restates`: a role spelled its figures another
    way) and code finds the same figures and words in it."""
    if fact.text in message.body.content:
        return True
    payload = message.body.payload
    return (isinstance(payload, Conclusion) and fact.fact_id in payload.restates
            and restates(message.body.content, fact.text))


def review_conclusions(turn: Turn, conclusions: list[AgentMessage]) -> None:
    """The code checks first, then the model on what they passed; the verdicts go to
    the Writer, and the facts the accepted conclusions state count as confirmed."""
    texts = turn.source_texts()
    rejected, from_memory = _code_rejections(turn, conclusions, texts)
    candidates = [m for m in conclusions if m.msg_id not in rejected]
    if candidates:
        rejected.update(_model_rejections(turn, candidates))
    accepted = [m for m in conclusions if m.msg_id not in rejected]
    confirmed = _confirmed_facts(turn, accepted, from_memory)
    if confirmed:
        turn.extra["facts"] = confirmed  # merge_facts adds the confirmations
    if from_memory:
        # Used at this decision point: not shown to the Critic again. Its prompts carry no
        # facts today; a prompt that passes some filters them with `unused_facts`.
        turn.extra["memory_used"] = {turn.role.name: [i for f in from_memory.values() if (i := memory_item(f))]}
    _publish_review(turn, accepted, rejected)


def _code_rejections(turn: Turn, conclusions: list[AgentMessage], texts: dict[str, str]
                     ) -> tuple[dict[str, str], dict[str, Fact]]:
    """The conclusions the code checks reject, with why, and the memory facts that backed
    one (by fact id). A verified fact from memory may answer a rejection for evidence;
    `texts` then gains its source, for the conclusions after it too."""
    rejected: dict[str, str] = {}
    from_memory: dict[str, Fact] = {}
    for message in conclusions:
        reason, about_evidence = _code_verdict(message, texts)
        if reason is not None and about_evidence:
            reason = _answered_from_memory(turn, message, reason, texts, from_memory)
        if reason is not None:
            rejected[message.msg_id] = reason
    return rejected, from_memory


def _code_verdict(message: AgentMessage, texts: dict[str, str]) -> tuple[str | None, bool]:
    """Why the code checks reject a conclusion (None: they pass it), and whether that is
    about its evidence (`EVIDENCE_PROBLEMS`, or no source at all)."""
    if not message.body.references:
        return "no source", True
    if len(message.body.content.strip()) < 3:  # "0" from a document of one digit is not a claim
        return "too short to be a claim", False
    problems = claim_problems(Claim(text=message.body.content, source_ids=list(message.body.references)), texts)
    if not problems:
        return None, False
    return problems[0].line(), any(p.kind in EVIDENCE_PROBLEMS for p in problems)


def _answered_from_memory(turn: Turn, message: AgentMessage, reason: str, texts: dict[str, str],
                          from_memory: dict[str, Fact]) -> str | None:
    """The rejection that stands once long-term memory was asked (`_memory_backing`):
    None when a memory fact makes the conclusion pass, else the reason, naming the fact
    if one was found. A fact found joins `from_memory` and the reuse is logged."""
    backing = _memory_backing(turn, message, texts)
    if backing is None:
        return reason
    fact, outcome = backing
    from_memory[fact.fact_id] = fact
    asked = message.body.payload
    turn.ctx.log.write(MemoryReuse(agent=turn.role.name, round=turn.round,
                                   question=(asked.question if isinstance(asked, Conclusion) else "")
                                   or message.body.content, fact=fact.fact_id, source=fact.source_id))
    if outcome == "accepted":
        return None
    return reason + (f" (long-term memory backs the claim: verified fact {fact.fact_id}, source "
                     f"{fact.source_id}, joins the facts)")


def _model_rejections(turn: Turn, candidates: list[AgentMessage]) -> dict[str, str]:
    """The conclusions the model rejects of those the code checks passed (one call)."""
    ids = [m.msg_id for m in candidates]
    try:
        review = turn.ask("Review each conclusion on the whiteboard: is it relevant to the goal and supported "
                          "by its sources? One verdict per message id.", Review, enums={"msg_id": ids},
                          max_items={"verdicts": len(ids)})
    except ContractError as exc:
        # The model's verdicts are a second opinion on what the code checks passed: a model
        # that cannot write them (SmolLM2's Review, broken JSON after two corrections) leaves
        # the code's verdicts standing, and the run goes on.
        turn.ctx.log.write(Fallback(agent=turn.worker, round=turn.round,
                                    reason=f"the model's review was not used: {str(exc)[:200]}"))
        return {}
    rejected: dict[str, str] = {}
    decided: set[str] = set()
    for verdict in review.verdicts:  # the first verdict on a message counts; repeats are noise
        if verdict.msg_id not in ids or verdict.msg_id in decided:
            continue
        decided.add(verdict.msg_id)
        if verdict.verdict == "reject":
            rejected[verdict.msg_id] = f"critic: {verdict.reason}"
    return rejected


def _confirmed_facts(turn: Turn, accepted: list[AgentMessage], from_memory: dict[str, Fact]) -> list[Fact]:
    """The memory facts that backed a conclusion, and each run fact an accepted
    conclusion states from its own sources, marked confirmed by its sender and the Critic."""
    confirmed = list(from_memory.values())
    for message in accepted:
        for fact in turn.all_facts():
            if fact.source_id in message.body.references and states(message, fact):
                confirmed.append(fact.model_copy(update={"confirmed_by": (message.header.sender, turn.role.name)}))
    return confirmed


def _publish_review(turn: Turn, accepted: list[AgentMessage], rejected: dict[str, str]) -> None:
    summary = f"{len(accepted)} conclusion(s) accepted, {len(rejected)} rejected"
    if rejected:
        summary += ": " + "; ".join(f"{k}: {v}" for k, v in rejected.items())
    turn.publish(MsgType.CRITIQUE, summary[:1500], to="draft", priority=Priority.P1,
                 payload=Critique(kind="review", accepted=tuple(m.msg_id for m in accepted), rejected=rejected))


def review_report(turn: Turn, message: AgentMessage) -> None:
    charter = turn.charter
    texts = turn.source_texts()
    sent = message.payload_as(ReportMessage)
    draft, markdown = sent.draft, sent.markdown
    # the sentence check the Writer verified its prose with: a paraphrase that passed it is
    # not sent back for wording, a sentence whose figure or words are not in its sources is
    problems = draft_problems(draft, texts, charter.goal, check=code_problems) + markdown_problems(markdown, texts)
    revisions = turn.state.get("revisions", 0)
    if problems and revisions < charter.max_revisions and not turn.finishing:
        turn.publish(MsgType.CRITIQUE, "Fix these before the report can ship:\n"
                     + "\n".join(f"- {p.line()}" for p in problems[:12]), to="draft", relation=message.msg_id,
                     payload=Critique(kind="revise", problems=tuple(p.line() for p in problems)),
                     priority=Priority.P0, ttl=1)
        turn.extra["revisions"] = revisions + 1
        return
    repairs: tuple[str, ...] = ()
    if problems:
        draft, log = repair_draft(draft, texts, turn.all_facts(), question=charter.goal, check=code_problems)
        repairs = tuple(log)
        for line in log:
            turn.ctx.log.write(ReportRepair(agent="critic", round=turn.round, repair=line))
    footer = sent.footer
    checks = acceptance(draft, charter)
    language = charter_language(charter)
    lab = LABELS[language]
    footer += f"\n\n{lab['criteria']}\n\n" + "\n".join(f"- {mark} {criterion(text, language)}"
                                                        for text, mark in checks.items())
    if repairs:
        footer += "\n\n" + lab["repairs"].format(n=len(repairs), n_s=plural_s(len(repairs)))
    markdown, cited = render_markdown(draft, turn.all_sources(), footer=footer, language=language)
    remaining = markdown_problems(markdown, texts)
    if remaining:  # the repair itself must leave nothing unverifiable behind
        raise AssertionError(f"report repair left problems: {remaining[0].line()}")
    turn.extra["report"] = Report(markdown=markdown, cited_sources=tuple(cited), round=turn.round,
                                  revision=revisions, accepted=True, repairs=repairs)
    turn.ctx.log.write(ReportAccepted(agent="critic", round=turn.round, repairs=len(repairs),
                                      cited=len(cited), criteria=checks))
    gaps = _gaps(turn)
    if gaps and turn.round < charter.max_rounds:
        turn.publish(MsgType.CRITIQUE, "No verified evidence yet for: " + "; ".join(gaps), to="plan",
                     # ttl 2: published as the round ends, read by the Planner in the next one
                     payload=Critique(kind="gaps", gaps=tuple(gaps)), priority=Priority.P0, ttl=2)


def acceptance(draft: ReportDraft, charter) -> dict[str, str]:
    """Each charter criterion with its status on the draft about to ship.

    The first two hold by construction (the repair leaves nothing unverifiable, and
    this is asserted above); the third depends on what survived; criteria a user added
    in words are listed as not machine-checked rather than silently claimed.
    """
    status = {DEFAULT_CRITERIA[0]: "✓", DEFAULT_CRITERIA[1]: "✓",
              DEFAULT_CRITERIA[2]: "✓" if draft.short_answer.source_ids else "✗"}
    return {c: status.get(c, "(not machine-checked)") for c in charter.acceptance_criteria}


def _gaps(turn: Turn) -> list[str]:
    """Questions asked this run that no accepted conclusion answers: the Searcher found
    nothing ("no passage answers ..."), or everything it found was rejected here."""
    rejected: set[str] = set()
    for own in turn.own_messages():
        if isinstance(own.body.payload, Critique):
            rejected.update(own.body.payload.rejected)
    found = turn.inbox_of(MsgType.CONCLUSION)
    answered = {m.payload_as(Conclusion).question for m in found if m.body.references and m.msg_id not in rejected}
    asked = {m.payload_as(Conclusion).question for m in found}
    return sorted(q for q in asked - answered if q)


def step(turn: Turn) -> None:
    conclusions = turn.unread_of(MsgType.CONCLUSION)
    if conclusions and not turn.finishing:  # finishing: no more model calls for the Critic
        review_conclusions(turn, conclusions)
    reports = turn.unread_of(REPORT)
    if reports:
        review_report(turn, reports[-1])


ROLE = Role(
    name="critic",
    prompt="critic.md",
    subscriptions=(Subscription(msg_type=MsgType.CONCLUSION), Subscription(msg_type=REPORT)),
    capabilities=("check",),
    publications=(MsgType.CRITIQUE,),
    step=step,
    after=("search",),
    finishing_duty="check",
    budget_tokens=4000,
    description="verifies conclusions and reports",
)
