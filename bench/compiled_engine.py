"""The embedded engine against a compiled llama.cpp: prompt and generation tokens per
second of briefroom's prebuilt server (xllamacpp) and of llama-cpp-python built for this
CPU, on the same prompt, calls alternating between the two so that both see the same
machine load.

    pip install llama-cpp-python    # opt-in, into a venv of its own: it compiles for 10-25 minutes
    python -m bench.compiled_engine [--model FILE.gguf] [--threads 1/2] [--pairs 8]

Both engines are loaded at once: llama-cpp-python in this process, the server as
`EmbeddedServer` starts it for a run (one slot). Each call starts with its own words, so
no prompt cache serves it, and generates exactly `GENERATED` tokens (end of text
blocked). Prompt speed is prompt tokens over the time to the first token, generation
speed the tokens after it over the time they took, as llama.cpp's server counts them
(its `timings`). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.embedded import FILLER
from briefroom.models import embedded
from briefroom.models.embedded import EmbeddedServer

GENERATED = 64
CONTEXT = 2048


def messages(n: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": f"Report {n}: you are a careful market analyst."},
            {"role": "user", "content": FILLER * 12 + "Summarise the trend in three sentences."}]


def compiled_call(llm: Any, n: int) -> dict[str, float]:
    import llama_cpp
    import numpy as np

    end_of_text = [t for t in range(llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(llm._model.vocab, t)]
    sampled: list[float] = []

    def stamp(_ids: Any, scores: Any) -> Any:  # called once per generated token, before sampling
        sampled.append(time.perf_counter())
        scores[end_of_text] = -np.inf
        return scores

    llm.reset()
    started = time.perf_counter()
    reply = llm.create_chat_completion(messages=messages(n), max_tokens=GENERATED, temperature=0.0,
                                       logits_processor=llama_cpp.LogitsProcessorList([stamp]))
    usage = reply["usage"]
    return {"prompt": usage["prompt_tokens"] / (sampled[0] - started),
            "generation": (usage["completion_tokens"] - 1) / (sampled[-1] - sampled[0])}


def served_call(base_url: str, n: int) -> dict[str, float]:
    body = json.dumps({"messages": messages(n), "max_tokens": GENERATED, "temperature": 0, "ignore_eos": True,
                       "cache_prompt": False}).encode()
    request = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=1800) as resp:
        timings = json.loads(resp.read())["timings"]
    return {"prompt": timings["prompt_per_second"], "generation": timings["predicted_per_second"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, default=None, help="a GGUF file (default: the bundled SmolLM2)")
    parser.add_argument("--threads", default="1/2", help="GEN/BATCH: threads generating / reading a prompt")
    parser.add_argument("--pairs", type=int, default=8)
    args = parser.parse_args()
    try:
        from llama_cpp import Llama
    except ImportError:
        raise SystemExit("error: llama-cpp-python is not installed here (pip install llama-cpp-python)") from None
    model = args.model or embedded.embedded_model_path()
    gen, _, batch = args.threads.partition("/")
    threads, batch_threads = int(gen), int(batch or gen)
    llm = Llama(model_path=str(model), n_threads=threads, n_threads_batch=batch_threads, n_ctx=CONTEXT, verbose=False)
    pairs = []
    with EmbeddedServer(model_path=model, threads=threads, batch_threads=batch_threads, n_ctx=CONTEXT) as server:
        compiled_call(llm, -1), served_call(server.base_url, -2)  # warm-up
        for i in range(args.pairs):
            calls = [("compiled", lambda n: compiled_call(llm, n)), ("prebuilt", lambda n: served_call(server.base_url, n))]
            pairs.append({name: call(1000 + 2 * i + k) for k, (name, call) in enumerate(calls[:: 1 if i % 2 == 0 else -1])})

    def median(engine: str, key: str) -> float:
        return round(statistics.median(p[engine][key] for p in pairs), 1)

    print(json.dumps({"model": model.name, "threads": args.threads, "pairs": args.pairs,
                      **{f"{engine}_{key}_tokens_per_s": median(engine, key)
                         for engine in ("compiled", "prebuilt") for key in ("prompt", "generation")},
                      "compiled_faster_prompt": sum(p["compiled"]["prompt"] > p["prebuilt"]["prompt"] for p in pairs),
                      "compiled_faster_generation": sum(p["compiled"]["generation"] > p["prebuilt"]["generation"]
                                                        for p in pairs)}, indent=2))


if __name__ == "__main__":
    main()
