"""Role spec and the machinery every role shares: one Turn per node invocation.

A role is data (`Role`) plus a `step(turn)` function. The Turn gives the step what the
role is allowed to see (its inbox, its own worktable, facts, sources) and the only
ways to act: ask the model for structured output, use tools (`tool_loop.py`), publish
or forward messages, write notes. Everything a step does becomes one state update when it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel, ValidationError

from briefroom.agents.model_calls import CallLog, check_run_budget
from briefroom.agents.prompting import focused_prompt, layered_prompt, naive_prompt, passage_item
from briefroom.agents.role import Role
from briefroom.agents.run_context import RunContext
from briefroom.agents.structured import MAX_CONTRACT_RETRIES, constrain_schema, parse_json_object
from briefroom.agents.tool_loop import use_tools
from briefroom.errors import ContractError
from briefroom.events import BusMessage, Compaction, ContractErrorEvent, Finishing
from briefroom.protocol.budget import input_budget
from briefroom.protocol.messages import AgentMessage, MsgType, Priority, make_message
from briefroom.protocol.payloads import Conclusion, Instruction, PayloadModel
from briefroom.protocol.prompt_assembly import BuiltPrompt, Item, mark_data
from briefroom.protocol.tools import ToolOutcome
from briefroom.records import Charter, Claim, Fact, SourceRecord, Worktable
from briefroom.report.checks import claim_problems, restates
from briefroom.review import Answer, ClarifyRequest, Pause, PlanReviewRequest, ask_user
from briefroom.state.schema import AgentState

T = TypeVar("T", bound=BaseModel)
# Message numbers each instance of a fan-out may use in one step (see `Turn._seq_base`).
INSTANCE_SEQ_BLOCK = 64


@dataclass
class Turn:
    role: Role
    state: AgentState
    ctx: RunContext
    published: list[AgentMessage] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    new_facts: list[Fact] = field(default_factory=list)
    new_sources: dict[str, SourceRecord] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    # Set when this turn is one of several instances of a fan-out role running at the
    # same time (see `graph/builder.py`): its 1-based number and the one message it handles.
    instance: int | None = None
    assigned: str | None = None
    # How this turn waits for the run's user: the graph's interrupt (`graph/builder.py`).
    # None outside a graph node, where nobody could answer.
    pause: Pause | None = None


    def ask_user(self, request: PlanReviewRequest | ClarifyRequest) -> Answer:
        """Stop the run until its user answers `request` (`review.ask_user`)."""
        if self.pause is None:
            raise RuntimeError(f"{self.worker} asked its user outside a graph node")
        return ask_user(request, self.pause)
    def __post_init__(self) -> None:
        board = self.state.get("whiteboard", [])
        # The bus keeps each role's inbox incrementally; the lists it hands out are shared, read-only.
        with self.ctx.bus.lock:  # one consistent copy, even while instances publish
            self.view = self.ctx.bus.view(self.role.name, board, self.state.get("seen", {}).get(self.role.name, []))
            if self.instance:
                self.view = self.view.without({mid for mid in self.view.unread if mid != self.assigned})
        self.calls = CallLog(self.ctx, self.worker, self.round)
        # Instances publish in the same step: each numbers its messages in its own block,
        # so ids and timestamps never collide and their order does not depend on timing.
        self._seq_base = len(board) + (self.instance - 1) * INSTANCE_SEQ_BLOCK if self.instance else len(board)
        self._texts: dict[str, str] = {}  # source texts read this turn (one SQLite read each)

    @property
    def worker(self) -> str:
        """Who acts: the role, or `role/n` for the n-th instance of a fan-out. Model
        calls, recordings, worktable and log lines are kept per worker."""
        return f"{self.role.name}/{self.instance}" if self.instance else self.role.name

    # --- reading -------------------------------------------------------------------
    @cached_property
    def inbox(self) -> list[AgentMessage]:
        """Live messages routed to this role, oldest first (listed only if a step asks)."""
        return self.view.inbox

    @cached_property
    def unread(self) -> list[AgentMessage]:
        """Inbox messages this role has not read yet (fixed for the turn); an instance
        of a fan-out sees only the one message it was given (set in `__post_init__`)."""
        return list(self.view.unread.values())

    @property
    def round(self) -> int:
        return self.state.get("round", 1)

    @property
    def charter(self) -> Charter:
        return self.state["charter"]

    @property
    def worktable(self) -> Worktable:
        return self.state.get("worktables", {}).get(self.worker, Worktable())

    @property
    def finishing(self) -> bool:
        """Past the run's finish threshold (85% of --max-tokens by default): wrap up,
        start nothing new."""
        return bool(self.state.get("finishing")) or self.ctx.compaction.stage(
            self.ctx.tokens_used, self.ctx.max_tokens) == "finish"

    def _compacted(self, budget: int) -> int:
        """The prompt budget at the run's compaction stage, announcing a stage the first
        time the run reaches it (totals before and after in the `compaction` event)."""
        ctx = self.ctx
        stage = ctx.compaction.stage(ctx.tokens_used, ctx.max_tokens)
        if stage is None or ctx.max_tokens is None:
            return budget
        after = max(256, int(budget * ctx.compaction.squeeze)) if stage in ("compress", "finish") else budget
        if ctx.meter.announce(stage):
            ctx.log.write(Compaction(round=self.round, stage=stage, tokens_used=ctx.tokens_used,
                                     max_tokens=ctx.max_tokens, share_used=round(ctx.tokens_used / ctx.max_tokens, 3),
                                     budget_before=budget if after != budget else None,
                                     budget_after=after if after != budget else None))
            ctx.progress(self.round, self.worker, f"{stage}: {ctx.tokens_used} of {ctx.max_tokens} tokens used")
        return after

    def unread_of(self, msg_type: MsgType) -> list[AgentMessage]:
        return [m for m in self.unread if m.header.msg_type == msg_type]

    def inbox_of(self, msg_type: MsgType) -> list[AgentMessage]:
        return [m for m in self.inbox if m.header.msg_type == msg_type]

    def task(self, message: AgentMessage) -> dict[str, Any]:
        """The envelope of an instruction, cut to the fields this role declared (plus the
        task itself, which is the message's content)."""
        envelope = message.payload_as(Instruction)
        return {"task": message.body.content,
                **{name: getattr(envelope, name) for name in self.role.task_fields}}

    def own_messages(self) -> list[AgentMessage]:
        """What this role has published so far (live on the board or just now)."""
        return [m for m in self.state.get("whiteboard", []) if m.header.sender == self.role.name] + self.published

    def all_sources(self) -> dict[str, SourceRecord]:
        return {**self.state.get("sources", {}), **self.new_sources}

    def all_facts(self) -> list[Fact]:
        return [*self.state.get("facts", []), *self.new_facts]

    def source_texts(self) -> dict[str, str]:
        """Full text of every source retrieved in this run (what citations may point at)."""
        for sid in self.all_sources():
            if sid not in self._texts:
                doc = self.ctx.index.document(sid) if self.ctx.index else None
                if doc is not None:
                    self._texts[sid] = doc.text
        return dict(self._texts)

    # --- acting --------------------------------------------------------------------
    def publish(self, msg_type: MsgType, content: str, *, to: str | None = None,
                references: Iterable[str] = (), payload: PayloadModel | None = None,
                relation: str | None = None, supersedes: str | None = None, ttl: int = 2,
                priority: Priority = Priority.P2) -> AgentMessage:
        """Put a message on the whiteboard for the role with capability `to` (None: for
        every subscriber). The bus checks the sender may publish it and someone receives it."""
        return self._post(self._message(msg_type, content, receiver=self.ctx.bus.address(to),
                                        references=tuple(references), payload=payload, relation=relation,
                                        supersedes=supersedes, ttl_rounds=ttl, priority=priority))

    def reply(self, message: AgentMessage, msg_type: MsgType, content: str, *, references: Iterable[str] = (),
              payload: PayloadModel | None = None, ttl: int = 2, priority: Priority = Priority.P1) -> AgentMessage:
        """Answer `message` to its sender alone (`relation` = its id): the reply to a
        question goes back to whoever asked, whatever role that is."""
        return self._post(self._message(msg_type, content, receiver=message.header.sender,
                                        references=tuple(references), payload=payload, relation=message.msg_id,
                                        ttl_rounds=ttl, priority=priority))

    def forward(self, message: AgentMessage) -> AgentMessage:
        """Pass on a message this role guards, unchanged, to the subscribers it was held
        from. A forwarded message that supersedes an older one supersedes what this role
        passed on in place of that one, so receivers still see only the latest."""
        replaced = self._passed_on_for(message.header.supersedes)
        return self._post(self._message(
            message.header.msg_type, message.body.content, receiver=message.header.receiver,
            references=message.body.references, payload=message.body.payload, relation=message.header.relation,
            supersedes=replaced.msg_id if replaced else None, ttl_rounds=message.metadata.ttl_rounds,
            priority=message.metadata.priority, archive_policy=message.metadata.archive_policy))

    def restate(self, message: AgentMessage, content: str) -> AgentMessage | None:
        """Pass on a conclusion this role guards in other words: the same citations, the
        same payload, and a header that supersedes the original (or what this role passed
        on in place of the older message the original supersedes, so receivers see only
        the latest). The restatement must pass the code checks a conclusion is held to
        (`report.checks.claim_problems`: its figures in the sources it cites, its words in
        one of their sentences); one that does not is not published and None is returned.

        The payload's `verbatim_fact` no longer holds (code did not copy this text); the
        facts the original stated become `restates`, which the Critic confirms by their
        figures in any spelling (`report.checks.restates`). A fact whose figures the new
        text does not say makes the restatement refused."""
        content = " ".join(content.split())
        payload = message.payload_as(Conclusion)
        references = message.body.references
        if not references or claim_problems(Claim(text=content, source_ids=list(references)), self.source_texts()):
            return None
        facts = {f.fact_id: f for f in self.all_facts() if f.source_id in references}
        stated = [fid for fid, f in facts.items()
                  if f.text in message.body.content or fid == payload.verbatim_fact or fid in payload.restates]
        if not all(restates(content, facts[fid].text) for fid in stated):
            return None
        replaced = self._passed_on_for(message.header.supersedes)
        return self._post(self._message(
            message.header.msg_type, content, receiver=message.header.receiver, references=references,
            payload=payload.model_copy(update={"verbatim_fact": None, "restates": tuple(stated)}),
            relation=message.header.relation, supersedes=replaced.msg_id if replaced else message.msg_id,
            ttl_rounds=message.metadata.ttl_rounds, priority=message.metadata.priority,
            archive_policy=message.metadata.archive_policy))

    def _passed_on_for(self, older_id: str | None) -> AgentMessage | None:
        """What this role passed on in place of the message `older_id`: its unchanged copy,
        or its restatement (which supersedes it)."""
        if older_id is None:
            return None
        own = self.own_messages()
        restated = [m for m in own if m.header.supersedes == older_id]
        if restated:
            return restated[-1]
        older = next((m for m in self.state.get("archive", []) + self.state.get("whiteboard", [])
                      if m.msg_id == older_id), None)
        if older is None:
            return None
        copies = {m.body.payload.model_dump_json() + m.body.content: m for m in own}
        return copies.get(older.body.payload.model_dump_json() + older.body.content)

    def _message(self, msg_type: MsgType, content: str, **fields: Any) -> AgentMessage:
        """A message from this role, numbered next in its block (see `_seq_base`)."""
        return make_message(sender=self.role.name, msg_type=msg_type, content=content, round=self.round,
                            seq=self._seq_base + len(self.published), **fields)

    def _post(self, message: AgentMessage) -> AgentMessage:
        self.ctx.bus.check_publish(message)
        self.published.append(message)
        self.ctx.log.write(BusMessage(agent=self.worker, round=self.round, message=message,
                                      recipients=list(self.ctx.bus.recipients(message))))
        return message

    def clock(self) -> float:
        """Now, on the scale of message timestamps (round * 1000 + sequence)."""
        return self.round * 1000 + self._seq_base + len(self.published) + 0.5

    def note(self, text: str) -> None:
        self.notes.append(text)

    def add_sources(self, records: Iterable[SourceRecord]) -> None:
        from briefroom.state.reducers import merge_sources

        self.new_sources = merge_sources(self.new_sources, {r.source_id: r for r in records})

    def add_facts(self, facts: Iterable[Fact]) -> None:
        known = {f.fact_id for f in self.all_facts()}
        for fact in facts:
            if fact.fact_id not in known:
                known.add(fact.fact_id)
                self.new_facts.append(fact)

    # --- prompts -------------------------------------------------------------------
    def build_prompt(self, task: str, *, material: list[Item] | None = None, facts: list[Fact] | None = None,
                     schema: dict | None = None, tools: list[dict] | None = None, focused: bool = False) -> BuiltPrompt:
        handle = self.ctx.models.for_role(self.worker)
        # What the template and the tool definitions add comes off the window first: the
        # budget is then in the tokens the server will count.
        framing = self.ctx.counter.framing(tools, 2)
        window = input_budget(handle.context_window) - framing
        if focused:
            built = focused_prompt(self, task, schema, self._compacted(min(self.role.budget_tokens, window)))
        elif self.ctx.context_strategy == "naive":
            built = naive_prompt(self, task, material or [], facts or [], schema, tools, window)
        else:
            built = layered_prompt(self, task, material or [], facts or [], schema, tools,
                                   self._compacted(min(self.role.budget_tokens, window)))
        built.framing_tokens = framing
        return built

    def ask(self, task: str, output: type[T], *, material: list[Item] | None = None, facts: list[Fact] | None = None,
            enums: dict[str, list[str]] | None = None, check: Callable[[T], list[str]] | None = None,
            max_items: dict[str, int] | None = None, give_up_when_cut: bool = False, focused: bool = False) -> T:
        """Structured output: prompt -> model -> JSON -> pydantic, with bounded correction.
        `give_up_when_cut`: for a caller with a fallback, a reply cut at the output cap
        ends the asking at once instead of being corrected. `focused`: the model sees the
        role, the charter and the task only (`prompting.focused_prompt`)."""
        base = output.model_json_schema()
        schema = constrain_schema(base, enums or {}, max_items)
        # The prompt shows the schema without this call's allowed values, which change
        # from call to call (the source ids retrieved, the messages under review): the
        # output-format section then stays byte-identical across a role's calls and a
        # prompt cache reuses it. The values go to the end, with the task; the endpoint
        # still gets the constrained schema (llama.cpp makes it a grammar).
        shown = base if enums or max_items else schema
        prompt = self.build_prompt(task + allowed_values(enums or {}, max_items or {}), material=material,
                                   facts=facts, schema=shown, focused=focused)
        messages = list(prompt.messages)
        handle = self.ctx.models.for_role(self.worker)
        last_error = ""
        for attempt in range(MAX_CONTRACT_RETRIES + 1):
            check_run_budget(self.ctx)
            reply, latency = handle.invoke(messages, schema=schema, schema_name=output.__name__)
            self.calls.record(prompt, messages, reply, latency, f"ask {output.__name__}", attempt)
            try:
                value = output.model_validate(parse_json_object(str(reply.content)))
                problems = check(value) if check else []
                if not problems:
                    return value
                last_error = "; ".join(problems)
            except (ValueError, ValidationError) as exc:
                last_error = str(exc).replace("\n", " ")[:600]
            self.ctx.log.write(ContractErrorEvent(agent=self.worker, round=self.round, attempt=attempt,
                                                  schema_=output.__name__, error=last_error))
            if give_up_when_cut and (reply.response_metadata or {}).get("finish_reason") == "length":
                # Cut at the output cap: the model ran on (a small model looping inside the
                # grammar). Asked again it runs on again, each time with a longer prompt.
                raise ContractError(f"{self.role.name}: the model's {output.__name__} was cut at the output "
                                    f"cap before it ended: {last_error[:200]}")
            messages = [*messages, AIMessage(content=str(reply.content)),
                        HumanMessage(content="Your reply did not match the required output:\n"
                                             + mark_data("error", last_error) + "\n"
                                             "Reply again with only one JSON object that matches the schema.")]
        raise ContractError(f"{self.role.name}: the model's {output.__name__} was invalid after "
                            f"{MAX_CONTRACT_RETRIES} corrections: {last_error[:200]}")

    def use_tools(self, task: str, max_turns: int = 3) -> list[ToolOutcome]:
        """Let the model call this role's tools (see `tool_loop.use_tools`)."""
        return use_tools(self, task, max_turns)

    # --- result --------------------------------------------------------------------
    def updates(self) -> dict[str, Any]:
        update: dict[str, Any] = {
            "seen": {self.role.name: [m.msg_id for m in self.unread]},
        }
        if self.published:
            update["whiteboard"] = self.published
        if self.notes:
            update["worktables"] = {self.worker: Worktable(notes=tuple(self.notes))}
        if self.new_facts:
            update["facts"] = self.new_facts
        if self.new_sources:
            update["sources"] = self.new_sources
        update.update(self.extra)
        update.update(finishing_update(self.state, self.ctx))
        return update


def finishing_update(state: AgentState, ctx: RunContext) -> dict[str, Any]:
    """`{"finishing": True}` the first time the run is past its finish threshold (logged
    once), else nothing. Written by a role's node, or by the join after instances of a
    fan-out, which could each only see its own share of the run."""
    if state.get("finishing") or ctx.compaction.stage(ctx.tokens_used, ctx.max_tokens) != "finish":
        return {}
    ctx.log.write(Finishing(round=state.get("round", 1), tokens_used=ctx.tokens_used, max_tokens=ctx.max_tokens))
    return {"finishing": True}


def allowed_values(enums: dict[str, list[str]], max_items: dict[str, int]) -> str:
    """This call's constraints on the reply, said after the task (see `Turn.ask`)."""
    lines = [f"- {name}: one of {', '.join(values)}" for name, values in enums.items()]
    lines += [f"- {name}: at most {n} item(s)" for name, n in max_items.items()]
    return ("\nIn this reply:\n" + "\n".join(lines)) if lines else ""


def passage_items(records: Iterable[SourceRecord], task: str) -> list[Item]:
    """Retrieved passages as data items for the `sources` section."""
    return [passage_item(p.chunk_id, p.text, r.source_id, r.title, -i, task)
            for r in records for i, p in enumerate(r.passages)]
