"""Searcher: searches the corpus for each instruction and reports sourced conclusions.

Numbers found in passages go to `facts` verbatim. A conclusion whose numbers are not
in its cited passages is not published: a small model's paraphrase ("71.2 billion"
for "723 billion") is replaced by the verbatim sentence it was about.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re

from pydantic import BaseModel, Field

from briefroom.agents.base import Role, Turn, passage_items
from briefroom.agents.tool_loop import code_call, stop_if_a_tool_broke
from briefroom.corpus.tools import LocalSearchArgs, LocalSearchResult, ReadSourceResult
from briefroom.events import ClaimRejected, Fallback
from briefroom.protocol.bus import Subscription
from briefroom.protocol.extraction import content_words, extract_facts, relevance
from briefroom.protocol.messages import AgentMessage, MsgType, Priority
from briefroom.protocol.payloads import Answer, Conclusion, Question
from briefroom.protocol.prompt_assembly import mark_data
from briefroom.protocol.tools import ToolOutcome
from briefroom.records import Claim, Passage, SourceRecord
from briefroom.report.checks import claim_problems, closest_fact
from briefroom.state.reducers import merge_sources
from briefroom.web.tools import WebSearchResult

# Search results the model found but did not open: code reads this many of them per
# question, so a round rests on fetched text even when the model never calls fetch_url.
WEB_READS_PER_QUESTION = 2

MAX_INSTRUCTIONS_PER_TURN = 4
# Besides the model's findings, the passages' most relevant figures travel verbatim: a
# number copied by code cannot be mis-copied by a model.
VERBATIM_FIGURES_PER_QUESTION = 2
# A part of the question searched alone can miss the source the whole question finds
# first: "How big is the 2026 public cloud market" ranks a short newswire and an opinion
# post above the analyst brief, whose opening also answers "who is growing fastest". The
# whole question is searched too, and its best passages from sources the part's searches
# did not return join the part's (this many, so a part's material stays its own).
WHOLE_QUESTION_HITS = 2


class Finding(BaseModel):
    claim: str = Field(min_length=5, description="what the passage says, numbers copied exactly",
                       json_schema_extra={"x-fill": "evidence.text", "maxLength": 400})
    source_ids: list[str] = Field(min_length=1, max_length=2, json_schema_extra={"x-fill": "evidence.refs"})
    subject: str = Field(min_length=3, max_length=80, description="what the claim is about, in a few words",
                         json_schema_extra={"x-fill": "subject"})


def support(text: str, sources: list[str], texts: dict[str, str]) -> float:
    """Confidence in a conclusion, by code: the share of its content words its cited
    sources hold (its numbers are already checked exactly). A sentence copied from a
    source scores 1.0; a paraphrase scores lower the more words it adds."""
    words = content_words(text)
    if not words:
        return 0.0
    held = set().union(*(content_words(texts.get(s, "")) for s in sources)) if sources else set()
    return round(len(words & held) / len(words), 2)


# A query that is a web address or an API call: small models write one when they see a
# tool schema, and the corpus's keyword search then ranks passages by "https" and "com".
_ADDRESS = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*://|www\.)\S*\s*$|^\s*[\w.-]+\.[a-z]{2,}/\S*\s*$", re.IGNORECASE)


def searched_for(query: str, question: str) -> bool:
    """Whether a corpus query looks for what the question asks: plain words, at least one
    of them the question's. "planner", "SHOW ALL" or a URL search for something else."""
    return not _ADDRESS.match(query) and relevance(query, question) > 0


def subject_key(subject: str) -> str:
    """Word order and filler words do not make a different subject."""
    return " ".join(sorted(content_words(subject)))


def previous_on_subject(own: list[AgentMessage], key: str) -> AgentMessage | None:
    """The live conclusion this role already published on the same subject, if any.

    A newer finding on a subject supersedes the older one: readers see only the latest,
    and the chain (supersedes -> older id) stays in the log and the archive.
    """
    if not key:
        return None
    replaced = {m.header.supersedes for m in own if m.header.supersedes}
    same = [m for m in own if isinstance(m.body.payload, Conclusion) and m.msg_id not in replaced
            and m.body.payload.subject == key]
    return same[-1] if same else None


class Findings(BaseModel):
    findings: list[Finding] = Field(min_length=1, max_length=4)


def _records(outcomes) -> list[SourceRecord]:
    """One SourceRecord per source hit, passages merged by the state's own reducer."""
    records: dict[str, SourceRecord] = {}
    for outcome in outcomes:
        if isinstance(outcome.result, LocalSearchResult):
            for hit in outcome.result.hits:
                passage = Passage(chunk_id=hit.chunk_id, start=hit.start, end=hit.end, text=hit.text)
                records = merge_sources(records, {hit.source_id: SourceRecord(
                    source_id=hit.source_id, title=hit.title, path=hit.path, passages=(passage,))})
    return list(records.values())


