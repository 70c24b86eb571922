"""Where the year check fires on what models really wrote: every sentence the Writer,
Searcher and Critic of a recording wrote, checked by `checks.misdated_figure` against
each document of the scenario's corpus as if it cited that document alone.

    .venv/bin/python -m bench.dated_scan scenarios/*/cassette.jsonl scenarios/*/recordings/*/cassette.jsonl

A hit is a sentence giving a figure to another year than a document holding it gives it
to; read each: most are misdatings the check exists for, the rest are its false alarms.
The JSON lists every hit (scenario, recording, role, call, document, sentence, why).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from briefroom.records import Claim
from briefroom.report.checks import misdated_figure
from briefroom.scenario import RECORDINGS_DIR

ROLES = ("writer", "searcher", "critic")
# The free-text fields of the team's structured replies that hold statements.
_STATEMENT = re.compile(r'"(?:text|claim|finding|statement)"\s*:\s*"((?:[^"\\]|\\.)*)"')
_TAG = re.compile(r"<[^>]+>")


def scenario_of(cassette: Path) -> tuple[Path, str]:
    """The scenario folder of a cassette and the recording's name ("default": its own)."""
    folder = cassette.parent
    if folder.parent.name == RECORDINGS_DIR:
        return folder.parent.parent, folder.name
    return folder, "default"


def statements_of(reply: dict) -> set[str]:
    content = reply.get("content") or json.dumps(reply.get("tool_calls", []), ensure_ascii=False)
    return {json.loads(f'"{raw}"') for raw in _STATEMENT.findall(str(content))}


def scan(cassette: Path) -> list[dict[str, object]]:
    scenario, recording = scenario_of(cassette)
    documents = {p.name: _TAG.sub(" ", p.read_text(encoding="utf-8", errors="replace"))
                 for p in sorted((scenario / "corpus").iterdir()) if p.is_file()}
    hits = []
    for line in cassette.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry["role"] not in ROLES:
            continue
        for text in sorted(statements_of(entry["response"])):
            for name, document in documents.items():
                problem = misdated_figure(Claim(text=text, source_ids=["D"]), {"D": document})
                if problem is not None:
                    hits.append({"scenario": scenario.name, "recording": recording, "role": entry["role"],
                                 "call": entry["seq"], "document": name, "sentence": text, "why": problem.detail})
    return hits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cassettes", nargs="+", type=Path)
    args = parser.parse_args(argv)
    hits = [hit for cassette in args.cassettes for hit in scan(cassette)]
    print(json.dumps({"cassettes": len(args.cassettes), "hits": len(hits), "found": hits}, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
