"""The model's own sentences in the recorded reports, for a hand check, and what the
hand check found (bench/data/own_sentences.tsv: recording — a recordings/TAG, or "default" for the
scenario's own —, scenario, sentence, verdict, note; verdict "supported" or
"unsupported", read against the passages the sentence cites).

    .venv/bin/python -m bench.own_sentences [--recording TAG] [--split dev|test|all] [--unchecked]

Each recorded report (a scenario's own, or with --recording its recordings/TAG) is scored
as `briefroom eval` scores it (`score_markdown`): its cited sentences, those in the
model's own words (neither quoted nor copied from a source), and those the code checks
find supported. A sentence said twice in one report counts once. The JSON gives, per
split, those counts and the hand check's: how many own sentences have a verdict, how
many were found unsupported, how many are still unchecked; with --unchecked, each
unchecked sentence with the sentences of its cited sources that share most of its
words, to read beside it.
"""

from __future__ import annotations

import argparse
import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from briefroom.evaluation.metrics import OwnLine
from briefroom.evaluation.scoring import corpus_documents, score_markdown
from briefroom.evaluation.suite import SplitChoice, discover
from briefroom.protocol.extraction import content_words, sentences
from briefroom.scenario import load_recorded, recording_of

CHECKS = Path(__file__).with_name("data") / "own_sentences.tsv"
SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
VERDICTS = ("supported", "unsupported")
DEFAULT = "default"  # the recording column's name for a scenario's own recording


def read_checks(path: Path = CHECKS) -> dict[tuple[str, str, str], str]:
    """(recording, scenario, sentence) -> verdict."""
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    for row in rows:
        if row["verdict"] not in VERDICTS:
            raise ValueError(f"{path}: verdict must be one of {VERDICTS}, not {row['verdict']!r}")
    return {(row["recording"], row["scenario"], row["sentence"]): row["verdict"] for row in rows}


@dataclass
class SplitCount:
    reports: int = 0
    cited: int = 0
    own: int = 0
    own_supported_by_code: int = 0
    checked: int = 0
    unsupported_by_hand: int = 0
    unchecked: list[dict[str, object]] = field(default_factory=list)

    def as_json(self, unchecked: bool) -> dict[str, object]:
        out: dict[str, object] = {
            "reports": self.reports, "cited_sentences": self.cited, "own_sentences": self.own,
            "own_share": round(self.own / self.cited, 3) if self.cited else 0.0,
            "own_supported_by_code": self.own_supported_by_code, "checked_by_hand": self.checked,
            "unsupported_by_hand": self.unsupported_by_hand, "unchecked": len(self.unchecked)}
        return {**out, "unchecked_sentences": self.unchecked} if unchecked else out


def closest(line: OwnLine, texts: dict[str, str], n: int = 2) -> list[str]:
    """The sentences of the cited sources that share the most content words with the line
    (`content_words`: Chinese by character pairs)."""
    words = content_words(line.text)
    candidates = [s for sid in line.sources for s in sentences(texts.get(sid, ""))]
    return sorted(candidates, key=lambda s: -len(words & content_words(s)))[:n]


def count(recording: str | None, split: SplitChoice = "all", scenarios: Path = SCENARIOS,
          checks: dict[tuple[str, str, str], str] | None = None) -> dict[str, SplitCount]:
    checks = read_checks() if checks is None else checks
    tag = recording or DEFAULT
    out: dict[str, SplitCount] = {}
    for folder, scenario in discover([scenarios], split):
        where = recording_of(folder, recording)
        if not (where / "report.md").is_file():
            continue
        recorded = load_recorded(where)
        documents = corpus_documents(folder, recorded.scenario)
        score = score_markdown((where / "report.md").read_text(encoding="utf-8"), folder, recorded.scenario,
                               documents=documents)
        counts = out.setdefault(scenario.split, SplitCount())
        counts.reports += 1
        counts.cited += score.cited_sentences
        texts = {d.source_id: d.text for d in documents}
        for line in {ln.text: ln for ln in score.own_lines}.values():  # once per report
            counts.own += 1
            counts.own_supported_by_code += line.supported
            verdict = checks.get((tag, scenario.name, line.text))
            if verdict is None:
                counts.unchecked.append({"scenario": scenario.name, "sentence": line.text,
                                         "supported_by_code": line.supported, "closest": closest(line, texts)})
            else:
                counts.checked += 1
                counts.unsupported_by_hand += verdict == "unsupported"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recording", help="the recordings/TAG to read (default: each scenario's own)")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--unchecked", action="store_true", help="list each own sentence without a verdict")
    args = parser.parse_args(argv)
    split: SplitChoice = args.split
    result = {name: c.as_json(args.unchecked) for name, c in sorted(count(args.recording, split).items())}
    print(json.dumps(result, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
