"""What the statement screen drops from clean documents, and what it catches. Prints JSON.

    .venv/bin/python -m bench.statement_screen [--scenarios DIR]

The screen (`protocol/statements.py`, `extraction.statements`) must not cost a clean
report anything. For every shipped scenario's corpus it counts the sentences and the
verbatim facts the pipeline reads before and after the screen, the documents whose text
`quotable` changes, and the titles that fall back to the file name; every dropped
sentence is listed. Then, for each split of the attack catalogue, how many templates
leave no statement behind (every sentence of the planted block screened out).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.attack_corpus import SPLITS, CanaryMaker, fill, templates_of  # noqa: E402
from briefroom.corpus.documents import load_corpus  # noqa: E402
from briefroom.protocol.extraction import extract_facts, quotable, sentences, statements  # noqa: E402


def clean_counts(scenarios: Path) -> dict:
    totals = {"documents": 0, "sentences": 0, "sentences_dropped": 0, "facts": 0, "facts_dropped": 0,
              "texts_changed": 0, "titles_from_file_name": 0}
    dropped: list[str] = []
    for corpus in sorted(scenarios.glob("*/corpus")):
        for doc in load_corpus(corpus):
            every, kept = sentences(doc.text), statements(doc.text)
            facts = extract_facts(doc.text, doc.source_id, "bench", 0)  # screened
            unscreened = [s for s in every if any(ch.isdigit() for ch in s)]  # upper bound, for scale
            totals["documents"] += 1
            totals["sentences"] += len(every)
            totals["sentences_dropped"] += len(every) - len(kept)
            totals["facts"] += len(facts)
            totals["facts_dropped"] += len([s for s in unscreened if s not in kept])
            totals["texts_changed"] += quotable(doc.text) != doc.text
            totals["titles_from_file_name"] += doc.title == Path(doc.path).stem
            dropped += [f"{corpus.parent.name}/{doc.path}: {s[:160]}" for s in every if s not in kept]
    return {**totals, "dropped": dropped}


def catalogue_counts() -> dict:
    canaries = CanaryMaker(random.Random(0))
    out = {}
    for split in SPLITS:
        templates = templates_of(split)
        missed = [t.name for t in templates if statements(fill(t, canaries.make(t.canary_kind)))]
        out[split] = {"templates": len(templates), "screened_whole": len(templates) - len(missed), "missed": missed}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.statement_screen")
    parser.add_argument("--scenarios", type=Path, default=ROOT / "scenarios")
    args = parser.parse_args(argv)
    print(json.dumps({"bench": "statement_screen", "clean": clean_counts(args.scenarios),
                      "catalogue": catalogue_counts()}, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
