"""Embedded model throughput: prompt and generation tokens per second of the embedded
llama.cpp server (xllamacpp), on an idle machine and beside busy processes, with the
threads briefroom chooses (the cores free at start) and with a fixed count.

    .venv/bin/python -m bench.embedded [--model FILE.gguf] [--calls 5] [--busy 0,1] [--threads auto,2]

Each setting starts its own server. A busy process is a Python loop on one core.
The server reports its own timings per call (`timings` in the reply); prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from briefroom.models import embedded
from briefroom.models.embedded import EmbeddedServer

FILLER = ("Public cloud spending rose in every region as companies moved training and inference "
          "workloads to rented accelerators, while on-premises budgets stayed flat. ")


def one_call(base_url: str, n: int) -> dict[str, float]:
    # a different opening each call: llama.cpp would otherwise serve the prompt from its cache
    text = f"Report {n}: " + FILLER * 12 + "Summarise the trend in three sentences."
    body = json.dumps({"messages": [{"role": "user", "content": text}], "max_tokens": 64, "temperature": 0,
                       "ignore_eos": True}).encode()
    started = time.perf_counter()
    request = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=1800) as resp:
        reply = json.loads(resp.read())
    timings = reply.get("timings", {})
    return {"seconds": time.perf_counter() - started, "prompt_tokens": reply["usage"]["prompt_tokens"],
            "prompt_per_second": timings.get("prompt_per_second", 0.0),
            "predicted_per_second": timings.get("predicted_per_second", 0.0)}


def measure(model: Path | None, threads: int | None, batch_threads: int | None = None, *, busy: int,
            calls: int) -> dict[str, object]:
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        time.sleep(1.0 if busy else 0)  # let the burners take their cores before the server counts them
        with EmbeddedServer(model_path=model, threads=threads, n_ctx=2048, batch_threads=batch_threads) as server:
            one_call(server.base_url, -1)  # warm-up
            runs = [one_call(server.base_url, n) for n in range(calls)]
            chosen, free, batch = server.threads, server.free_cores, server.batch_threads
    finally:
        for burner in burners:
            burner.kill()
    return {"busy_processes": busy, "threads_setting": threads or "auto", "threads": chosen, "batch_threads": batch,
            "free_cores_at_start": round(free, 2) if free is not None else None,
            "median_call_s": round(statistics.median(r["seconds"] for r in runs), 2),
            "prompt_tokens_per_s": round(statistics.median(r["prompt_per_second"] for r in runs), 1),
            "generation_tokens_per_s": round(statistics.median(r["predicted_per_second"] for r in runs), 1),
            "prompt_tokens": runs[0]["prompt_tokens"]}


def _threads(setting: str) -> tuple[int | None, int | None]:
    if setting == "auto":
        return None, None
    gen, _, batch = setting.partition("/")
    return int(gen), int(batch) if batch else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, default=None, help="a GGUF file (default: the bundled SmolLM2)")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--busy", default="0,1", help="busy processes beside the server, per setting")
    parser.add_argument("--threads", default="auto,2",
                        help="'auto' (the cores free), a count, or GEN/BATCH (threads generating/reading), per setting")
    args = parser.parse_args()
    model = args.model or embedded.embedded_model_path()
    results = [measure(model, *_threads(t), busy=int(b), calls=args.calls)
               for b in args.busy.split(",") for t in args.threads.split(",")]
    print(json.dumps({"model": model.name, "cores": embedded.cpu_count(), "results": results}, indent=2))


if __name__ == "__main__":
    main()