def whole_question_passages(turn: Turn, instruction: AgentMessage,
                            outcomes: list[ToolOutcome]) -> list[ToolOutcome]:
    """The run's whole question searched by code, its hits cut to the best
    WHOLE_QUESTION_HITS from sources `outcomes` did not return; nothing when the
    instruction is the whole question (or there is no corpus)."""
    goal = turn.charter.goal
    tool = turn.ctx.tools.get("local_search")
    if tool is None or subject_key(goal) == subject_key(instruction.body.content):
        return []
    outcome = code_call(turn, "local_search", f"whole-{instruction.msg_id}",
                        LocalSearchArgs(query=goal[:400]).model_dump(), goal)
    if not isinstance(outcome.result, LocalSearchResult):
        return [outcome]  # a failed search still counts for `stop_if_a_tool_broke`
    found = {hit.source_id for o in outcomes if isinstance(o.result, LocalSearchResult) for hit in o.result.hits}
    new = [hit for hit in outcome.result.hits if hit.source_id not in found][:WHOLE_QUESTION_HITS]
    return [dataclasses.replace(outcome, result=LocalSearchResult(hits=new))] if new else []


def search(turn: Turn, instruction: AgentMessage, task_id: str | None,
           calls: list[ToolOutcome]) -> list[AgentMessage]:
    """Search for one instruction's (or question's) text and publish what answers it;
    returns the conclusions published. Every tool call made goes to `calls`."""
    question = instruction.body.content
    first = len(turn.published)
    outcomes = turn.use_tools("Find passages in the corpus that answer the question below.\n"
                              + mark_data("question", question))
    outcomes += read_found(turn, outcomes, question)  # web results the model did not open (with --web)
    # a fetched page's result is a LocalSearchResult too; only a search of the corpus counts here
    if not any(o.ok and o.tool == "local_search" and searched_for(o.args.get("query", ""), question)
               for o in outcomes):
        # The model did not search for the question (no search, a failed one, or a query
        # about something else): search the question itself so the round still rests on
        # retrieved text, and say so in the log.
        turn.ctx.log.write(Fallback(agent="searcher", round=turn.round, reason="no local_search for the question"))
        outcomes.append(code_call(turn, "local_search", f"fallback-{instruction.msg_id}",
                                  LocalSearchArgs(query=question[:400]).model_dump(), question))
    outcomes += whole_question_passages(turn, instruction, outcomes)
    calls += outcomes
    records = _records(outcomes)
    turn.add_sources(records)
    for outcome in outcomes:
        if isinstance(outcome.result, ReadSourceResult):
            turn.add_facts(extract_facts(outcome.result.text, outcome.result.source_id, "searcher", turn.round))
    for record in records:
        for passage in record.passages:
            turn.add_facts(extract_facts(passage.text, record.source_id, "searcher", turn.round))
    if not records:
        turn.publish(MsgType.CONCLUSION, f"No passage in the corpus answers: {question}",
                     relation=instruction.msg_id, payload=Conclusion(question=question, task_id=task_id),
                     priority=Priority.P2)
        return turn.published[first:]
    ids = [r.source_id for r in records]
    # Finishing (85% of --max-tokens): no model call; the verbatim figures below still go out.
    if turn.finishing:
        findings = Findings.model_construct(findings=[])
    else:
        findings = turn.ask("State what the passages say that answers the question below.\n"
                            + mark_data("question", question), Findings,
                            material=passage_items(records, question), enums={"source_ids": ids})
    texts = turn.source_texts()
    said = {m.body.content for m in turn.own_messages()}
    covered = False  # something answers this question: new here, or already said for another
    for finding in findings.findings:
        claim = Claim(text=" ".join(finding.claim.split()), source_ids=list(dict.fromkeys(finding.source_ids)))
        if claim_problems(claim, texts):
            fact = closest_fact(claim, [f for f in turn.all_facts() if f.source_id in ids], texts)
            turn.ctx.log.write(ClaimRejected(agent="searcher", round=turn.round, claim=claim.text,
                                             replaced_by=fact.fact_id if fact else None))
            if fact is None:
                continue
            claim = Claim(text=fact.text, source_ids=[fact.source_id])
        covered = True
        if claim.text in said:
            continue
        said.add(claim.text)
        key = subject_key(finding.subject)
        older = previous_on_subject(turn.own_messages(), key)
        turn.publish(MsgType.CONCLUSION, claim.text, references=claim.source_ids, relation=instruction.msg_id,
                     payload=Conclusion(question=question, subject=key, task_id=task_id,
                                        confidence=support(claim.text, claim.source_ids, texts)),
                     priority=Priority.P1,
                     supersedes=older.msg_id if older else None)
    relevant = sorted((f for f in turn.all_facts() if f.source_id in ids),
                      key=lambda f: -len(content_words(f.text) & content_words(question)))
    for fact in [f for f in relevant if f.text not in said][:VERBATIM_FIGURES_PER_QUESTION]:
        said.add(fact.text)
        covered = True
        turn.publish(MsgType.CONCLUSION, fact.text, references=[fact.source_id], relation=instruction.msg_id,
                     payload=Conclusion(question=question, verbatim_fact=fact.fact_id, task_id=task_id,
                                        confidence=1.0), priority=Priority.P1)
    if not covered:  # passages came back, but nothing in them held up: the team must still hear of it
        turn.publish(MsgType.CONCLUSION, f"No passage in the corpus answers: {question}",
                     relation=instruction.msg_id, payload=Conclusion(question=question, task_id=task_id),
                     priority=Priority.P2)
    turn.note(f"searched: {question} -> {len(records)} source(s)")
    return turn.published[first:]


