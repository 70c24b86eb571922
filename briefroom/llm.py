"""The one model seam: every role gets its chat model here, and every call goes here.

Providers: `test` (deterministic, no model), `embedded` (SmolLM2 via a llama.cpp
server the CLI starts), any OpenAI-compatible endpoint (OpenAI, DeepSeek, Qwen, vLLM,
Ollama, llama.cpp), and `replay` (a cassette). `ModelHandle.invoke` is the only place
a prompt leaves the process, which is why recording and logging live here too.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import SecretStr

from briefroom import faults
from briefroom.config import Settings
from briefroom.errors import ConfigError, EngineeringFailure
from briefroom.models import embedded
from briefroom.models.cassette import (
    Cassette,
    CassetteChatModel,
    ReplayDivergence,
    ReplyBank,
    serialize_messages,
)
from briefroom.models.content_tool_calls import with_content_tool_calls
from briefroom.models.deterministic import TEST_PROVIDER_LABEL, DeterministicChatModel
from briefroom.models.embedded import EMBEDDED_CONTEXT, EMBEDDED_MODEL_NAME
from briefroom.models.endpoints import EndpointProfile, detect, profile_for, server_root
from briefroom.models.reasoning import reply_without_reasoning
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
    # A re-recording's earlier replies: an unchanged prompt is answered from it (`ReplyBank`).
    reuse: ReplyBank | None = None
    label: str = ""
    # "auto": the model decides; "first": one turn forced to the role's first tool, for
    # servers (llama.cpp's generic chat formats) that only call tools when told which.
    tool_mode: str = "auto"
    calls: int = 0  # replies received; checkpointed with the state so a resumed replay knows its place
    # What the endpoint is (llama.cpp, Ollama, vLLM, ...): which request forms it enforces.
    profile: EndpointProfile | None = None
    # llama.cpp: the server slot (KV cache) this handle's calls go to, so a role's prefix
    # stays cached while other roles speak. None: the server picks.
    slot: int | None = None
    # The instance of a fan-out role: its slot is taken per call from the slots its
    # role's instances share (the one it had last, if free).
    shared_slots: SlotShare | None = None

    def invoke(self, messages: list[BaseMessage], *, tools: list[dict] | None = None,
               schema: dict | None = None, schema_name: str = "output",
               force_tool: str | None = None) -> tuple[AIMessage, float]:
        """Send `messages`; returns the reply and the latency in seconds."""
        for message in messages:  # the last line of defence: nothing secret leaves in a prompt
            assert_no_secrets(str(message.content), f"the {self.role} prompt")
        check_pairing(messages)  # no tool result without its call, none twice, none missing
        started = time.perf_counter()
        # serialized once for the recording's lookup and its record, only when either is kept
        sent = serialize_messages(messages) if self.reuse is not None or self.recorder is not None else []
        reused = self.reuse.take(self.role, sent) if self.reuse is not None else None
        reply = reused if reused is not None else self._ask_model(messages, tools, schema, schema_name, force_tool)
        latency = time.perf_counter() - started
        if not isinstance(reply, AIMessage):
            reply = AIMessage(content=str(getattr(reply, "content", reply)))
        reply = reply_without_reasoning(reply)
        if tools:
            reply = with_content_tool_calls(reply, tools)
        if self.recorder is not None:
            self.recorder.record(self.role, sent, reply)
        self.calls += 1
        faults.reached("llm_call")
        return reply, latency

    def _ask_model(self, messages: list[BaseMessage], tools: list[dict] | None, schema: dict | None,
                   schema_name: str, force_tool: str | None) -> Any:
        if self.shared_slots is not None:
            self.slot = self.shared_slots.take(self.slot)
        try:
            return self._send(messages, tools, schema, schema_name, force_tool)
        except ResponseFormatRefused:
            # The server refused the schema form it was given: step down once to the
            # next form (the prompt shows the schema either way) and say so in the label.
            self.structured_mode = "json_object_schema" if self.structured_mode == "json_schema" else "json_object"
            self.label += f" (structured output: {self.structured_mode}, the endpoint refused json_schema)"
            return self._send(messages, tools, schema, schema_name, force_tool)
        finally:
            if self.shared_slots is not None and self.slot is not None:
                self.shared_slots.give(self.slot)

    def _send(self, messages: list[BaseMessage], tools: list[dict] | None, schema: dict | None,
              schema_name: str, force_tool: str | None) -> Any:
        if tools and force_tool and self.profile is not None and not self.profile.native_tools:
            return self._forced_call_by_schema(messages, tools, force_tool)
        runnable: Any = self.chat_model
        if tools:
            runnable = self._bind_tools(runnable, tools, force_tool)
            if self.profile is not None and self.profile.kind != "openai":
                runnable = runnable.bind(stop=[TOOL_CALL_STOP])
        extra = self._extra_body()
        if schema is not None and self.provider not in ("embedded", "openai"):
            runnable = runnable.bind(response_format=self._response_format(schema, schema_name))
        elif schema is not None:
            # In the request body as it is, not as langchain's `response_format`: given a
            # JSON schema there, langchain switches to the OpenAI SDK's parsing stream,
            # which drops the usage and raises on a reply cut by the output cap. The
            # reply's JSON is parsed and checked by the role (agents/structured.py).
            extra["response_format"] = self._response_format(schema, schema_name)
        if extra:
            runnable = runnable.bind(extra_body=extra)
        try:
            return runnable.invoke(messages)
        except (ReplayDivergence, ConfigError, EngineeringFailure):
            raise
        except Exception as exc:  # HTTP, timeouts, provider errors: one clear line for the user
            if schema is not None and self.structured_mode != "json_object" and _refuses_response_format(exc):
                raise ResponseFormatRefused() from exc
            dead = embedded.death_notice() if self.provider == "embedded" else None
            if dead:  # "Connection error." says nothing; how the server died does
                raise EngineeringFailure(f"{dead}; the {self.role} call could not be answered") from exc
            if _is_idle_timeout(exc):
                raise EngineeringFailure(
                    f"{self.provider} model {self.model_name!r} produced nothing for the {self.role} call within "
                    f"the idle timeout; raise --idle-timeout (BRIEFROOM_IDLE_TIMEOUT) on a slow machine") from exc
            raise EngineeringFailure(f"{self.provider} model {self.model_name!r} failed for {self.role}: "
                                     f"{type(exc).__name__}: {str(exc)[:300]}") from exc

    def _forced_call_by_schema(self, messages: list[BaseMessage], tools: list[dict], name: str) -> AIMessage:
        """A forced tool call on a model whose chat template has no tools: its arguments
        as a reply constrained to the tool's parameter schema, made into the call."""
        tool = next((t.get("function") or t for t in tools if (t.get("function") or t).get("name") == name), None)
        if tool is None:
            raise ConfigError(f"the {self.role} forced a tool it does not offer: {name!r}")
        # short: the server counts this turn, the prompt's budget did not
        ask = HumanMessage(f"Arguments for `{name}`, as JSON:")
        schema = bounded_strings(tool.get("parameters") or {"type": "object"}, FORCED_ARGUMENT_CHARS)
        reply = self._send([*messages, ask], None, schema, name, None)
        try:
            args = json.loads(str(reply.content))
        except ValueError:
            args = None
        if not isinstance(args, dict):
            raise EngineeringFailure(
                f"{self.provider} model {self.model_name!r} could not call {name!r} for the {self.role}: its "
                "template has no tool calls and its reply was not the tool's arguments; use a model with tool "
                "calling, or --structured json_schema on an endpoint that enforces it")
        return reply.model_copy(update={"content": "", "tool_calls": [
            {"name": name, "args": args, "id": f"call_schema_{self.calls}", "type": "tool_call"}]})

    def _bind_tools(self, runnable: Any, tools: list[dict], force_tool: str | None) -> Any:
        if not force_tool:
            return runnable.bind_tools(tools)
        if self.profile is not None and self.profile.forced_tool == "required":
            # llama.cpp refuses the named-function form; "required" over only that tool
            # forces the same call.
            only = [t for t in tools if (t.get("function") or t).get("name") == force_tool] or tools
            return runnable.bind_tools(only, tool_choice="required")
        return runnable.bind_tools(tools, tool_choice={"type": "function", "function": {"name": force_tool}})

    def _extra_body(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.slot is not None:
            extra["id_slot"] = self.slot
        if self.profile is not None and self.profile.progress:
            extra["return_progress"] = True  # a long prompt's evaluation streams progress: not idle
        if self.profile is not None and self.profile.kind == "llama.cpp":
            # llama.cpp's server samples without a repetition penalty (1.0) where
            # llama-cpp-python's used 1.1: small models then loop ("1.1.1.", "(1) 1000000
            # (2) 1000000") until the output cap.
            extra["repeat_penalty"] = REPEAT_PENALTY
        return extra

    def _response_format(self, schema: dict, name: str) -> dict:
        if self.profile is not None and self.profile.kind == "llama.cpp":
            # Under a grammar a small model that loops inside a string runs to the output
            # cap (SmolLM2's round summary: 1,024 tokens, two minutes); a bound on every
            # string ends it. The prompt shows the schema as it was.
            schema = bounded_strings(schema, GRAMMAR_STRING_CHARS)
        if self.structured_mode == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
        if self.structured_mode == "json_object_schema":  # llama.cpp: grammar-constrained to the schema
            return {"type": "json_object", "schema": schema}
        return {"type": "json_object"}


REPEAT_PENALTY = 1.1
# Where a tool-call reply ends at the latest on a local server. Qwen2.5-Coder-1.5B on
# llama.cpp writes its call as a fenced JSON block and then newlines until the output
# cap (llama.cpp does not penalise repeated newlines): 1,024 tokens, about 150 s on one
# thread, for a call of 60. No call holds four newlines in a row; OpenAI's reasoning
# models refuse `stop`, and OpenAI returns real tool calls, so it is not sent there.
TOOL_CALL_STOP = "\n\n\n\n"
# A tool argument written under a grammar is cut at this length: a small model asked for
# a search query otherwise repeats itself until the output cap.
FORCED_ARGUMENT_CHARS = 200
# Any other string in a grammar-constrained reply: the longest is one sentence of the
# report or one line of a summary (SmolLM2 looped "1.1.1." in a summary point otherwise).
GRAMMAR_STRING_CHARS = 500


def bounded_strings(schema: dict, max_chars: int) -> dict:
    """`schema` with every string that has no length limit given one, wherever it is:
    in properties, items, `$defs` (pydantic puts nested models there) and unions."""
    if schema.get("type") == "string" and "maxLength" not in schema and "enum" not in schema:
        return {**schema, "maxLength": max_chars}
    out = dict(schema)
    for key in ("properties", "$defs", "definitions"):
        if isinstance(schema.get(key), dict):
            out[key] = {k: bounded_strings(v, max_chars) if isinstance(v, dict) else v
                        for k, v in schema[key].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out[key] = bounded_strings(schema[key], max_chars)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if isinstance(schema.get(key), list):
            out[key] = [bounded_strings(v, max_chars) if isinstance(v, dict) else v for v in schema[key]]
    return out


class ResponseFormatRefused(Exception):
    """The endpoint answered 400 to the response format it was sent."""


def _refuses_response_format(exc: Exception) -> bool:
    status = getattr(exc, "status_code", None)
    text = str(exc).lower()
    return status == 400 and ("response_format" in text or "json_schema" in text)


def _is_idle_timeout(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if "timeout" in type(seen).__name__.lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


@dataclass
class SlotShare:
    """The server slots that the instances of a fan-out role share: the role's own and the
    extra ones. At most `--parallel` instances run at once, but which ones is the
    scheduler's choice, so a slot fixed by instance number can be one still in use (the
    server then holds the call back) while another is idle. A call takes the slot its
    instance had last when that one is free (its own prompt is cached there), else a free
    one, the role's own first (the prefix every search prompt shares is cached there)."""

    slots: tuple[int, ...]
    _busy: set[int] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def take(self, last: int | None) -> int:
        with self._lock:
            free = [s for s in self.slots if s not in self._busy]
            if last in free:
                slot = last
            elif free:
                slot = free[0]
            else:  # more callers than slots: share one, the server queues the call
                slot = last if last is not None else self.slots[0]
            self._busy.add(slot)
            return slot

    def give(self, slot: int) -> None:
        with self._lock:
            self._busy.discard(slot)


@dataclass
class ModelPool:
    """Handles per role plus what must be cleaned up when the run ends."""

    handles: dict[str, ModelHandle] = field(default_factory=dict)
    slots: int = 0  # the embedded server's slots; 0: none to assign
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _shares: dict[str, SlotShare] = field(default_factory=dict, repr=False)

    def for_role(self, role: str) -> ModelHandle:
        """The handle of a role, or of `role/n`, the n-th instance of a fan-out role: a
        copy of the role's handle with its own call count, recording key and server slot,
        so instances running at the same time replay in a fixed order whatever the timing
        and do not evict each other's prompts."""
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
            share = self._share(base) if handle.slot is not None and self.slots else None
            copy = replace(handle, role=role, chat_model=chat_model, calls=0, slot=None, shared_slots=share)
            self.handles[role] = copy
            return copy

    def _share(self, base: str) -> SlotShare:
        """The slots `base`'s instances share: its own and those no role holds."""
        if base not in self._shares:
            held = {h.slot for r, h in self.handles.items() if "/" not in r and h.slot is not None}
            own = self.handles[base].slot
            assert own is not None
            self._shares[base] = SlotShare((own, *(s for s in range(self.slots) if s not in held)))
        return self._shares[base]

    @property
    def labels(self) -> set[str]:
        return {h.label for h in self.handles.values()}


def embedded_slots(roles: list[str], parallel: int) -> int:
    """A slot for each role, and one more for each searcher instance beyond the first."""
    return len(roles) + max(0, parallel - 1)


def tool_mode_for(profile: EndpointProfile) -> str:
    """llama.cpp's generic chat formats call a tool only when told which: its roles' first
    tool call is forced, whether the server is the embedded one or the user's."""
    return "first" if profile.kind == "llama.cpp" else "auto"


def needs_embedded_server(settings: Settings, roles: list[str]) -> bool:
    return any(_provider(settings, settings.model_for(r)) == "embedded" for r in roles)


def is_gguf(model: str | None) -> bool:
    """`--model path/to/model.gguf` runs that file on the embedded llama.cpp server."""
    return bool(model) and str(model).lower().endswith(".gguf")


def embedded_model_file(settings: Settings, roles: list[str]) -> Path | None:
    """The GGUF file the embedded server should load (None: the bundled model).
    One server serves every role, so the roles must agree on the file."""
    files = {str(path.expanduser().resolve()) for path in (_model_file(settings, settings.model_for(r)) for r in roles)
             if path is not None}
    if len(files) > 1:
        raise ConfigError(f"the embedded server loads one model file; roles ask for {len(files)}: "
                          f"{', '.join(sorted(files))}")
    if not files:
        return None
    path = Path(files.pop())
    if not path.is_file():
        raise ConfigError(f"model file not found: {path}")
    return path


def _model_file(settings: Settings, model: str | None) -> Path | None:
    """The GGUF file `--model` names: a path ending in .gguf, or a name registered with
    `briefroom models add`; None for any other model."""
    if not model or model in ("test", "embedded"):
        return None
    if is_gguf(model):
        return Path(model)
    from briefroom.models.catalog import resolve_registered

    return resolve_registered(settings.data_dir, model)


def _provider(settings: Settings, model: str | None) -> str:
    if model == "test":
        return "test"
    if model == "embedded" or is_gguf(model) or _model_file(settings, model) is not None:
        return "embedded"
    if settings.base_url or settings.api_key:
        return "openai"
    if model in (None, EMBEDDED_MODEL_NAME):
        return "embedded"
    raise ConfigError(f"model {model!r} needs an endpoint: set OPENAI_BASE_URL and/or OPENAI_API_KEY, "
                      f"or use --model test / --model embedded")


def endpoint_profile(settings: Settings) -> EndpointProfile:
    """The endpoint's profile: the kind the settings name, or what the endpoint says it is."""
    if settings.endpoint_kind != "auto":
        return profile_for(settings.endpoint_kind, server_root(settings.base_url or ""))
    return detect(settings.base_url, settings.api_key)


def build_pool(settings: Settings, roles: list[str], *, embedded_base_url: str | None = None,
               embedded_slots: int = 0, embedded_profile: EndpointProfile | None = None,
               cassette: Cassette | None = None, recorder: Cassette | None = None,
               reuse: ReplyBank | None = None) -> ModelPool:
    """`embedded_profile`: what the embedded server said of itself at start (default: a
    llama.cpp server whose template has tool calls). `reuse`: an earlier recording by the
    same models, whose replies answer the prompts it holds."""
    pool = ModelPool(slots=embedded_slots)
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
            file = _model_file(settings, model)
            name = file.stem if file is not None else EMBEDDED_MODEL_NAME
            profile = embedded_profile or profile_for("llama.cpp", server_root(embedded_base_url), embedded_slots or 1)
            slot = len(pool.handles) % embedded_slots if embedded_slots else None
            handle = ModelHandle(role, "embedded", name,
                                 _openai_chat(name, embedded_base_url, "not-needed", settings, max_tokens=1024),
                                 profile.structured_mode, EMBEDDED_CONTEXT,
                                 label=f"embedded {name} (llama.cpp, local)", tool_mode=tool_mode_for(profile),
                                 profile=profile, slot=slot)
        else:
            name = model or "gpt-4o-mini"
            profile = endpoint_profile(settings)
            mode = profile.structured_mode if settings.structured == "auto" else settings.structured
            # OpenAI routes requests with one key to one cache; other OpenAI-compatible
            # servers may refuse a parameter they do not know, so it goes to OpenAI only.
            openai = profile.kind == "openai"
            handle = ModelHandle(role, "openai", name,
                                 _openai_chat(name, settings.base_url, settings.api_key or "not-needed", settings,
                                              cache_key=f"briefroom-{role}" if openai else None,
                                              max_tokens=None if openai else 2048),
                                 mode, settings.context_window or 128_000,
                                 label=f"{name} via {settings.base_url or 'OpenAI'} ({profile.kind})",
                                 profile=profile,
                                 tool_mode=tool_mode_for(profile),
                                 slot=len(pool.handles) % profile.slots if profile.kind == "llama.cpp"
                                 and profile.slots > 1 else None)
        handle.recorder, handle.reuse = recorder, reuse
        pool.handles[role] = handle
    if reuse is not None:
        reuse.check_labels({role: h.label for role, h in pool.handles.items()})
    return pool


def _openai_chat(model: str, base_url: str | None, api_key: str, settings: Settings,
                 max_tokens: int | None = None, cache_key: str | None = None) -> BaseChatModel:
    from langchain_openai import ChatOpenAI
    from openai import Timeout  # the client's own class: openai 3.63 refuses another library's

    # Streamed, so the timeout that matters is the wait between two chunks (the read
    # timeout): a call still producing tokens on a slow machine is never cut, a call that
    # produces nothing for `idle_timeout` seconds is. A server that hangs before its
    # first byte is caught the same way.
    timeout = Timeout(connect=30.0, read=settings.idle_timeout, write=60.0, pool=60.0)
    return ChatOpenAI(model=model, base_url=base_url, api_key=SecretStr(api_key), temperature=settings.temperature,
                      timeout=timeout, max_retries=2, streaming=True, stream_usage=True,
                      max_completion_tokens=max_tokens,
                      model_kwargs={"prompt_cache_key": cache_key} if cache_key else {})
