"""From state to prompt sections: the layered strategy, and the naive baseline.

`layered` (the default) shows a role its own worktable, only the whiteboard messages
routed to it, the facts and sources it asked for, ranked by relevance to the current
task, inside the role's budget. `naive` is the "before" picture of the design
documents: the charter plus the full history of every message and every raw tool
output, for every role; it exists to be measured against.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Protocol

from briefroom.agents.role import Role
from briefroom.agents.run_context import RunContext
from briefroom.errors import ConfigError
from briefroom.prompts import load_template, render
from briefroom.protocol.bus import InboxView
from briefroom.protocol.extraction import content_words, relevance, sentences
from briefroom.protocol.messages import AgentMessage, MsgType, Priority
from briefroom.protocol.payloads import Instruction
from briefroom.protocol.prompt_assembly import (
    DATA_NOTICE,
    DEFAULT_FLOORS,
    DEFAULT_SHARES,
    BuiltPrompt,
    ContextBuilder,
    Decision,
    Item,
    Section,
    mark_data,
)
from briefroom.records import Charter, Fact, Worktable
from briefroom.report.language import LABELS, charter_language
from briefroom.state.schema import AgentState


class PromptTurn(Protocol):
    """What building a prompt uses of a role's turn (`agents/base.Turn` is one): named
    here so this module needs nothing of the machinery that calls it."""

    @property
    def role(self) -> Role: ...
    @property
    def ctx(self) -> RunContext: ...
    @property
    def state(self) -> AgentState: ...
    @property
    def view(self) -> InboxView: ...
    @property
    def charter(self) -> Charter: ...
    @property
    def worktable(self) -> Worktable: ...
    @property
    def published(self) -> list[AgentMessage]: ...


MAX_NOTES = 8
# Only the newest messages compete for whiteboard space (P0 always does): a prompt
# holds a few dozen, so ranking thousands would be work with no effect on the result.
BOARD_CANDIDATES = 100
# The latest summaries carry the thread; older rounds live on in facts (verbatim) and
# in the archive. Showing every summary would make prompts grow with the run again.
SUMMARY_WINDOW = 2
FOCUS_FACTS = 3


def render_charter(charter) -> str:
    lines = [f"Goal: {charter.goal}", "Acceptance criteria:"]
    lines += [f"- {c}" for c in charter.acceptance_criteria]
    if charter.constraints:
        lines.append("Constraints:")
        lines += [f"- {c}" for c in charter.constraints]
    lines.append(f"Team: {', '.join(charter.roles)}. Rounds at most: {charter.max_rounds}.")
    language = charter_language(charter)
    lines.append(f"Language: {language}: write every sentence of your own in {LABELS[language]['language_name']}.")
    return "\n".join(lines)


def stable_sections(turn: PromptTurn, schema: dict | None, tools: list[dict] | None) -> list[Section]:
    """Role, charter, tools, output format: identical bytes on every call of a role."""
    if turn.role.prompt is None:
        raise ConfigError(f"role {turn.role.name!r} asked a model but declares no prompt file (Role.prompt)")
    instructions = render(load_template(turn.role.prompt), data_notice=DATA_NOTICE)
    stable = [Section("role", "## Role", [Item("role", instructions, Priority.P0)]),
              Section("charter", "## Charter", [Item("charter", render_charter(turn.charter), Priority.P0)])]
    if tools:
        stable.append(Section("tools", "## Tools", [Item("tools", json.dumps(tools, indent=1), Priority.P0)]))
    if schema is not None:
        stable.append(Section("format", "## Output format", [Item(
            "format", "Reply with one JSON object matching this JSON schema:\n" + json.dumps(schema), Priority.P0)]))
    return stable


_Forms = tuple[str, str, frozenset[str]]
_FORMS: dict[tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]], _Forms] = {}


def envelope_view(message: AgentMessage, fields: tuple[str, ...]) -> tuple[tuple[tuple[str, str], ...],
                                                                           tuple[str, ...]]:
    """An instruction's task envelope as its receiver may see it: attributes for the
    fields it declared (`Role.task_fields`) and one line per artifact reference, if it
    declared `artifacts`. Nothing it did not declare; nothing for other messages."""
    if message.header.msg_type != MsgType.INSTRUCTION or not fields \
            or not isinstance(message.body.payload, Instruction):
        return (), ()
    task = message.body.payload
    attrs: list[tuple[str, str]] = []
    if "task_id" in fields and task.task_id:
        attrs.append(("task", task.task_id))
    if "version" in fields:
        attrs.append(("version", str(task.version)))
    if "lineage" in fields and task.lineage:
        attrs.append(("lineage", "/".join(reversed(task.lineage))))  # root first (">" is not allowed in a tag)
    refs: tuple[str, ...] = ()
    if "artifacts" in fields:
        refs = tuple(f"{a.ref} ({a.kind}): {a.summary}" for a in task.artifacts)
    return tuple(attrs), refs


def _message_forms(message: AgentMessage, fields: tuple[str, ...] = ()) -> _Forms:
    """Full and shortened data blocks and content words. Messages are immutable and
    their ids derive from their content, so each is rendered once per process for each
    envelope view of it (an id does not cover the payload, so the view is in the key)."""
    attrs_of_task, artifacts = envelope_view(message, fields)
    key = (message.msg_id, attrs_of_task, artifacts)
    cached = _FORMS.get(key)
    if cached is not None:
        return cached
    if len(_FORMS) > 50_000:
        _FORMS.clear()
    attrs = {"id": message.msg_id, "type": message.header.msg_type.value, "from": message.header.sender,
             "refs": ",".join(message.body.references), **dict(attrs_of_task)}
    body = message.body.content
    if artifacts:
        body += "\nAlready held for this task (read them with your tools when needed):\n" + \
            "\n".join(f"- {line}" for line in artifacts)
    short_attrs = {**attrs, **({"artifacts": ",".join(line.split(" ", 1)[0] for line in artifacts)}
                               if artifacts else {})}
    first = (sentences(message.body.content) or [message.body.content])[0][:240]
    forms = (mark_data("message", body, **attrs),
             mark_data("message", first + " [shortened]", **short_attrs),
             frozenset(content_words(message.body.content)))
    _FORMS[key] = forms
    return forms


def message_needs(message: AgentMessage) -> tuple[str, ...]:
    """What a message rests on, by item name: a conclusion needs the instruction it
    answers (its relation) and a passage of each source it cites. `layered_prompt`
    keeps only the names present in the prompt."""
    if message.header.msg_type != MsgType.CONCLUSION:
        return ()
    relation = (message.header.relation,) if message.header.relation else ()
    return (*relation, *(source_name(s) for s in message.body.references))


def source_name(source_id: str) -> str:
    """The name every passage of a source answers to (`Item.provides`)."""
    return f"source:{source_id}"


def message_item(message: AgentMessage, priority: Priority, task_words: frozenset[str],
                 task_fields: tuple[str, ...] = ()) -> Item:
    """A message as a data block; `task_fields`: the envelope fields the receiving role
    declared (an instruction shows those and no others)."""
    full, short, words = _message_forms(message, task_fields)
    score = len(words & task_words) / len(task_words) if task_words else 0.0
    return Item(message.msg_id, full, priority, int(message.header.timestamp), score, compressed=short,
                needs=message_needs(message))


def fact_item(fact: Fact, order: int, task: str) -> Item:
    # Compressed, a fact keeps what must never change: its numbers and its source.
    return Item(fact.fact_id, mark_data("fact", fact.text, id=fact.fact_id, source=fact.source_id), Priority.P1,
                order, relevance(fact.text, task) + (0.5 if fact.confirmed_by else 0.0),
                compressed=mark_data("fact", "numbers: " + " | ".join(fact.numbers), id=fact.fact_id,
                                     source=fact.source_id))


def passage_item(key: str, text: str, source_id: str, title: str, order: int, task: str) -> Item:
    keep = [s for s in sentences(text) if relevance(s, task) > 0 or any(ch.isdigit() for ch in s)]
    return Item(key, mark_data("passage", text, source=source_id, title=title), Priority.P1, order,
                relevance(text, task),
                compressed=mark_data("passage", " ".join(keep)[:600] + " [extract]", source=source_id, title=title)
                if keep else None, provides=(source_name(source_id),))


def within_prompt(sections: list[Section]) -> list[Section]:
    """Needs cut to the names this prompt has: what a conclusion rests on is kept with
    it when it is here at all (an instruction past its TTL, a source nobody retrieved
    for this role, cannot be). The builder then never shows an item without what is
    left of its needs."""
    names = {name for s in sections for it in s.items if it.text for name in (it.key, *it.provides)}
    return [Section(s.name, s.title, [dataclasses.replace(it, needs=tuple(n for n in it.needs if n in names))
                                      if any(n not in names for n in it.needs) else it for it in s.items],
                    s.by_rank) for s in sections]


def focus_items(facts: list[Fact], task: str) -> list[Item]:
    """The few facts most relevant to the task, recited next to it.

    The facts section sits early and in arrival order, so that it only grows at its end
    and the prompt's prefix stays cacheable; models attend most to the end of a
    prompt, so the best facts are repeated (verbatim, short) right before the task.
    """
    scored = sorted(((relevance(f.text, task), i, f) for i, f in enumerate(facts)), key=lambda t: (-t[0], t[1]))
    top = [f for score, _, f in scored[:FOCUS_FACTS] if score > 0]
    if not top:
        return []
    lines = "\n".join(f"- {f.text} [{f.source_id}]" for f in top)
    return [Item("focus", "Most relevant facts for this task (repeated from the Facts section):\n"
                 + mark_data("facts", lines), Priority.P1, 0, 1.0)]


def layered_prompt(turn: PromptTurn, task: str, material: list[Item], facts: list[Fact], schema: dict | None,
                   tools: list[dict] | None, budget: int) -> BuiltPrompt:
    table = turn.worktable
    # notes quote questions and passages the role read: data, like what they came from
    work = [Item(f"note{i}", mark_data("note", n), Priority.P3, i, relevance(n, task))
            for i, n in enumerate(table.notes[-MAX_NOTES:])]
    unread = turn.view.unread
    task_words = frozenset(content_words(task))

    def must_keep(m: AgentMessage) -> bool:
        return m.metadata.priority == Priority.P0 or (m.msg_id in unread and m.header.msg_type == MsgType.CRITIQUE)

    # Only the newest messages compete; older ones stay candidates only if they must be
    # kept (P0, unread critiques). The view indexes both, so this does not scan the board.
    recent = turn.view.recent(BOARD_CANDIDATES)
    recent_ids = {m.msg_id for m in recent}
    kept_old = [m for m in turn.view.pinned.values() if m.msg_id not in recent_ids and must_keep(m)]
    older = len(turn.view.messages) - len(recent)
    candidates = [*kept_old, *recent]
    prefiltered = [Decision("whiteboard", f"<{older - len(kept_old)} older messages>", "dropped",
                            f"older than the {BOARD_CANDIDATES} newest", 0, older - len(kept_old))] \
        if older > len(kept_old) else []
    fields = turn.role.task_fields  # what this role sees of an instruction's envelope
    board = [message_item(m, Priority.P0 if must_keep(m) else m.metadata.priority, task_words, fields)
             for m in candidates]
    summaries = [Item(f"summary{r.round}", mark_data("summary", r.render(), round=str(r.round)), Priority.P1, r.round,
                      relevance(r.render(), task),
                      compressed=mark_data("summary", "\n".join(p.text for p in r.summary.conclusions),
                                           round=str(r.round)))
                 for r in turn.state.get("summaries", [])[-SUMMARY_WINDOW:]]
    older_summaries = len(turn.state.get("summaries", [])) - len(summaries)
    if older_summaries > 0:
        prefiltered.append(Decision("summaries", f"<{older_summaries} older summaries>", "dropped",
                                    f"older than the {SUMMARY_WINDOW} newest rounds", 0, older_summaries))
    # Most stable first, most volatile last: memory is fixed for the run, facts only grow
    # at their end, summaries once a round, the whiteboard turns over with TTLs, sources
    # and notes change every turn. A role's next prompt then repeats the longest prefix
    # of its last one (provider prompt caches), and the task still comes last.
    memory = turn.ctx.memory_items if turn.role.reads_memory else []
    dynamic = [Section("memory", "## Memory (from earlier runs)", memory),
               Section("facts", "## Facts (verbatim from sources)",
                       [fact_item(f, i, task) for i, f in enumerate(facts)]),
               Section("summaries", "## Earlier rounds (summaries)", summaries),
               Section("whiteboard", "## Whiteboard (messages routed to you)", board),
               Section("sources", "## Sources", material, by_rank=True),
               Section("worktable", "## Your worktable (private notes)", work)]
    task_section = Section("task", "## Current task", [*focus_items(facts, task), Item("task", task, Priority.P0)])
    dynamic = within_prompt(dynamic)
    builder = ContextBuilder(turn.ctx.counter, budget, shares={**DEFAULT_SHARES, **turn.ctx.shares},
                             floors={**DEFAULT_FLOORS, **turn.ctx.floors})
    return builder.build(stable_sections(turn, schema, tools), dynamic, task_section, prefiltered)


def focused_prompt(turn: PromptTurn, task: str, schema: dict | None, budget: int) -> BuiltPrompt:
    """Role, charter, output format and the task, nothing of the run's context: for a
    check whose task holds all it needs (a sentence beside the passages it cites). The
    whiteboard's rejections ("…is not relevant to the goal") otherwise became Qwen2.5-
    Coder-1.5B's reasons to refuse supported sentences (`bench.support_judge`)."""
    builder = ContextBuilder(turn.ctx.counter, budget, shares={**DEFAULT_SHARES, **turn.ctx.shares},
                             floors={**DEFAULT_FLOORS, **turn.ctx.floors})
    return builder.build(stable_sections(turn, schema, None), [],
                         Section("task", "## Current task", [Item("task", task, Priority.P0)]), [])


