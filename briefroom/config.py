"""Settings: flags override env (BRIEFROOM_*, OPENAI_*), which override defaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from briefroom.errors import ConfigError

STRUCTURED_MODES = ("auto", "json_schema", "json_object", "json_object_schema")


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "briefroom"


class Settings(BaseModel):
    model: str | None = Field(default=None, description="'test', 'embedded', or a model name on the endpoint")
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    role_models: dict[str, str] = Field(default_factory=dict, description="per-role model overrides")
    structured: str = "auto"
    endpoint_kind: Literal["auto", "openai", "llama.cpp", "ollama", "vllm", "lmstudio", "unknown"] = Field(
        default="auto", description="what the endpoint is (default: asked once); sets the request forms it gets")
    data_dir: Path = Field(default_factory=default_data_dir)
    embedder: str = "local"
    rounds: int = Field(default=3, ge=1, le=20)
    max_revisions: int = Field(default=1, ge=0, le=5)
    context_window: int | None = None
    context: str = Field(default="layered", description="layered (default) or naive, the baseline")
    max_tokens: int | None = Field(default=None, ge=1000, description="run-level prompt+completion token budget")
    context_shares: dict[str, float] = Field(default_factory=dict, description="section -> share of the budget")
    context_floors: dict[str, int] = Field(default_factory=dict, description="section -> minimum tokens")
    memory: bool = Field(default=True, description="read and write long-term memory in the data directory")
    user: str | None = Field(default=None, description="memory namespace: user (default: login name)")
    session: str = Field(default="default", description="memory namespace: session")
    memory_scope: str = Field(default="user", description="what a run may recall: user | session")
    memory_threshold: float | None = Field(default=None, ge=0.0, le=1.0,
                                           description="cosine similarity to recall (default: the embedder's)")
    fact_threshold: float = Field(default=0.5, ge=0.0, le=1.0,
                                  description="share of a query's words and numbers a fact must hold to be recalled")
    temperature: float = 0.0
    # Calls stream: a slow machine makes a call slow, not failed. A call is given up only
    # when it produces nothing (no token, no progress, no keep-alive) for this long.
    idle_timeout: float = Field(default=300.0, gt=0, description="seconds a model call may go without producing "
                                                                 "anything before it is given up")
    threads: int | None = Field(default=None, ge=1, le=64, description="threads of the embedded llama.cpp server "
                                                                      "(default: the cores free when it starts)")
    parallel: int = Field(default=1, ge=1, le=8, description="searcher instances that may run at the same time")
    database_url: str | None = Field(default=None, repr=False,
                                     description="PostgreSQL URL: checkpoints and long-term memory go there (the "
                                                 "corpus index stays in the data directory)")
    language: Literal["en", "zh"] | None = Field(default=None, description="the report's language (default: "
                                                                            "the question's)")
    web: bool = Field(default=False, description="web research: the Searcher may use web_search and fetch_url")
    search_provider: Literal["searxng", "brave"] = Field(default="searxng", description="searxng (self-hosted) or brave (key in the "
                                                                "environment, never in settings)")
    searxng_url: str | None = Field(default=None, description="the SearXNG instance web_search asks")
    allow_domains: list[str] = Field(default_factory=list, description="fetch only these domains (and subdomains)")
    deny_domains: list[str] = Field(default_factory=list, description="never fetch these domains (and subdomains)")
    web_allow_addresses: list[str] = Field(default_factory=list, description="address:port pairs fetch_url may "
                                           "reach although not public (tests, intranets)")
    web_interval: float = Field(default=1.0, ge=0, le=60, description="seconds between two requests to one host")
    mcp_config: Path | None = Field(default=None, description="MCP servers file (JSON or YAML, Claude Desktop's "
                                    "mcpServers): their tools go to the roles it names, the Searcher by default")
    report_kind: Literal["brief", "standard", "detailed"] = Field(
        default="standard", description="how much the report says: brief, standard or detailed")
    words: int | None = Field(default=None, ge=50, le=20_000, description="the report's target length in words "
                                                                          "(default: the kind's)")
    audience: str | None = Field(default=None, max_length=300, description="who the report is for: its tone, "
                                                                          "told to the Writer")
    quotes: Literal["keep", "restate"] = Field(default="keep", description="the source sentences the report "
                                              "quotes: keep them verbatim, or restate them in the model's words "
                                              "where code finds a rewrite says the same (one more Writer call)")
    compact_at: tuple[float, float, float] = Field(
        default=(0.6, 0.75, 0.85), description="shares of --max-tokens at which the run warns, compresses its "
                                               "prompts, and leaves only the Writer")

    @field_validator("compact_at", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        """`WARN,COMPRESS,FINISH` as typed on the command line or in the environment."""
        if isinstance(value, str):
            parts = [p.strip() for p in value.split(",")]
            if len(parts) != 3:
                raise ValueError("give three shares, WARN,COMPRESS,FINISH")
            return tuple(float(p) for p in parts)
        return value

    @field_validator("allow_domains", "deny_domains", "web_allow_addresses", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        """`a.example,b.example` from the environment; a list from flags."""
        return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value

    @field_validator("compact_at")
    @classmethod
    def _ordered(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        warn, compress, finish = value
        if not 0 < warn <= compress <= finish <= 1:
            raise ValueError("the shares must satisfy 0 < WARN <= COMPRESS <= FINISH <= 1")
        return value

    @property
    def recall_threshold(self) -> float:
        """The cosine similarity a memory needs to be recalled: `memory_threshold`, or the
        embedder's own scale (cosines of one model are not comparable with another's)."""
        from briefroom.corpus.embeddings import recall_threshold_for

        return self.memory_threshold if self.memory_threshold is not None else recall_threshold_for(self.embedder)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: object) -> "Settings":
        """Defaults, then the environment (`ENV_NAMES`, BRIEFROOM_MODEL_<ROLE>), then
        `overrides` (flags; None is not given): validated, checked, each problem one
        ConfigError line in the words the user typed."""
        env = dict(os.environ if env is None else env)
        values = _overridden(_from_environment(env), overrides)
        settings = _validated(cls, values, env, overrides)
        _check_values(settings)
        _check_web(settings)
        return _with_mcp_config(settings)

    def model_for(self, role: str) -> str | None:
        return self.role_models.get(role, self.model)


# The environment variables each setting is read from, first one set wins.
ENV_NAMES: dict[str, tuple[str, ...]] = {
    "model": ("BRIEFROOM_MODEL",),
    "base_url": ("BRIEFROOM_BASE_URL", "OPENAI_BASE_URL"),
    "api_key": ("BRIEFROOM_API_KEY", "OPENAI_API_KEY"),
    "structured": ("BRIEFROOM_STRUCTURED",),
    "endpoint_kind": ("BRIEFROOM_ENDPOINT_KIND",),
    "data_dir": ("BRIEFROOM_DATA_DIR",),
    "embedder": ("BRIEFROOM_EMBEDDER",),
    "context": ("BRIEFROOM_CONTEXT",),
    "max_tokens": ("BRIEFROOM_MAX_TOKENS",),
    "user": ("BRIEFROOM_USER",),
    "session": ("BRIEFROOM_SESSION",),
    "idle_timeout": ("BRIEFROOM_IDLE_TIMEOUT",),
    "threads": ("BRIEFROOM_THREADS",),
    "parallel": ("BRIEFROOM_PARALLEL",),
    "language": ("BRIEFROOM_LANGUAGE",),
    "database_url": ("BRIEFROOM_DATABASE_URL",),
    "compact_at": ("BRIEFROOM_COMPACT_AT",),
    "quotes": ("BRIEFROOM_QUOTES",),
    "web": ("BRIEFROOM_WEB",),
    "search_provider": ("BRIEFROOM_SEARCH_PROVIDER",),
    "searxng_url": ("BRIEFROOM_SEARXNG_URL",),
    "web_allow_addresses": ("BRIEFROOM_WEB_ALLOW_ADDRESSES",),
    "web_interval": ("BRIEFROOM_WEB_INTERVAL",),
    "mcp_config": ("BRIEFROOM_MCP_CONFIG",),
}
ROLE_MODEL_PREFIX = "BRIEFROOM_MODEL_"  # BRIEFROOM_MODEL_<ROLE>: one role's model


def _from_environment(env: dict[str, str]) -> dict[str, object]:
    """The settings the environment sets (empty variables set nothing)."""
    values: dict[str, object] = {}
    for field, names in ENV_NAMES.items():
        name = next((n for n in names if env.get(n)), None)
        if name is not None:
            values[field] = env[name]
    role_models = {key[len(ROLE_MODEL_PREFIX):].lower(): value for key, value in env.items()
                   if key.startswith(ROLE_MODEL_PREFIX) and value}
    if role_models:
        values["role_models"] = role_models
    return values


def _overridden(values: dict[str, object], overrides: dict[str, object]) -> dict[str, object]:
    """`values` with the flags given; per-role models are added to the environment's."""
    out = dict(values)
    for key, value in overrides.items():
        if value is None:
            continue
        if key == "role_models":
            out["role_models"] = {**out.get("role_models", {}), **value}  # type: ignore[dict-item]
        else:
            out[key] = value
    return out


