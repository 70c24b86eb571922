"""Embedded model throughput: prompt and completion tokens per second, per build and
OpenMP wait policy, on an idle machine and with one busy process beside it.

    .venv/bin/python -m bench.embedded [--python /path/to/other/venv/bin/python] [--label native]

`--python` starts the server with another interpreter (a venv holding another build
of llama-cpp-python, e.g. one compiled with GGML_NATIVE=ON) so both builds are measured
with the same model file and prompts. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from briefroom.models.embedded import EmbeddedServer

FILLER = ("Public cloud spending rose in every region as companies moved training and inference "
          "workloads to rented accelerators, while on-premises budgets stayed flat. ")


class Server(EmbeddedServer):
    def __init__(self, python: str, **kw):
        super().__init__(**kw)
        self.python = python

    def command(self) -> list[str]:
        return [self.python, *super().command()[1:]]


def one_call(base_url: str, n: int) -> dict[str, float]:
    # a different opening each call: llama.cpp would otherwise serve the prompt from its cache
    text = f"Report {n}: " + FILLER * 12 + "Summarise the trend in three sentences."
    body = json.dumps({"messages": [{"role": "user", "content": text}], "max_tokens": 64, "temperature": 0}).encode()
    started = time.perf_counter()
    request = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as resp:
        usage = json.loads(resp.read())["usage"]
    return {"seconds": time.perf_counter() - started, **usage}


def measure(python: str, policy: str | None, busy: int, calls: int) -> dict[str, object]:
    """`busy`: how many CPU-bound processes run beside the server (0: an idle machine)."""
    env_before = os.environ.get("OMP_WAIT_POLICY")
    # None: GNU OpenMP's own default (spins a while, then sleeps), what briefroom leaves it at
    if policy is None:
        os.environ.pop("OMP_WAIT_POLICY", None)
    else:
        os.environ["OMP_WAIT_POLICY"] = policy
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    log = Path(f"/tmp/briefroom-bench-embedded-{os.getpid()}.log")
    try:
        with Server(python, log_path=log) as server:
            one_call(server.base_url, -1)  # warm-up
            runs = [one_call(server.base_url, n) for n in range(calls)]
    finally:
        for burner in burners:
            burner.kill()
        if env_before is None:
            os.environ.pop("OMP_WAIT_POLICY", None)
        else:
            os.environ["OMP_WAIT_POLICY"] = env_before
    timings = [line for line in log.read_text(errors="replace").splitlines() if "tokens per second" in line]
    prompt_tps = [float(t.split(",")[-1].split()[0]) for t in timings if "prompt eval time" in t][1:]
    eval_tps = [float(t.split(",")[-1].split()[0]) for t in timings if " eval time" in t and "prompt" not in t][1:]
    log.unlink(missing_ok=True)
    return {"wait_policy": policy or "unset (GNU default)", "busy_processes": busy,
            "median_call_s": round(statistics.median(r["seconds"] for r in runs), 2),
            "prompt_tokens_per_s": round(statistics.median(prompt_tps), 1) if prompt_tps else None,
            "completion_tokens_per_s": round(statistics.median(eval_tps), 1) if eval_tps else None,
            "prompt_tokens": runs[0]["prompt_tokens"], "completion_tokens": runs[0]["completion_tokens"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=sys.executable, help="interpreter whose llama-cpp-python serves")
    parser.add_argument("--label", default="portable (this venv)")
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--busy", type=int, action="append",
                        help="CPU-bound processes beside the server (repeatable; default 0, 1 and 2)")
    args = parser.parse_args()
    info = subprocess.run([args.python, "-c", "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"],
                          capture_output=True, text=True).stdout.strip().splitlines()[-1]
    rows = [measure(args.python, policy, busy, args.calls)
            for busy in (args.busy or [0, 1, 2]) for policy in ("PASSIVE", None, "ACTIVE")]
    print(json.dumps({"build": args.label, "cpu_features": info, "runs": rows}, indent=2))


if __name__ == "__main__":
    main()
