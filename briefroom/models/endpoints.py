"""What an OpenAI-compatible endpoint really is, and so which request forms it enforces.

"OpenAI-compatible" covers servers that accept the same JSON but do different things
with it: llama.cpp turns a `json_schema` response format into a grammar but, given
`json_object` without a schema, lets a small model echo the schema back or loop; its
native server refuses a forced `tool_choice` object and takes `"required"`; only
llama.cpp reports prompt progress while it evaluates a long prompt. So the endpoint is
asked once what it is (each server family has a route only it answers), and the
request forms follow from the answer instead of from its host name.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, replace
from typing import Any, Literal

EndpointKind = Literal["openai", "llama.cpp", "ollama", "vllm", "lmstudio", "unknown"]
ForcedToolChoice = Literal["object", "required"]
PROBE_TIMEOUT = 3.0


@dataclass(frozen=True)
class EndpointProfile:
    kind: EndpointKind
    structured_mode: str  # json_schema | json_object_schema | json_object: the form it enforces
    forced_tool: ForcedToolChoice  # how to make it call one named tool
    progress: bool = False  # streams llama.cpp's prompt progress (`return_progress`)
    slots: int = 1  # llama.cpp: requests it decodes at once, each in its own KV cache
    root: str = ""  # the server's root URL (the base URL without /v1)
    # False: the model's chat template has no tool calls (SmolLM2), so the server ignores
    # the tools it is sent; a forced call is then made as a schema-constrained reply.
    native_tools: bool = True


# Every family here enforces a JSON schema given as OpenAI's `json_schema` format; the
# families differ in how a tool is forced. An unknown server gets the OpenAI forms: a
# server that refuses them answers 400 and the handle steps down (llm.py).
_PROFILES: dict[EndpointKind, tuple[str, ForcedToolChoice, bool]] = {
    "openai": ("json_schema", "object", False),
    "llama.cpp": ("json_schema", "required", True),
    "ollama": ("json_schema", "required", False),
    "vllm": ("json_schema", "object", False),
    "lmstudio": ("json_schema", "object", False),
    "unknown": ("json_schema", "object", False),
}


def profile_for(kind: EndpointKind, root: str = "", slots: int = 1, native_tools: bool = True) -> EndpointProfile:
    mode, forced, progress = _PROFILES[kind]
    return EndpointProfile(kind, mode, forced, progress, slots, root, native_tools)


def server_root(base_url: str) -> str:
    """`http://host:8080/v1` -> `http://host:8080`: the routes that tell a server's kind
    live at its root, not under the OpenAI prefix."""
    parts = urllib.parse.urlsplit(base_url.rstrip("/"))
    path = parts.path[:-3] if parts.path.endswith("/v1") else parts.path
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _get_json(url: str, api_key: str | None) -> Any:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT) as resp:  # noqa: S310 (the user's endpoint)
            if resp.status != 200:
                return None
            return json.loads(resp.read(1 << 20))
    except (OSError, ValueError, urllib.error.URLError):
        return None


def classify(answers: dict[str, Any]) -> EndpointProfile:
    """The profile from what the probe routes answered (None where a route did not)."""
    props = answers.get("/props")
    if isinstance(props, dict) and ("default_generation_settings" in props or "total_slots" in props):
        slots = props.get("total_slots")
        caps = props.get("chat_template_caps")
        tools = caps.get("supports_tools", True) if isinstance(caps, dict) else True
        return profile_for("llama.cpp", slots=slots if isinstance(slots, int) and slots > 0 else 1,
                           native_tools=bool(tools))
    ollama = answers.get("/api/version")
    if isinstance(ollama, dict) and "version" in ollama:
        return profile_for("ollama")
    lmstudio = answers.get("/api/v0/models")
    if isinstance(lmstudio, dict) and isinstance(lmstudio.get("data"), list):
        return profile_for("lmstudio")
    vllm = answers.get("/version")
    if isinstance(vllm, dict) and "version" in vllm:
        return profile_for("vllm")
    return profile_for("unknown")


PROBE_ROUTES = ("/props", "/api/version", "/api/v0/models", "/version")
_cache: dict[str, EndpointProfile] = {}
_lock = threading.Lock()


def detect(base_url: str | None, api_key: str | None = None) -> EndpointProfile:
    """The profile of the endpoint at `base_url` (None: OpenAI's own API), probed once per
    process. A server that answers none of the routes is `unknown`."""
    if not base_url or urllib.parse.urlsplit(base_url).hostname == "api.openai.com":
        return profile_for("openai")
    with _lock:
        if base_url in _cache:
            return _cache[base_url]
    root = server_root(base_url)
    answers: dict[str, Any] = {}
    for route in PROBE_ROUTES:
        answers[route] = _get_json(root + route, api_key)
        if route == "/props" and answers[route] is not None:
            break  # llama.cpp said so; the others would only be 404s
    profile = replace(classify(answers), root=root)
    with _lock:
        _cache[base_url] = profile
    return profile
