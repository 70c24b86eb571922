"""Prompt-cache hits: read from the embedded server's log, reported like OpenAI's."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from briefroom.agents.model_calls import cached_prompt_tokens
from briefroom.events import LlmCall
from briefroom.inspect import cache_hit_rate
from briefroom.llm import ModelHandle
from briefroom.models.embedded import KVCacheLog
from tests.fakes import ScriptedChatModel

PERF = "llama_perf_context_print: prompt eval time = 0.23 ms / 506 tokens\n"


def test_the_log_says_how_many_prompt_tokens_each_call_reused(tmp_path):
    log = tmp_path / "llama-server.log"
    log.write_text("startup probe\n" + PERF)
    kv = KVCacheLog(log)
    kv.mark()
    with open(log, "a") as fh:
        fh.write("Llama.generate: 223 prefix-match hit, remaining 973 prompt tokens to eval\n" + PERF)
    assert kv.cached_tokens(1196) == 223
    kv.mark()
    with open(log, "a") as fh:
        fh.write("Llama.generate: full prompt already cached, skipping reset\n" + PERF)
    assert kv.cached_tokens(500) == 500
    kv.mark()
    with open(log, "a") as fh:
        fh.write(PERF)  # a reset: nothing reused
    assert kv.cached_tokens(800) == 0
    kv.mark()
    assert kv.cached_tokens(800) is None  # the log said nothing about this call


def test_an_embedded_handle_reports_the_servers_cache_hits_on_its_replies(tmp_path):
    log = tmp_path / "llama-server.log"
    log.write_text("")

    def server(messages, kwargs):  # what the embedded server does while it answers
        with open(log, "a") as fh:
            fh.write("Llama.generate: 300 prefix-match hit, remaining 100 prompt tokens to eval\n" + PERF)
        return AIMessage(content="ok", usage_metadata={"input_tokens": 400, "output_tokens": 1, "total_tokens": 401})

    handle = ModelHandle("critic", "embedded", "m", ScriptedChatModel([server]), "json_object", 8192,
                         kv_cache=KVCacheLog(log))
    reply, _ = handle.invoke([HumanMessage(content="hello")])
    assert cached_prompt_tokens(reply) == 300 and reply.usage_metadata["input_tokens"] == 400


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
    local = build_pool(Settings(model="qwen2.5", base_url="http://127.0.0.1:8000/v1"), ["planner"])
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
