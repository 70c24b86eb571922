"""The one model seam: every role gets its chat model here, and every call goes here.

Providers: `test` (deterministic, no model), `embedded` (SmolLM2 via a llama.cpp
server the CLI starts), any OpenAI-compatible endpoint (OpenAI, DeepSeek, Qwen, vLLM,
Ollama, llama.cpp), and `replay` (a cassette). `ModelHandle.invoke` is the only place
a prompt leaves the process, which is why recording and logging live here too.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import SecretStr

from briefroom.config import Settings
from briefroom.errors import ConfigError, EngineeringFailure
from briefroom.graph import faults
from briefroom.models import embedded
from briefroom.models.cassette import (
    Cassette,
    CassetteChatModel,
    ReplayDivergence,
    serialize_messages,
)
from briefroom.models.deterministic import TEST_PROVIDER_LABEL, DeterministicChatModel
from briefroom.models.embedded import EMBEDDED_CONTEXT, EMBEDDED_MODEL_NAME
from briefroom.protocol.calls import check_pairing
from briefroom.protocol.redaction import assert_no_secrets


@dataclass
class ModelHandle:
    role: str
    provider: str  # test | embedded | openai | replay | scripted
    model_name: str
    chat_model: BaseChatModel
    structured_mode: str  # json_schema | json_object | json_object_schema
    context_window: int
    recorder: Cassette | None = None
    label: str = ""
    # "auto": the model decides; "first": one turn forced to the role's first tool, for
    # servers (llama.cpp's generic chat formats) that only call tools when told which.
    tool_mode: str = "auto"
    calls: int = 0  # replies received; checkpointed with the state so a resumed replay knows its place
    # The embedded server reports reused KV-cache tokens only in its log; read from there.
    kv_cache: embedded.KVCacheLog | None = None

    def invoke(self, messages: list[BaseMessage], *, tools: list[dict] | None = None,
               schema: dict | None = None, schema_name: str = "output",
               force_tool: str | None = None) -> tuple[AIMessage, float]:
        """Send `messages`; returns the reply and the latency in seconds."""
        for message in messages:  # the last line of defence: nothing secret leaves in a prompt
            assert_no_secrets(str(message.content), f"the {self.role} prompt")
        check_pairing(messages)  # no tool result without its call, none twice, none missing
        runnable: Any = self.chat_model
        if tools:
            choice = {"type": "function", "function": {"name": force_tool}} if force_tool else None
            runnable = runnable.bind_tools(tools, tool_choice=choice) if choice else runnable.bind_tools(tools)
        if schema is not None:
            runnable = runnable.bind(response_format=self._response_format(schema, schema_name))
        if self.kv_cache is not None:
            self.kv_cache.mark()
        started = time.perf_counter()
        try:
            reply = runnable.invoke(messages)
        except (ReplayDivergence, ConfigError, EngineeringFailure):
            raise
        except Exception as exc:  # HTTP, timeouts, provider errors: one clear line for the user
            dead = embedded.death_notice() if self.provider == "embedded" else None
            if dead:  # "Connection error." says nothing; how the server died does
                raise EngineeringFailure(f"{dead}; the {self.role} call could not be answered") from exc
            raise EngineeringFailure(f"{self.provider} model {self.model_name!r} failed for {self.role}: "
                                     f"{type(exc).__name__}: {str(exc)[:300]}") from exc
        latency = time.perf_counter() - started
        if not isinstance(reply, AIMessage):
            reply = AIMessage(content=str(getattr(reply, "content", reply)))
        if self.kv_cache is not None:
            reply = _with_cached_tokens(reply, self.kv_cache)
        if self.recorder is not None:
            self.recorder.record(self.role, serialize_messages(messages), reply)
        self.calls += 1
        faults.reached("llm_call")
        return reply, latency

    def _response_format(self, schema: dict, name: str) -> dict:
        if self.structured_mode == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
        if self.structured_mode == "json_object_schema":  # llama.cpp: grammar-constrained to the schema
            return {"type": "json_object", "schema": schema}
        return {"type": "json_object"}


@dataclass
class ModelPool:
    """Handles per role plus what must be cleaned up when the run ends."""

    handles: dict[str, ModelHandle] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def for_role(self, role: str) -> ModelHandle:
        """The handle of a role, or of `role/n`, the n-th instance of a fan-out role: a
        copy of the role's handle with its own call count and its own recording key, so
        instances running at the same time replay in a fixed order whatever the timing."""
        with self._lock:
            if role in self.handles:
                return self.handles[role]
            base, _, instance = role.partition("/")
            if not instance or base not in self.handles:
                raise ConfigError(f"no model configured for role {role!r}")
            handle = self.handles[base]
            chat_model = handle.chat_model
            if isinstance(chat_model, CassetteChatModel):
                chat_model = CassetteChatModel(cassette=chat_model.cassette, role=role)
            # The embedded server's log cannot say which of several calls at once reused its
            # cache, so instances report no cached tokens rather than wrong ones.
            copy = replace(handle, role=role, chat_model=chat_model, calls=0, kv_cache=None)
            self.handles[role] = copy
            return copy

    @property
    def labels(self) -> set[str]:
        return {h.label for h in self.handles.values()}


def needs_embedded_server(settings: Settings, roles: list[str]) -> bool:
    return any(_provider(settings, settings.model_for(r)) == "embedded" for r in roles)


def is_gguf(model: str | None) -> bool:
    """`--model path/to/model.gguf` runs that file on the embedded llama.cpp server."""
    return bool(model) and str(model).lower().endswith(".gguf")


def embedded_model_file(settings: Settings, roles: list[str]) -> Path | None:
    """The GGUF file the embedded server should load (None: the bundled model).
    One server serves every role, so the roles must agree on the file."""
    files = {str(Path(m).expanduser().resolve()) for m in (settings.model_for(r) for r in roles) if m and is_gguf(m)}
    if len(files) > 1:
        raise ConfigError(f"the embedded server loads one model file; roles ask for {len(files)}: "
                          f"{', '.join(sorted(files))}")
    if not files:
        return None
    path = Path(files.pop())
    if not path.is_file():
        raise ConfigError(f"model file not found: {path}")
    return path


def _provider(settings: Settings, model: str | None) -> str:
    if model == "test":
        return "test"
    if model == "embedded" or is_gguf(model):
        return "embedded"
    if settings.base_url or settings.api_key:
        return "openai"
    if model in (None, EMBEDDED_MODEL_NAME):
        return "embedded"
    raise ConfigError(f"model {model!r} needs an endpoint: set OPENAI_BASE_URL and/or OPENAI_API_KEY, "
                      f"or use --model test / --model embedded")


def _with_cached_tokens(reply: AIMessage, kv_cache: embedded.KVCacheLog) -> AIMessage:
    """The reply with the prompt tokens the server took from its cache, reported the
    way OpenAI-style endpoints report them (`input_token_details.cache_read`)."""
    usage = reply.usage_metadata
    cached = kv_cache.cached_tokens(usage["input_tokens"] if usage else None)
    if cached is None or usage is None:
        return reply
    details = {**(usage.get("input_token_details") or {}), "cache_read": cached}
    return reply.model_copy(update={"usage_metadata": {**usage, "input_token_details": details}})


def build_pool(settings: Settings, roles: list[str], *, embedded_base_url: str | None = None,
               embedded_log: Path | None = None, cassette: Cassette | None = None,
               recorder: Cassette | None = None) -> ModelPool:
    pool = ModelPool()
    kv_cache = embedded.KVCacheLog(embedded_log) if embedded_log is not None else None  # one server, one log
    for role in roles:
        if cassette is not None:
            pool.handles[role] = ModelHandle(role, "replay", "cassette", CassetteChatModel(cassette=cassette, role=role),
                                             "json_object", settings.context_window or EMBEDDED_CONTEXT,
                                             label="replayed cassette (recorded responses, no model)")
            continue
        model = settings.model_for(role)
        provider = _provider(settings, model)
        if provider == "test":
            handle = ModelHandle(role, "test", "test", DeterministicChatModel(), "json_object_schema",
                                 settings.context_window or 16384, label=TEST_PROVIDER_LABEL)
        elif provider == "embedded":
            if embedded_base_url is None:
                raise ConfigError("the embedded model is not running (internal error: start EmbeddedServer first)")
            name = Path(model).stem if is_gguf(model) else EMBEDDED_MODEL_NAME  # type: ignore[arg-type]
            handle = ModelHandle(role, "embedded", name,
                                 _openai_chat(name, embedded_base_url, "not-needed", settings, max_tokens=1024),
                                 "json_object_schema", EMBEDDED_CONTEXT,
                                 label=f"embedded {name} (llama.cpp, local)", tool_mode="first", kv_cache=kv_cache)
        else:
            name = model or "gpt-4o-mini"
            mode = settings.structured
            if mode == "auto":
                mode = "json_schema" if not settings.base_url or "api.openai.com" in settings.base_url else "json_object"
            # OpenAI routes requests with one key to one cache; other OpenAI-compatible
            # servers may refuse a parameter they do not know, so it goes to OpenAI only.
            openai = not settings.base_url or "api.openai.com" in settings.base_url
            handle = ModelHandle(role, "openai", name,
                                 _openai_chat(name, settings.base_url, settings.api_key or "not-needed", settings,
                                              cache_key=f"briefroom-{role}" if openai else None),
                                 mode, settings.context_window or 128_000,
                                 label=f"{name} via {settings.base_url or 'OpenAI'}")
        handle.recorder = recorder
        pool.handles[role] = handle
    return pool


def _openai_chat(model: str, base_url: str | None, api_key: str, settings: Settings,
                 max_tokens: int | None = None, cache_key: str | None = None) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=model, base_url=base_url, api_key=SecretStr(api_key), temperature=settings.temperature,
                      timeout=settings.request_timeout, max_retries=2,
                      max_completion_tokens=max_tokens,
                      model_kwargs={"prompt_cache_key": cache_key} if cache_key else {})
