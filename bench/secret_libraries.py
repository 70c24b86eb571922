"""Maintained secret scanners vs briefroom's redactor, on the issue's formats.

Before writing rules we measured what a maintained library catches: detect-secrets
(Yelp) with its default plugins, on every fake sample format in every shape (prose,
JSON, env file, HTTP headers, base64), and on 1,000 benign high-entropy strings.

    .venv/bin/python -m bench.secret_libraries

A sample counts as caught when a finding covers the secret's value (the part that
must not survive); detect-secrets reports lines and values, so this is generous to it.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ holds the fake-secret generator

from briefroom.protocol.redaction import redact  # noqa: E402
from tests.secret_samples import benign, contexts, samples, secret_value  # noqa: E402


def detect_secrets_findings(text: str) -> list[str]:
    """What `detect-secrets scan` reports for a file holding `text` (default plugins,
    entropy limits and heuristic filters, as its users run it)."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sample.txt"
        path.write_text(text)
        secrets = SecretsCollection()
        with default_settings():
            secrets.scan_file(str(path))
        return [s.secret_value or "" for _, s in secrets]


def _caught_by_library(text: str, value: str) -> bool:
    found = detect_secrets_findings(text)
    core = value.replace("\n", "")[:40]
    return any(f and (core[:16] in f or (len(f) >= 8 and f in value)) for f in found)


def _caught_by_briefroom(text: str, value: str) -> bool:
    redacted, findings = redact(text)
    return bool(findings) and all(line not in redacted for line in value.splitlines() if len(line) >= 8)


def run() -> dict[str, object]:
    try:
        import detect_secrets  # noqa: F401
    except ImportError:
        return {"bench": "secret_libraries", "error": "detect-secrets is not installed (pip install -e '.[dev]')"}
    per_format: dict[str, dict[str, int]] = {}
    per_shape: dict[str, dict[str, int]] = {}
    totals = {"detect_secrets": 0, "briefroom": 0, "cases": 0}
    for name, secret in samples():
        value = secret_value(secret)
        row = {"detect_secrets": 0, "briefroom": 0}
        for shape, text in contexts(name, secret).items():
            lib, own = _caught_by_library(text, value), _caught_by_briefroom(text, value)
            row["detect_secrets"] += lib
            row["briefroom"] += own
            shape_row = per_shape.setdefault(shape, {"detect_secrets": 0, "briefroom": 0})
            shape_row["detect_secrets"] += lib
            shape_row["briefroom"] += own
            totals["cases"] += 1
        totals["detect_secrets"] += row["detect_secrets"]
        totals["briefroom"] += row["briefroom"]
        per_format[name] = row
    strings = benign()
    started = time.perf_counter()
    lib_fp = sum(bool(detect_secrets_findings(f"see {s} for details")) for s in strings)
    lib_s = time.perf_counter() - started
    started = time.perf_counter()
    own_fp = sum(bool(redact(f"see {s} for details")[1]) for s in strings)
    own_s = time.perf_counter() - started
    missed = sorted(n for n, r in per_format.items() if r["detect_secrets"] == 0)
    return {"bench": "secret_libraries", "formats": len(per_format), "cases": totals["cases"],
            "detect_secrets_caught": totals["detect_secrets"], "briefroom_caught": totals["briefroom"],
            "by_shape": per_shape, "detect_secrets_formats_never_caught": missed,
            "benign_strings": len(strings), "detect_secrets_false_positives": lib_fp,
            "briefroom_false_positives": own_fp, "detect_secrets_benign_scan_s": round(lib_s, 3),
            "briefroom_benign_scan_s": round(own_s, 3)}


if __name__ == "__main__":
    print(json.dumps(run()))
