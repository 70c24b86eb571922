"""What every model call of a role costs and leaves behind: the `llm_call` event with
the exact messages and the tokens per prompt section, the run's token count, and the
stop when the run's budget is spent."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, BaseMessage

from briefroom.agents.run_context import RunContext
from briefroom.errors import FatalBreaker
from briefroom.events import LlmCall
from briefroom.models.cassette import serialize_messages
from briefroom.protocol.prompt_assembly import BuiltPrompt


def cached_prompt_tokens(reply: AIMessage) -> int | None:
    """Prompt tokens the endpoint served from its cache, if it says (OpenAI-style
    `prompt_tokens_details.cached_tokens`, which langchain reports as `cache_read`)."""
    details = reply.usage_metadata.get("input_token_details") if reply.usage_metadata else None
    if details and "cache_read" in details:
        return int(details["cache_read"] or 0)
    usage = (reply.response_metadata or {}).get("token_usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    return int(cached) if cached is not None else None


class CallLog:
    """One role's model calls in one turn: counted, charged to the run, logged."""

    def __init__(self, ctx: RunContext, role: str, round: int):
        self.ctx, self.role, self.round = ctx, role, round
        self.calls = 0

    def record(self, prompt: BuiltPrompt, messages: list[BaseMessage], reply: AIMessage, latency: float,
               purpose: str, attempt: int) -> None:
        ctx = self.ctx
        handle = ctx.models.for_role(self.role)
        completion = (reply.usage_metadata["output_tokens"] if reply.usage_metadata else 0) or ctx.counter.count(
            str(reply.content) + json.dumps([tc["args"] for tc in reply.tool_calls]))
        self.calls += 1
        turns = self.turn_tokens(prompt, messages)
        # the template's wrapping of the turns appended after the built prompt's two messages
        wrapping = ctx.counter.framing(None, len(messages)) - ctx.counter.framing(None, 2) if turns else 0
        prompt_tokens = prompt.total_tokens + turns + prompt.framing_tokens + wrapping
        ctx.charge(prompt_tokens + completion)
        sections = {**prompt.section_tokens, "turns": turns}
        build = prompt.stats.summary()
        ctx.log.write(LlmCall(
            agent=self.role, round=self.round, purpose=purpose, attempt=attempt,
            provider=handle.provider, model=handle.model_name, messages=serialize_messages(messages),
            sections=sections, prompt_tokens=prompt_tokens, budget=prompt.budget,
            use_pct=round(100 * prompt_tokens / prompt.budget, 1), prefix_hash=prompt.prefix_hash,
            build=build, compaction=bool(build["changes"]),
            strategy=ctx.context_strategy, completion_tokens=completion,
            cached_tokens=cached_prompt_tokens(reply),
            served_prompt_tokens=reply.usage_metadata["input_tokens"] if reply.usage_metadata else None,
            latency_ms=round(latency * 1000, 1), response=serialize_messages([reply])[0]))
        ctx.progress(self.round, self.role, f"{purpose} ({prompt_tokens}/{prompt.budget} tokens)")

    def turn_tokens(self, prompt: BuiltPrompt, messages: list[BaseMessage]) -> int:
        """Tokens of the tool results and correction turns appended after the built prompt.

        The builder already counted its own sections; only what came after is counted here.
        """
        return sum(self.ctx.counter.count(str(m.content)) for m in messages[len(prompt.messages):])


def check_run_budget(ctx: RunContext) -> None:
    budget = ctx.max_tokens
    if budget and ctx.tokens_used >= budget:
        raise FatalBreaker(f"run token budget exhausted: {ctx.tokens_used} of {budget} tokens used; "
                           "the state is checkpointed in the run directory; rerun with a larger --max-tokens")
