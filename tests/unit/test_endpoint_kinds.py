"""What each endpoint family answers on its own routes, and the request forms that follow.

The llama.cpp answers are checked against a real server in tests/e2e/test_llama_server.py;
Ollama, vLLM and LM Studio do not install from a package here, so their answers are the
bodies those servers return on the probed routes, as recorded exchanges."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from briefroom.config import Settings
from briefroom.llm import ModelHandle, build_pool
from briefroom.models import endpoints
from briefroom.models.content_tool_calls import parse_tool_calls, with_content_tool_calls
from briefroom.models.endpoints import classify, server_root
from tests.fakes import ScriptedChatModel

RECORDED = {
    "ollama": {"/api/version": {"version": "0.12.3"}},
    "vllm": {"/version": {"version": "0.11.0"}},
    "lmstudio": {"/api/v0/models": {"object": "list", "data": [{"id": "qwen2.5-7b-instruct", "type": "llm",
                                                                 "state": "loaded"}]}},
    "llama.cpp": {"/props": {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 4,
                             "chat_template_caps": {"supports_tools": False}}},
    "unknown": {},
}


@pytest.mark.parametrize("kind", sorted(RECORDED))
def test_each_family_is_told_by_the_route_only_it_answers(kind):
    profile = classify(RECORDED[kind])
    assert profile.kind == kind
    # every family enforces a JSON schema given as json_schema; json_object without one
    # let small models on llama.cpp echo the schema back
    assert profile.structured_mode == "json_schema"


def test_llama_cpp_gets_required_not_a_named_tool_and_streams_its_progress():
    profile = classify(RECORDED["llama.cpp"])
    assert profile.forced_tool == "required" and profile.progress and profile.slots == 4
    assert not profile.native_tools  # its template has no tool calls: a forced call goes by schema
    assert classify(RECORDED["vllm"]).forced_tool == "object" and not classify(RECORDED["vllm"]).progress


def test_the_root_is_the_base_url_without_the_openai_prefix():
    assert server_root("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080"
    assert server_root("http://h:1/proxy/v1/") == "http://h:1/proxy"


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["ollama", "vllm", "lmstudio"])
def test_a_server_is_probed_over_http_once(kind):
    answers, hits = RECORDED[kind], []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits.append(self.path)
            body = json.dumps(answers[self.path]).encode() if self.path in answers else b"{}"
            self.send_response(200 if self.path in answers else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        pool = build_pool(Settings(model="m", base_url=url), ["planner", "critic"])
        assert {h.profile.kind for h in pool.handles.values()} == {kind}
        assert kind in pool.handles["planner"].label
        assert hits.count(next(iter(answers))) == 1  # asked once for the whole run
    finally:
        server.shutdown()
        endpoints._cache.clear()


@pytest.mark.parametrize("kind, mode", [("llama.cpp", "first"), ("ollama", "auto"), ("vllm", "auto"),
                                        ("openai", "auto")])
def test_a_llama_cpp_endpoint_is_told_which_tool_to_call_first_as_the_embedded_server_is(kind, mode):
    pool = build_pool(Settings(model="m", base_url="http://127.0.0.1:9/v1", endpoint_kind=kind), ["searcher"])
    assert pool.handles["searcher"].tool_mode == mode


def test_a_kind_set_in_the_settings_is_not_probed():
    pool = build_pool(Settings(model="m", base_url="http://127.0.0.1:9/v1", endpoint_kind="ollama"), ["planner"])
    assert pool.handles["planner"].profile.kind == "ollama"  # no connection was tried: the guard would fail it
    with pytest.raises(ValueError):
        Settings(endpoint_kind="tgi")


TOOLS = [{"type": "function", "function": {"name": "local_search", "parameters": {"type": "object"}}},
         {"type": "function", "function": {"name": "read_source", "parameters": {"type": "object"}}}]


@pytest.mark.parametrize("content", [
    '```json\n{"name": "local_search", "arguments": {"query": "cloud market 2026"}}\n```',
    '<tool_call>\n{"name": "local_search", "arguments": {"query": "cloud market 2026"}}\n</tool_call>',
    'I will search. {"name": "local_search", "arguments": "{\\"query\\": \\"cloud market 2026\\"}"}',
    '{"type": "function", "function": {"name": "local_search", "parameters": {"query": "cloud market 2026"}}}',
])
def test_a_tool_call_written_in_the_text_is_read_as_a_call(content):
    assert parse_tool_calls(content, {"local_search", "read_source"}) == [("local_search",
                                                                           {"query": "cloud market 2026"})]


def test_text_that_only_looks_like_a_call_stays_text():
    assert parse_tool_calls('{"name": "rm_rf", "arguments": {}}', {"local_search"}) == []  # not offered
    assert parse_tool_calls('{"name": "local_search", "arguments": [1]}', {"local_search"}) == []
    assert parse_tool_calls("The market is 723 bn {not json}", {"local_search"}) == []
    real = AIMessage(content="", tool_calls=[{"name": "read_source", "args": {}, "id": "c1"}])
    assert with_content_tool_calls(real, TOOLS) is real  # real calls are never replaced


def test_a_handle_turns_text_calls_into_calls_and_forces_a_tool_the_way_the_server_takes_it():
    seen = []

    def reply(messages, kwargs):
        seen.append(kwargs)
        return AIMessage(content='<tool_call>{"name": "read_source", "arguments": {"source_id": "S1"}}</tool_call>')

    handle = ModelHandle("searcher", "openai", "qwen", ScriptedChatModel([reply]), "json_schema", 8192,
                         profile=endpoints.profile_for("llama.cpp"))
    out, _ = handle.invoke([HumanMessage("go")], tools=TOOLS, force_tool="read_source")
    assert out.tool_calls[0]["name"] == "read_source" and out.tool_calls[0]["args"] == {"source_id": "S1"}
    assert seen[0]["tool_choice"] == "required"
    assert [t["function"]["name"] for t in seen[0]["tools"]] == ["read_source"]


@pytest.mark.parametrize(("kind", "stops"), [("llama.cpp", True), ("ollama", True), ("openai", False)])
def test_a_tool_call_on_a_local_server_ends_at_a_run_of_newlines(kind, stops):
    seen = []

    def reply(messages, kwargs):
        seen.append(kwargs)
        return AIMessage(content='```json\n{"name": "read_source", "arguments": {"source_id": "S1"}}\n```')

    handle = ModelHandle("searcher", "openai", "qwen", ScriptedChatModel([reply]), "json_schema", 8192,
                         profile=endpoints.profile_for(kind))
    out, _ = handle.invoke([HumanMessage("go")], tools=TOOLS, force_tool="read_source")
    assert out.tool_calls[0]["args"] == {"source_id": "S1"}
    # Qwen2.5-Coder on llama.cpp wrote newlines after its call until the 1,024-token cap
    assert (seen[0].get("stop") == ["\n\n\n\n"]) is stops