def answer(turn: Turn, question: AgentMessage, found: list[AgentMessage]) -> None:
    """Reply to a role's question, to that role: the best-supported conclusion found for
    it (its conclusions also went to the team, for the Critic to check)."""
    sourced = [m for m in found if m.body.references]
    best = max(sourced, key=lambda m: m.payload_as(Conclusion).confidence or 0.0, default=None)
    text = best.body.content if best else f"No passage in the corpus answers: {question.body.content}"
    turn.reply(question, MsgType.ANSWER, text, references=best.body.references if best else (),
               payload=Answer(question=question.body.content, answered=best is not None,
                              confidence=best.payload_as(Conclusion).confidence if best else None))


def step(turn: Turn) -> None:
    calls: list[ToolOutcome] = []
    for instruction in turn.unread_of(MsgType.INSTRUCTION)[:MAX_INSTRUCTIONS_PER_TURN]:
        if turn.finishing:
            turn.note(f"skipped (token budget nearly spent): {instruction.body.content}")
            break
        search(turn, instruction, turn.task(instruction).get("task_id"), calls)
    for question in turn.unread_of(MsgType.QUESTION)[:MAX_INSTRUCTIONS_PER_TURN]:
        if turn.finishing:
            turn.reply(question, MsgType.ANSWER, "Not searched: the run's token budget is nearly spent.",
                       payload=Answer(question=question.body.content, answered=False))
            continue
        answer(turn, question, search(turn, question, question.payload_as(Question).task_id, calls))
    # Conclusions resting on a tool that never worked would read as "the corpus does not
    # say": the run stops with the tool's error instead (resumable once it is fixed).
    stop_if_a_tool_broke(calls, turn.ctx.tools, f"{turn.worker}'s turn in round {turn.round}")


ROLE = Role(
    name="searcher",
    prompt="searcher.md",
    subscriptions=(Subscription(msg_type=MsgType.INSTRUCTION), Subscription(msg_type=MsgType.QUESTION)),
    capabilities=("search",),
    publications=(MsgType.CONCLUSION, MsgType.ANSWER),
    step=step,
    tools=("local_search", "read_source", "read_artifact"),
    optional_tools=("web_search", "fetch_url"),  # with --web
    after=("plan",),
    fan_out=True,  # with --parallel N, one instance per sub-question
    task_fields=("task_id", "lineage", "artifacts"),
    budget_tokens=5000,
    description="searches the corpus and reports sourced conclusions",
)


def read_found(turn: Turn, outcomes: list[ToolOutcome], question: str) -> list[ToolOutcome]:
    """Fetch the first search results nobody opened yet (at most WEB_READS_PER_QUESTION),
    through `code_call`, logged as tool calls of the role."""
    if turn.ctx.tools.get("fetch_url") is None or "fetch_url" not in (*turn.role.tools, *turn.role.optional_tools):
        return []
    opened = {str(o.args.get("url", "")) for o in outcomes if o.tool == "fetch_url"}
    urls: list[str] = []
    for outcome in outcomes:
        if outcome.ok and isinstance(outcome.result, WebSearchResult):
            urls += [r.url for r in outcome.result.results if r.url not in opened and r.url not in urls]
    done = []
    for n, url in enumerate(urls[:WEB_READS_PER_QUESTION]):
        call_id = f"read_{hashlib.sha256(f'{turn.worker}|{turn.round}|{question}|{url}'.encode()).hexdigest()[:12]}_{n}"
        done.append(code_call(turn, "fetch_url", call_id, {"url": url, "query": question[:400]}, question))
    return done
