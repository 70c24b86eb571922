"""A/B a variant of the Writer's part prompt (`writer_part.md`) on recorded prompts, live.

Each scenario's cassette holds the Writer's part prompts as a run built them (facts,
whiteboard, the part's evidence). This bench takes the first prompt of each part, renders
the variant template with the same part, question and evidence in place of the shipped
one, asks a local GGUF model for the section (the same JSON schema and sampling as a run),
and scores what it wrote: how many claims copy no sentence the prompt showed (the suite's
own-words test) and how many give only numbers their cited sources hold.

Dev scenarios only: tune prompts on the development split, never on the test split.

    python -m bench.writer_prompts --model FILE.gguf --variant my_writer_part.md \\
        scenarios/cloud-market scenarios/ferry-operator-share … > out.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.local_chat import structured_reply
from briefroom.agents.structured import constrain_schema
from briefroom.evaluation.metrics import normal, own_words, whole_sentences
from briefroom.prompts import load_template, render
from briefroom.records import DraftSection
from briefroom.report.checks import source_readings, unsupported_numbers

_TASK_START = "Write the section of the report"
_PART = re.compile(r"this part of the question:\n1\. (.*)\n\(The whole question: (.*)\)")
_EVIDENCE = re.compile(r'(<data-[0-9a-f]+ kind="evidence">\n.*?\n</data-[0-9a-f]+>)', re.S)
_REPORT = re.compile(r"Report: (.*), about (\d+) words in all its sections\. Audience: (.*)\.$", re.M)
# What a run appends after the task (the Critic's feedback, the allowed values): kept as recorded.
_AFTER_TASK = ("The Critic sent the last draft back:", "In this reply:")
_LANGUAGE = re.compile(r"in (.+?), the language of the question")
_EVIDENCE_LINE = re.compile(r"^- \[(S[0-9a-f]{8})[^\]]*\] (.*)$", re.M)
_FACT = re.compile(r'source="(S[0-9a-f]{8})">\n(.*?)\n</data', re.S)


@dataclass
class PartPrompt:
    """One recorded part prompt, with the variant's task in place of the shipped one."""

    scenario: str
    part: str
    messages: list[dict[str, str]]
    source_ids: list[str]
    shown: dict[str, list[str]]  # every sentence the prompt showed, by source id
    reply: str = ""
    seconds: float = 0.0
    claims: list[dict] = field(default_factory=list)


def part_prompts(cassette: Path, variant: str) -> list[PartPrompt]:
    """The first prompt of each part the Writer was asked for in `cassette`."""
    out: list[PartPrompt] = []
    seen: set[str] = set()
    for line in cassette.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("role") != "writer":
            continue
        head, _, tail = record["messages"][-1]["content"].partition(_TASK_START)
        part, evidence, report, language = (_PART.search(tail), _EVIDENCE.search(tail), _REPORT.search(tail),
                                            _LANGUAGE.search(tail))
        if not (tail and part and evidence and report and language) or part.group(1) in seen:
            continue
        seen.add(part.group(1))
        values = {"language": language.group(1), "part": part.group(1), "question": part.group(2),
                  "evidence": evidence.group(1), "kind": report.group(1), "words": report.group(2),
                  "audience": report.group(3)}
        task = render(variant, **{k: v for k, v in values.items() if "{{" + k + "}}" in variant})
        after = min((i for i in (tail.find(m) for m in _AFTER_TASK) if i >= 0), default=len(tail))
        task = task.rstrip("\n") + tail[len(tail[:after].rstrip("\n")):]
        shown: dict[str, list[str]] = {}
        for sid, text in [*_FACT.findall(head), *_EVIDENCE_LINE.findall(evidence.group(1))]:
            shown.setdefault(sid, []).append(text)
        messages = [{"role": "system" if m["type"] == "system" else "user", "content": m["content"]}
                    for m in record["messages"][:-1]] + [{"role": "user", "content": head + task}]
        out.append(PartPrompt(cassette.parent.name, part.group(1), messages,
                              sorted({sid for sid, _ in _EVIDENCE_LINE.findall(evidence.group(1))}), shown))
    return out


def in_own_words(text: str, shown: dict[str, list[str]]) -> bool:
    """Not quoted and no copy of a sentence the prompt showed (the suite's test, with every
    sentence shown standing in for the cited sources)."""
    every = [s for sentences in shown.values() for s in sentences]
    return own_words(text, [normal(s) for s in every], [c for s in every for c in whole_sentences(s)])


def numbers_hold(claim: dict, shown: dict[str, list[str]]) -> bool:
    pool = " ".join(s for sid in claim.get("source_ids", []) for s in shown.get(sid, []))
    return bool(pool) and not unsupported_numbers(claim.get("text", ""), source_readings(pool))


def score(prompts: list[PartPrompt]) -> dict[str, float | int]:
    claims = [(c, p.shown) for p in prompts for c in p.claims]
    own = [in_own_words(c.get("text", ""), shown) for c, shown in claims]
    held = [numbers_hold(c, shown) for c, shown in claims]
    both = sum(o and h for o, h in zip(own, held))
    return {"prompts": len(prompts), "claims": len(claims), "own_words": sum(own), "numbers_hold": sum(held),
            "own_and_hold": both, "own_and_hold_share": round(both / len(claims), 2) if claims else 0.0}


def ask(base_url: str, prompt: PartPrompt) -> None:
    schema = constrain_schema(DraftSection.model_json_schema(), {"source_ids": prompt.source_ids or ["S00000000"]})
    prompt.reply, prompt.seconds = structured_reply(base_url, prompt.messages, schema)
    try:
        prompt.claims = [c for c in json.loads(prompt.reply).get("claims", []) if isinstance(c, dict)]
    except (json.JSONDecodeError, AttributeError):
        prompt.claims = []


def main(argv: list[str] | None = None) -> int:
    from briefroom.models.embedded import EmbeddedServer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="+", type=Path, help="scenario folders (dev split) with a cassette")
    parser.add_argument("--model", type=Path, required=True, help="a GGUF file")
    parser.add_argument("--variant", type=Path, help="the template to try (default: the shipped writer_part.md)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    variant = args.variant.read_text(encoding="utf-8") if args.variant else load_template("writer_part.md")
    prompts = [p for s in args.scenarios for p in part_prompts(s / "cassette.jsonl", variant)]
    with EmbeddedServer(model_path=args.model, threads=args.threads) as server:
        for prompt in prompts:
            ask(server.base_url, prompt)
            print(f"{prompt.scenario}: {prompt.part[:60]} ({prompt.seconds} s)", file=sys.stderr)
    print(json.dumps({"summary": score(prompts),
                      "prompts": [{k: v for k, v in asdict(p).items() if k != "messages"} for p in prompts]},
                     ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
