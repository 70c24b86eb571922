"""The whole support check on labelled pairs, live: code's checks, then the team's model
judging what code lets through, as the Writer judges its sentences.

`bench.support_floor` says what code catches alone on bench/data/support_pairs.jsonl (58
pairs from the development corpora). This bench asks a local GGUF model the Writer's
judgement task (`writer_support.md`, the `SupportReview` schema, the same sampling) for
every pair, in batches as a draft is judged, and prints how many supported sentences
pass and how many unsupported ones are caught: by the model alone, and by code and the
model together (a sentence code refuses is refused; one that restates its passage is not
judged; the rest stand or fall by the model's verdict).

The judgement call is made as a run makes it: the Writer's system message (role,
charter, output format) and whatever the recorded judgement call in `--cassette` put
before the task — nothing, now that the judgement is asked without the run's context
(`prompting.focused_prompt`); a cassette recorded before that (git history) measures it
with the run's whiteboard before the task. The reason comes before the verdict, unless
`--verdict-first`.

    python -m bench.support_judge --model FILE.gguf [--variant my.md] [--verdict-first] [--batch 6] > out.json

Dev data only: tune the judgement on the development split, never on the test split.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from bench.local_chat import structured_reply
from bench.support_floor import PAIRS, code_verdict, read_pairs
from briefroom.agents.base import allowed_values
from briefroom.agents.structured import constrain_schema
from briefroom.agents.writer import support_task, unsupported_in
from briefroom.records import Claim
from briefroom.report.verify import SupportReview, SupportVerdict

CASSETTE = Path(__file__).parents[1] / "scenarios/cloud-market/recordings/qwen2.5-coder-1.5b/cassette.jsonl"
_TASK = "## Current task\n"
_JUDGE_TASK = "Judge each sentence below"


class VerdictFirst(BaseModel):
    """`SupportVerdict` with the verdict asked before its reason (`--verdict-first`), as
    the Writer asked it before: the 1.5B then often reasoned against its own verdict."""

    sentence_id: str = SupportVerdict.model_fields["sentence_id"]
    verdict: Literal["supported", "unsupported"] = SupportVerdict.model_fields["verdict"]
    reason: str = SupportVerdict.model_fields["reason"]


class VerdictFirstReview(BaseModel):
    verdicts: list[VerdictFirst] = Field(min_length=1)


def recorded_judgement(cassette: Path) -> tuple[str, str]:
    """(system message, the context before the task) of the first judgement call recorded."""
    for line in cassette.read_text(encoding="utf-8").splitlines():
        messages = json.loads(line).get("messages", [])
        if messages and _JUDGE_TASK in messages[-1]["content"]:
            head = messages[-1]["content"].partition(_TASK)[0]
            return messages[0]["content"], head
    raise ValueError(f"{cassette} holds no judgement call")


def source_id(passage: str) -> str:
    return "S" + hashlib.sha1(passage.encode()).hexdigest()[:8]


def judge_batch(base_url: str, rows: list[dict], system: str, head: str, template: str | None,
                verdict_first: bool = False) -> tuple[dict[int, str] | None, str, float]:
    """{index in `rows`: why unsupported} by the model (None: no valid verdict), its raw
    reply, the seconds."""
    claims = [Claim(text=row["sentence"], source_ids=[source_id(row["passage"])]) for row in rows]
    texts = {source_id(row["passage"]): row["passage"] for row in rows}
    task, ids = support_task(claims, texts, template)
    task += allowed_values({"sentence_id": ids}, {"verdicts": len(ids)})
    messages = [{"role": "system", "content": system}, {"role": "user", "content": head + _TASK + task}]
    review = VerdictFirstReview if verdict_first else SupportReview
    schema = constrain_schema(review.model_json_schema(), {"sentence_id": ids}, {"verdicts": len(ids)})
    reply, seconds = structured_reply(base_url, messages, schema)
    try:
        return unsupported_in(SupportReview.model_validate_json(reply), ids), reply, seconds
    except ValidationError:
        return None, reply, seconds


def tally(rows: list[dict], refused_by_model: set[int]) -> dict[str, object]:
    model = {"supported_pass": 0, "unsupported_caught": 0}
    both = {"supported_pass": 0, "unsupported_caught": 0}
    for n, row in enumerate(rows):
        problems, restated = code_verdict(row)
        refused = bool(problems) or (not restated and n in refused_by_model)
        key = "supported_pass" if row["label"] == "supported" else "unsupported_caught"
        ok = (n not in refused_by_model) if row["label"] == "supported" else (n in refused_by_model)
        model[key] += ok
        both[key] += (not refused) if row["label"] == "supported" else refused
    labels = [row["label"] for row in rows]
    return {"pairs": len(rows), "supported": labels.count("supported"), "unsupported": labels.count("unsupported"),
            "model_alone": model, "code_and_model": both}


def main(argv: list[str] | None = None) -> int:
    from briefroom.models.embedded import EmbeddedServer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="a GGUF file")
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--cassette", type=Path, default=CASSETTE, help="a dev recording holding a judgement call")
    parser.add_argument("--variant", type=Path, help="the task to try (default: the shipped writer_support.md)")
    parser.add_argument("--verdict-first", action="store_true", help="the verdict asked before its reason")
    parser.add_argument("--batch", type=int, default=6, help="sentences a call, as in a draft")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    rows = read_pairs(args.pairs)
    template = args.variant.read_text(encoding="utf-8") if args.variant else None
    system, head = recorded_judgement(args.cassette)
    refused: set[int] = set()
    unjudged = 0  # pairs of a batch whose reply held no valid review: code's checks stand, as in a run
    verdicts = []
    with EmbeddedServer(model_path=args.model, threads=args.threads) as server:
        for start in range(0, len(rows), args.batch):
            batch = rows[start:start + args.batch]
            judged, reply, seconds = judge_batch(server.base_url, batch, system, head, template,
                                                   args.verdict_first)
            unjudged += len(batch) if judged is None else 0
            out = judged or {}
            refused |= {start + k for k in out}
            verdicts += [{"pid": row.get("pid"), "label": row["label"], "sentence": row["sentence"],
                          "model": "unsupported" if k in out else "supported", "reason": out.get(k, "")}
                         for k, row in enumerate(batch)]
            print(f"pairs {start + 1}-{start + len(batch)}: {len(out)} refused ({seconds} s)", file=sys.stderr)
    print(json.dumps({"summary": {**tally(rows, refused), "unjudged": unjudged},
                      "verdict_first": args.verdict_first, "batch": args.batch,
                      "variant": str(args.variant or "writer_support.md"), "verdicts": verdicts},
                     ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
