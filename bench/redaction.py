"""Secret redaction on public samples: recall by context and key-name style, benign lines
changed, speed.

The samples are built from local snapshots by bench/redaction_samples.py (gitleaks' rule
generators for the secrets, ordinary repositories for the benign lines); nothing is fetched
at run time.

    .venv/bin/python -m bench.redaction --samples /tmp/samples [--scanner kingfisher] [--json]

A secret counts as caught when no 8-character piece of its value, as written in the text,
is left in the output (pieces wholly inside the format's fixed prefix, the gitleaks keyword
the value starts with, do not count). Contexts: alone, prose, json, env. "prefixed" keeps
the formats with a distinctive prefix; the contexts name no key that marks a secret
(key names are measured on their own, per naming style). A benign line counts as changed if redaction changes
it. Speed: p50 of 20 runs on 50 KB of ordinary text and on 50 KB of secret-dense JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

Redactor = Callable[[str], tuple[str, list[str]]]  # text -> (output, labels found)
CONTEXTS: dict[str, Callable[[str], str]] = {
    "alone": lambda v: v,
    "prose": lambda v: f"The deploy used {v} yesterday.",
    "json": lambda v: json.dumps({"name": "deploy", "value": v}),  # no key that says "secret"
    "env": lambda v: f"SOME_NAME={v}",
}


def briefroom() -> Redactor:
    from briefroom.protocol.redaction import redact

    return lambda text: (lambda out, findings: (out, [f.label for f in findings]))(*redact(text))


def kingfisher() -> Redactor:
    """Kingfisher alone, as briefroom configures it (medium confidence), spans replaced by markers."""
    import kingfisher_sdk

    scanner = kingfisher_sdk.Scanner(kingfisher_sdk.Rules(confidence="medium"))

    def run(text: str) -> tuple[str, list[str]]:
        raw, spans = text.encode(), []
        for f in scanner.scan(raw):
            spans.append((f.location["start_offset"], f.location["end_offset"], f.rule_id))
        out, last = [], 0
        for start, end, _ in sorted(spans):
            if end > last:
                out += [raw[last:max(start, last)], b"[REDACTED]"]
                last = end
        return (b"".join(out) + raw[last:]).decode(errors="replace"), [label for *_, label in spans]

    return run


def caught(output: str, value: str, fixed: int = 0) -> bool:
    """No 8-character piece of `value` (past its first `fixed` characters) is left in `output`."""
    if len(value) < 8:
        return value not in output
    return not any(value[i:i + 8] in output for i in range(len(value) - 7) if i + 8 > fixed)


def share(flags: list[bool]) -> float:
    return round(sum(flags) / max(1, len(flags)), 4)


def run(samples: Path, scanner: str) -> dict[str, Any]:
    read = lambda name: [json.loads(line) for line in (samples / name).read_text().splitlines()]  # noqa: E731
    started = time.perf_counter()
    redact = briefroom() if scanner == "briefroom" else kingfisher()
    built = time.perf_counter()
    redact("warm-up: ghp_0123456789abcdefghijABCDEFGHIJ012345")  # briefroom builds Kingfisher's rules on first use
    # briefroom: import compiles its own rules, the first call builds Kingfisher's (cached on disk)
    result: dict[str, Any] = {"bench": "redaction", "scanner": scanner, "build_s": round(built - started, 3),
                              "first_call_s": round(time.perf_counter() - built, 3)}

    secrets = read("secrets.jsonl")
    recall: dict[str, dict[str, list[bool]]] = {"all": defaultdict(list), "prefixed": defaultdict(list)}
    misses: Counter[str] = Counter()
    for s in secrets:
        for context, write in CONTEXTS.items():
            as_written = json.dumps(s["value"])[1:-1] if context == "json" else s["value"]
            ok = caught(redact(write(s["value"]))[0], as_written, len(s["prefix"] or ""))
            recall["all"][context].append(ok)
            if s["prefix"]:
                recall["prefixed"][context].append(ok)
            if not ok and context == "alone":
                misses[s["rule_id"]] += 1
    result["secrets"] = {"values": len(secrets), "formats": len({s["rule_id"] for s in secrets}),
                         "prefixed_values": sum(1 for s in secrets if s["prefix"])}
    result["recall"] = {group: {c: share(v) for c, v in by.items()} for group, by in recall.items()}
    result["missed_alone"] = {"formats": len(misses), "most": dict(misses.most_common(10))}

    styles: dict[str, list[bool]] = defaultdict(list)
    for k in read("keynames.jsonl"):
        styles[k["style"]].append(caught(redact(k["text"])[0], k["value"]))
    result["keynames"] = {"all": share([x for v in styles.values() for x in v]),
                          **{style: share(v) for style, v in styles.items()}}

    changed: dict[str, list[bool]] = defaultdict(list)
    labels: Counter[str] = Counter()
    examples: list[str] = []
    for line in read("benign.jsonl"):
        out, found = redact(line["text"])
        changed[line["kind"]].append(out != line["text"])
        labels.update(found)
        examples += [out[:120]] if out != line["text"] and len(examples) < 5 else []
    result["benign_changed"] = {"all": share([x for v in changed.values() for x in v]),
                                **{kind: share(v) for kind, v in changed.items()},
                                "lines": {kind: len(v) for kind, v in changed.items()},
                                "labels": dict(labels.most_common(8)), "examples": examples}

    for name in ("ordinary_50k.txt", "dense_50k.json"):
        text, times = (samples / name).read_text(), []
        for _ in range(20):
            start = time.perf_counter()
            found = redact(text)[1]
            times.append((time.perf_counter() - start) * 1000)
        result[f"speed_{name.split('.')[0]}"] = {"bytes": len(text.encode()), "findings": len(found),
                                                  "ms_p50": round(statistics.median(times), 2)}
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=Path, required=True, help="the --out directory of bench.redaction_samples")
    ap.add_argument("--scanner", choices=("briefroom", "kingfisher"), default="briefroom")
    ap.add_argument("--json", action="store_true", help="one line of JSON instead of indented JSON")
    args = ap.parse_args()
    result = run(args.samples, args.scanner)
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
