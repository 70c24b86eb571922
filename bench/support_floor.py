"""What the Writer's code checks catch alone: 58 labelled (passage, sentence) pairs built
from the development corpora (cloud-market, heat-pumps-sold-vs-installed, wind-multipart,
ev-registry-vs-blog, ferry-operator-share), each "supported" (a paraphrase, two facts
combined, a figure spelled another way) or "unsupported" (a figure, subject, year or
direction changed, a forecast stated as actual, a cause added), in bench/data/support_pairs.jsonl.

    .venv/bin/python -m bench.support_floor [--pairs FILE]

Each sentence is checked against its passage as the Writer checks a sentence against
what it cites (`report.verify.code_problems`; the model's judgement is not called), and
the JSON says how many supported sentences pass, how many unsupported ones are caught,
and which kinds slip through: the share the model's judgement must cover.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from briefroom.records import Claim
from briefroom.report.checks import Problem
from briefroom.report.verify import code_problems, restates

PAIRS = Path(__file__).with_name("data") / "support_pairs.jsonl"


def read_pairs(path: Path = PAIRS) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def code_verdict(row: dict[str, str]) -> tuple[list[Problem], bool]:
    """What the Writer's code checks say of the pair's sentence against its passage: the
    problems found, and whether it restates the passage (then no model is asked)."""
    claim = Claim(text=row["sentence"], source_ids=["P"])
    sources = {"P": row["passage"]}
    return code_problems(claim, sources), restates(claim, sources)


def judge_pairs(rows: list[dict[str, str]]) -> dict[str, object]:
    """Counts of the code checks' verdicts on labelled pairs, and the kinds each side misses."""
    passed_supported = caught = 0
    slipped: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    unjudged = 0  # unsupported sentences that restate the passage: the model would not even be asked
    for row in rows:
        problems, restated = code_verdict(row)
        if row["label"] == "supported":
            if problems:
                refused[problems[0].kind] += 1
            else:
                passed_supported += 1
        elif problems:
            caught += 1
        else:
            slipped[row["why"]] += 1
            unjudged += restated
    supported = sum(r["label"] == "supported" for r in rows)
    return {"pairs": len(rows), "supported": supported, "unsupported": len(rows) - supported,
            "supported_passed": passed_supported, "unsupported_caught": caught,
            "unsupported_slipped": sum(slipped.values()), "slipped_unjudged": unjudged,
            "slipped_by_kind": dict(slipped.most_common()), "supported_refused_by_check": dict(refused.most_common())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    args = parser.parse_args(argv)
    print(json.dumps(judge_pairs(read_pairs(args.pairs)), indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
