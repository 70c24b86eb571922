"""Prompt-cache hits: what the endpoint reports in its usage (llama.cpp does, like OpenAI)."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from briefroom.agents.model_calls import cached_prompt_tokens
from briefroom.events import LlmCall
from briefroom.inspect import cache_hit_rate


def test_an_endpoints_cached_tokens_are_read_from_its_usage():
    reply = AIMessage(content="ok", usage_metadata={"input_tokens": 400, "output_tokens": 1, "total_tokens": 401,
                                                    "input_token_details": {"cache_read": 300}})
    assert cached_prompt_tokens(reply) == 300
    assert cached_prompt_tokens(AIMessage(content="ok")) is None


def test_the_hit_rate_is_over_what_the_endpoint_counted():
    def call(cached, served):
        return LlmCall.model_construct(cached_tokens=cached, served_prompt_tokens=served)

    assert cache_hit_rate([call(300, 400), call(0, 600), call(None, 1000)]) == 0.3
    assert cache_hit_rate([call(None, 400)]) is None


def test_each_role_sends_its_own_stable_cache_key_to_openai_and_nothing_to_other_servers():
    from briefroom.config import Settings
    from briefroom.llm import build_pool

    pool = build_pool(Settings(model="gpt-4o-mini", api_key="sk-test-not-a-key"), ["planner", "writer"])
    keys = {r: h.chat_model.model_kwargs.get("prompt_cache_key") for r, h in pool.handles.items()}
    assert keys == {"planner": "briefroom-planner", "writer": "briefroom-writer"}
    local = build_pool(Settings(model="qwen2.5", base_url="http://127.0.0.1:8000/v1", endpoint_kind="vllm"),
                       ["planner"])
    assert "prompt_cache_key" not in local.handles["planner"].chat_model.model_kwargs


def test_the_run_page_states_the_cache_hit_rate(tmp_path):
    import json

    from briefroom.events import BuildSummary
    from briefroom.runpage import render_page

    def call(cached, served):
        return LlmCall(agent="critic", round=1, purpose="ask Review", attempt=0, provider="embedded", model="m",
                       messages=[], sections={"task": 10}, prompt_tokens=10, budget=100, use_pct=10.0,
                       prefix_hash="h", build=BuildSummary(candidates=1, included=1, compressed=0, dropped=0,
                                                           changes=[]),
                       compaction=False, completion_tokens=1, cached_tokens=cached, served_prompt_tokens=served,
                       latency_ms=1.0, response={"type": "ai", "content": "{}"})

    (tmp_path / "sources.json").write_text(json.dumps({"cited": [], "sources": {}}))
    page = render_page(tmp_path, [call(300, 400), call(100, 600)])
    assert "Prompt cache: 40% of the prompt tokens" in page