def _validated(cls: type[Settings], values: dict[str, object], env: dict[str, str],
               overrides: dict[str, object]) -> Settings:
    """The model, or a ConfigError naming the variable or flag the bad value came from."""
    try:
        return cls.model_validate(values)
    except ValidationError as exc:  # a user's typo, said in the words the user typed
        problem = exc.errors()[0]
        field = str(problem["loc"][0]) if problem["loc"] else "?"
        where = next((n for n in ENV_NAMES.get(field, ()) if env.get(n) and overrides.get(field) is None), None)
        name = where or "--" + field.replace("_", "-")
        raise ConfigError(f"{name}: {problem['msg'].lower()}, got {str(problem.get('input'))[:60]!r}") from None


def _check_values(settings: Settings) -> None:
    """The data directory, the endpoint and the choices a field's type does not check."""
    if settings.data_dir.exists() and not settings.data_dir.is_dir():
        raise ConfigError(f"--data-dir {settings.data_dir} is a file; give a folder (or BRIEFROOM_DATA_DIR)")
    if settings.base_url and not settings.base_url.startswith(("http://", "https://")):
        raise ConfigError(f"the endpoint must be an http(s) URL, got {settings.base_url[:60]!r} "
                          "(--base-url, OPENAI_BASE_URL or BRIEFROOM_BASE_URL)")
    if settings.structured not in STRUCTURED_MODES:
        raise ConfigError(f"--structured must be one of {', '.join(STRUCTURED_MODES)}")
    if settings.context not in ("layered", "naive"):
        raise ConfigError("--context must be 'layered' or 'naive'")
    if settings.memory_scope not in ("user", "session"):
        raise ConfigError("--memory-scope must be 'user' or 'session'")


