"""The embedded model's server process: llama.cpp's own C++ HTTP server from the prebuilt
xllamacpp wheel, started as `python -m briefroom.models.llama_server --model FILE ...`.

It runs in a process of its own so that the CLI can stop it whatever it is doing (the
C++ server ignores Python's `sys.exit` from a signal handler; `os._exit` ends it), and
so that a crash of the native code (SIGILL on a CPU without the wheel's instructions)
is a dead child with a signal, not a dead CLI.

What is set here and why:
- `n_parallel` slots, each with the full window (`n_ctx` is the slots' total): the
  client pins each role to its own slot, so a role's stable prefix stays in that slot's
  KV cache while the other roles speak; parallel searchers run in their own slots
  through continuous batching.
- `poll = 0`: llama.cpp's threads otherwise spin waiting for work, which on a shared
  2-core machine takes the cores from the thread that has work (0.4 against 8.8 tokens/s
  measured in the issue).
- a small RAM prompt cache: with a slot per role little is evicted; the default 8 GiB
  would let a long run grow the process without need.
- it ends when the process that started it is gone, however that process died.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable

PROMPT_CACHE_MIB = 512


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="briefroom.models.llama_server")
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--slot-context", type=int, required=True, help="tokens of context per slot")
    parser.add_argument("--slots", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="threads generating tokens")
    parser.add_argument("--batch-threads", type=int, default=0, help="threads reading a prompt (0: --threads)")
    parser.add_argument("--alias", default="")
    return parser.parse_args(argv)


def serve(args: argparse.Namespace) -> None:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    if args.alias:
        params.model_alias = args.alias
    params.n_parallel = args.slots
    params.n_ctx = args.slot_context * args.slots
    params.kv_unified = False  # each slot owns its window: one role cannot evict another
    params.cont_batching = True
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.batch_threads or args.threads
    for cpu in (params.cpuparams, params.cpuparams_batch):
        cpu.poll = 0
    params.cache_ram_mib = PROMPT_CACHE_MIB
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.endpoint_props = True
    params.endpoint_slots = True
    params.use_jinja = True  # the model's own chat template, tool calls included
    params.sse_ping_interval = 10  # a stream that is only evaluating a long prompt still says it is alive
    parent = os.getppid()
    server = xllamacpp.Server(params)
    print(f"listening {server.listening_address}", flush=True)
    outlive_no_parent(parent)
    os._exit(0)


def outlive_no_parent(parent: int, poll_s: float = 2.0, getppid: Callable[[], int] = os.getppid,
                      sleep: Callable[[float], None] = time.sleep) -> None:
    """Return once the process that started the server is gone (it is then re-parented):
    a client killed without stopping it (SIGKILL, or a script with no SIGTERM handler) would
    otherwise leave a server holding the model's memory and a share of the cores."""
    while getppid() == parent:
        sleep(poll_s)


def _exit_now(signum: int, _frame: object) -> None:
    os._exit(128 + signum)


def main(argv: list[str] | None = None) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _exit_now)
    serve(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
