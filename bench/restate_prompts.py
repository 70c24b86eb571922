"""Try a variant of the restate task (`writer_restate.md`) on recorded restate calls, live.

A run made with `--quotes restate` logs the Writer's restate call (its whole prompt, as
`llm_call` with purpose "ask Restatements") in run.jsonl. This bench takes that prompt,
puts the variant task in place of the recorded one (the same quotes, each after who gives
it, and the same context before it), asks a local GGUF model with the same schema and
sampling, and prints each rewrite with what `report.restate.differs` says of it (None: it
says the same as its quote and goes on to the checks and the support judgement).

    BRIEFROOM_QUOTES=restate briefroom eval scenarios/cloud-market --model FILE.gguf --out RUNS
    python -m bench.restate_prompts --model FILE.gguf [--variant my.md] [--bare] RUNS/*/ > out.json

Dev scenarios only: tune prompts on the development split, never on the test split.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import NamedTuple

from bench.local_chat import structured_reply
from briefroom.agents.structured import constrain_schema
from briefroom.prompts import load_template, render
from briefroom.report.restate import Restatements, differs


class Quote(NamedTuple):
    text: str
    source: str  # its kind and title, as the model was shown them ("" in a recording without them)


_TASK = "## Current task\n"
_QUOTES = re.compile(r'(<data-[0-9a-f]+ kind="quotes">\n.*?\n</data-[0-9a-f]+>)', re.S)
_QUOTE = re.compile(r"^(q\d+)(?: \[([^\]]*)\])?: (.*)$", re.M)
_REPLY_RULES = "In this reply:"
_LANGUAGE = re.compile(r"in (English|Chinese)\b")


def recorded_call(run: Path) -> dict | None:
    """The run's first restate call, as its log keeps it."""
    for line in (run / "run.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("event") == "llm_call" and event.get("purpose") == "ask Restatements":
            return event
    return None


def variant_messages(call: dict, variant: str, bare: bool = False) -> tuple[list[dict[str, str]], dict[str, Quote]]:
    """The recorded messages with `variant` as the task, and the quotes (with the source
    each was shown after) by id. `bare`: without the role's context before the task
    (whiteboard, facts), to see what the context does."""
    human = call["messages"][-1]["content"]
    head, _, task = human.partition(_TASK)
    shown = _QUOTES.search(task)
    language = _LANGUAGE.search(task)
    if shown is None or language is None or _REPLY_RULES not in task:
        raise ValueError("the recorded call holds no restate task")
    body = render(variant, **{k: v for k, v in {"language": language.group(1), "sentences": shown.group(1)}.items()
                              if "{{" + k + "}}" in variant})
    content = ("" if bare else head) + _TASK + body.rstrip("\n") + "\n\n" + task[task.index(_REPLY_RULES):]
    messages = [{"role": "system", "content": call["messages"][0]["content"]}, {"role": "user", "content": content}]
    return messages, {i: Quote(text, source) for i, source, text in _QUOTE.findall(shown.group(1))}


def ask(base_url: str, messages: list[dict[str, str]], ids: list[str]) -> tuple[list[dict], float]:
    schema = constrain_schema(Restatements.model_json_schema(), {"sentence_id": ids}, {"rewrites": len(ids)})
    reply, seconds = structured_reply(base_url, messages, schema)
    try:
        rewrites = [r for r in json.loads(reply).get("rewrites", []) if isinstance(r, dict)]
    except (json.JSONDecodeError, AttributeError):
        rewrites = []
    return rewrites, seconds


def judged(rewrites: list[dict], quotes: dict[str, Quote]) -> list[dict]:
    """Each rewrite with its quote and why it does not say the same (None: it does)."""
    out = []
    for rewrite in rewrites:
        quote = quotes.get(str(rewrite.get("sentence_id")))
        text = str(rewrite.get("text", ""))
        out.append({"id": rewrite.get("sentence_id"), "quote": quote.text if quote else "", "rewrite": text,
                    "differs": differs(text, quote.text, quote.source) if quote else "no such quote"})
    return out


def main(argv: list[str] | None = None) -> int:
    from briefroom.models.embedded import EmbeddedServer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories of `--quotes restate` runs")
    parser.add_argument("--model", type=Path, required=True, help="a GGUF file")
    parser.add_argument("--variant", type=Path, help="the template to try (default: the shipped writer_restate.md)")
    parser.add_argument("--bare", action="store_true", help="without the role's context before the task")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    variant = args.variant.read_text(encoding="utf-8") if args.variant else load_template("writer_restate.md")
    calls = [(run, call) for run in args.runs if (call := recorded_call(run)) is not None]
    results = []
    with EmbeddedServer(model_path=args.model, threads=args.threads) as server:
        for run, call in calls:
            messages, quotes = variant_messages(call, variant, args.bare)
            rewrites, seconds = ask(server.base_url, messages, list(quotes))
            results.append({"run": run.name, "seconds": seconds, "rewrites": judged(rewrites, quotes)})
            print(f"{run.name}: {len(quotes)} quote(s) ({seconds} s)", file=sys.stderr)
    rewrites = [r for result in results for r in result["rewrites"]]
    print(json.dumps({"summary": {"runs": len(results), "rewrites": len(rewrites),
                                  "say_the_same": sum(r["differs"] is None for r in rewrites)},
                      "runs": results}, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
