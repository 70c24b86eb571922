"""The run's models: one handle per role, and the token counter that measures prompts
in the tokens of the model that reads them.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from briefroom.config import Settings
from briefroom.events import HandleInfo, Models, ModelServer
from briefroom.llm import ModelPool, build_pool, embedded_model_file, embedded_slots, needs_embedded_server
from briefroom.models.cassette import Cassette
from briefroom.models.embedded import EmbeddedServer
from briefroom.models.served_tokens import COUNTS_FILE, RecordedTokenCounter, ServedTokenCounter
from briefroom.protocol.budget import TokenCounter, encoding_for_model
from briefroom.run.request import ResearchRequest, Say
from briefroom.runlog import RunLog


def model_pool(settings: Settings, request: ResearchRequest, names: list[str], run_dir: Path,
               stack: contextlib.ExitStack, log: RunLog, say: Say, recorder: Cassette | None) -> ModelPool:
    """One handle per role: the caller's, a recording's, or built from the settings
    (starting the embedded server, closed with the run, when a role needs it)."""
    embedded_url, slots, profile = None, 0, None
    if request.models is None and request.cassette is None and needs_embedded_server(settings, names):
        say(0, "model", "starting the embedded llama.cpp server")
        server = stack.enter_context(EmbeddedServer(model_path=embedded_model_file(settings, names),
                                                    log_path=run_dir / "llama-server.log", threads=settings.threads,
                                                    slots=embedded_slots(names, settings.parallel)))
        embedded_url, slots, profile = server.base_url, server.slots, server.profile
        log.write(ModelServer(base_url=embedded_url, model_path=server.model_path.name, threads=server.threads,
                              batch_threads=server.batch_threads, free_cores=server.free_cores, slots=server.slots))
        say(0, "model", f"llama.cpp: {server.threads} thread(s) generating, {server.batch_threads} reading prompts"
            + (f" ({server.free_cores:.1f} core(s) free)" if server.free_cores is not None else "")
            + f", {server.slots} slot(s)")
    pool = request.models or build_pool(settings, names, embedded_base_url=embedded_url, embedded_slots=slots,
                                        embedded_profile=profile, cassette=request.cassette, recorder=recorder,
                                        reuse=request.reuse)
    for role, recorded in (request.replay_handles or {}).items():  # a replay answers as the recording did
        if role in pool.handles:
            handle = pool.handles[role]
            handle.label, handle.tool_mode = recorded.label, recorded.tool_mode
            handle.structured_mode, handle.context_window = recorded.structured_mode, recorded.context_window
    log.write(Models(handles={n: HandleInfo(provider=h.provider, model=h.model_name, label=h.label)
                              for n, h in pool.handles.items()}))
    return pool


def token_counter(settings: Settings, request: ResearchRequest, pool: ModelPool) -> TokenCounter:
    """Counts in the tokens of the model that reads the prompts: a llama.cpp server's own
    tokenizer when one serves the run, the counts a recording kept when it is replayed,
    and the local encoding for OpenAI's models (theirs) and servers that cannot tell."""
    recorded = request.scenario / COUNTS_FILE if request.scenario is not None else None
    if request.cassette is not None and recorded is not None and recorded.is_file():
        return RecordedTokenCounter(recorded)
    served = [h for h in pool.handles.values()
              if h.provider in ("embedded", "openai") and h.profile is not None and h.profile.kind == "llama.cpp"]
    models = {h.model_name for h in served}
    if served and len(models) == 1 and len({h.profile.root for h in served if h.profile}) == 1:
        return ServedTokenCounter(served[0].profile.root, models.pop())  # type: ignore[union-attr]
    return TokenCounter(encoding_for_model(settings.model or ""))
