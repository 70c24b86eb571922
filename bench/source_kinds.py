"""How often the source-kind rules give a document the kind a reader would: every
document of the development corpora, labelled while the rules were written, and the
test corpora's documents (the first 40 of large-corpus-needle), labelled by another
annotator who never saw the rules, in bench/data/source_kinds.tsv. A row lists every
kind a careful reader would accept, the likeliest first.

    .venv/bin/python -m bench.source_kinds [--labels FILE] [--misses]

Each document is loaded as a run loads it (`load_document`) and profiled as a report
profiles a retrieved source (`source_kinds.profile`, title and opening lines); the JSON
gives, per split, how many documents got an accepted kind, the accuracy, how many got
a wrong kind (`misleading`: a kind no reader would accept, where "unknown", shown as
"document", only says less), and with --misses each miss with the rule that decided it.
"""

from __future__ import annotations

import argparse
import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from briefroom.corpus.documents import load_document
from briefroom.records import Passage, SourceRecord
from briefroom.report.source_kinds import SourceProfile, profile

LABELS = Path(__file__).with_name("data") / "source_kinds.tsv"
SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def read_labels(path: Path = LABELS) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def profile_file(path: Path) -> SourceProfile:
    """The document's kind as a report would give it, had the run retrieved all of it."""
    document = load_document(path)
    if document is None:
        raise ValueError(f"{path}: not a document briefroom reads")
    passage = Passage(chunk_id="S:0", start=0, end=len(document.text), text=document.text)
    return profile(SourceRecord(source_id="S", title=document.title, path=str(path), passages=(passage,)))


@dataclass
class SplitScore:
    documents: int = 0
    right: int = 0
    misleading: int = 0
    misses: list[dict[str, object]] = field(default_factory=list)

    def as_json(self, misses: bool = True) -> dict[str, object]:
        out: dict[str, object] = {"documents": self.documents, "right": self.right, "misleading": self.misleading,
                                  "accuracy": round(self.right / self.documents, 3) if self.documents else 0.0}
        return {**out, "misses": self.misses} if misses else out


def score(rows: list[dict[str, str]], scenarios: Path = SCENARIOS) -> dict[str, SplitScore]:
    """Per split: documents, those given an accepted kind, those given a wrong one, the misses."""
    splits: dict[str, SplitScore] = {}
    for row in rows:
        given = profile_file(scenarios / row["scenario"] / "corpus" / row["file"])
        accepted = row["kinds"].split("|")
        split = splits.setdefault(row["split"], SplitScore())
        split.documents += 1
        if given.kind in accepted:
            split.right += 1
            continue
        split.misleading += given.kind != "unknown"
        split.misses.append({"document": f"{row['scenario']}/{row['file']}", "given": given.kind,
                             "rule": given.rule, "accepted": accepted})
    return splits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--misses", action="store_true", help="list each document given a kind not accepted")
    args = parser.parse_args(argv)
    result = {name: split.as_json(args.misses) for name, split in score(read_labels(args.labels)).items()}
    print(json.dumps(result, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