def _check_web(settings: Settings) -> None:
    """Web research needs its search provider, and the data directory's index."""
    if settings.web and settings.search_provider == "searxng" and not settings.searxng_url:
        raise ConfigError("--web with the searxng provider needs --searxng-url http://host:port (or "
                          "BRIEFROOM_SEARXNG_URL), or choose --search-provider brave")
    if settings.searxng_url and not settings.searxng_url.startswith(("http://", "https://")):
        raise ConfigError(f"--searxng-url must be an http(s) URL, got {settings.searxng_url[:60]!r}")
    if settings.web and settings.database_url:
        raise ConfigError("--web does not work with --database-url yet: fetched pages are indexed in the "
                          "data directory's index only")


def _with_mcp_config(settings: Settings) -> Settings:
    """A bad MCP servers file fails here, before a run directory exists; a good one is
    kept by its absolute path (in run.json: `briefroom resume` may run from another folder)."""
    if settings.mcp_config is None:
        return settings
    from briefroom.mcp.config import load_mcp_config

    if settings.database_url:
        raise ConfigError("--mcp-config does not work with --database-url yet: MCP results are indexed "
                          "in the data directory's index only")
    load_mcp_config(settings.mcp_config)
    return settings.model_copy(update={"mcp_config": settings.mcp_config.expanduser().resolve()})


# Dynamic prompt sections whose share of a role's budget a user may tune.
CONTEXT_SECTIONS = ("memory", "facts", "summaries", "whiteboard", "sources", "worktable")


def parse_section_values(pairs: list[str], flag: str, kind: type) -> dict:
    """`--share facts=0.3` / `--floor whiteboard=300` pairs, checked against the sections."""
    out = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        name = name.strip().lower()
        if not sep or name not in CONTEXT_SECTIONS:
            raise ConfigError(f"{flag} expects SECTION=VALUE with SECTION one of {', '.join(CONTEXT_SECTIONS)}; "
                              f"got {pair!r}")
        try:
            value = kind(raw.strip())
        except ValueError:
            raise ConfigError(f"{flag} {pair!r}: {raw.strip()!r} is not a{'n integer' if kind is int else ' number'}")\
                from None
        if (kind is float and not 0 < value <= 1) or (kind is int and value < 0):
            raise ConfigError(f"{flag} {pair!r}: " + ("a share is a fraction in (0, 1]" if kind is float
                                                      else "a floor is a token count >= 0"))
        out[name] = value
    if kind is float and sum(out.values()) > 1.0 + 1e-9:
        raise ConfigError(f"{flag} values add up to {sum(out.values()):g}; they are fractions of one budget "
                          "(at most 1 in total)")
    return out


def parse_role_models(pairs: list[str]) -> dict[str, str]:
    """`--role-model writer=gpt-4o` pairs into a dict, with a clear error for typos."""
    out = {}
    for pair in pairs:
        role, sep, model = pair.partition("=")
        if not sep or not role.strip() or not model.strip():
            raise ConfigError(f"--role-model expects ROLE=MODEL, got {pair!r}")
        out[role.strip().lower()] = model.strip()
    return out