def naive_prompt(turn: PromptTurn, task: str, material: list[Item], facts: list[Fact], schema: dict | None,
                 tools: list[dict] | None, budget: int) -> BuiltPrompt:
    """Everything, to everyone, in arrival order; only the model's window limits it."""
    history = [*turn.state.get("archive", []), *turn.state.get("whiteboard", []), *turn.published]
    # A baseline for tokens, not for safety: everything a model or a document wrote is a data block here too.
    entries = [(m.header.timestamp, m.msg_id, mark_data("message", m.body.content, sender=m.header.sender,
                                                         receiver=m.header.receiver, type=m.header.msg_type.value))
               for m in history]
    entries += [(at, f"tool{i}", mark_data("tool_output", raw)) for i, (at, raw) in enumerate(turn.ctx.transcript)]
    entries.sort(key=lambda e: e[0])
    items = [Item(key, text, Priority.P2, i) for i, (_, key, text) in enumerate(entries)]
    items += [Item(it.key, it.text, Priority.P2, len(entries) + i) for i, it in enumerate(material)]
    dynamic = [Section("history", "## Conversation so far", items)]
    task_section = Section("task", "## Current task", [Item("task", task, Priority.P0)])
    # The baseline keeps the newest history that fits the window: what a plain
    # append-everything agent does when it must truncate. Facts lost that way are lost.
    builder = ContextBuilder(turn.ctx.counter, budget, shares={"history": 1.0}, floors={})
    return builder.build(stable_sections(turn, schema, tools), dynamic, task_section)
