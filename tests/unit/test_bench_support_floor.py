"""bench.support_floor: the Writer's code checks alone on labelled (passage, sentence) pairs."""

from __future__ import annotations

import json

from bench.support_floor import PAIRS, judge_pairs

PASSAGE = "Manufacturers sold 2.61 million heat pumps into the European market in 2025."


def pair(sentence: str, label: str, why: str) -> dict[str, str]:
    return {"passage": PASSAGE, "sentence": sentence, "label": label, "why": why}


def test_counts_what_the_checks_pass_catch_and_let_slip():
    rows = [pair("In 2025 manufacturers sold 2.61 million heat pumps into Europe.", "supported", "paraphrase"),
            pair("Manufacturers sold 2.16 million heat pumps into the European market in 2025.", "unsupported",
                 "figure changed"),
            pair("Manufacturers sold 2.61 million heat pumps into the European market in 2025, because of subsidies.",
                 "unsupported", "cause added")]
    out = judge_pairs(rows)
    assert (out["supported_passed"], out["unsupported_caught"], out["unsupported_slipped"]) == (1, 1, 1)
    assert out["slipped_by_kind"] == {"cause added": 1}


def test_the_shipped_pairs_are_labelled_and_balanced():
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]
    labels = [r["label"] for r in rows]
    assert len(rows) >= 40 and set(labels) == {"supported", "unsupported"}
    assert min(labels.count("supported"), labels.count("unsupported")) >= len(rows) // 3
    out = judge_pairs(rows)
    assert out["supported_passed"] + sum(out["supported_refused_by_check"].values()) == labels.count("supported")
