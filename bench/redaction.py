"""Redaction speed on a 50 KB tool output (JSON with prose, a few planted secrets).

    .venv/bin/python -m bench.redaction
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ holds the fake-secret generator

from briefroom.protocol.redaction import redact  # noqa: E402
from tests.secret_samples import samples  # noqa: E402


def payload(size: int = 50_000) -> str:
    secrets = [s for _, s in samples()][:5]
    hits, i = [], 0
    while len(json.dumps({"hits": hits})) < size:
        text = (f"Segment {i} grew {i % 40}.{i % 10}% in 2026 according to report {i:05d}. "
                f"See https://example.com/r/{i:08x} for the table. ") * 3
        if i % 40 == 7:
            text += f" leaked: {secrets[i % len(secrets)]}"
        hits.append({"source_id": f"S{i:08x}", "text": text, "score": 0.5})
        i += 1
    return json.dumps({"hits": hits})


def main() -> None:
    text = payload()
    redact(text)  # warm-up: compiled patterns, caches
    times = []
    for _ in range(50):
        start = time.perf_counter()
        _, findings = redact(text)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    print(json.dumps({"bench": "redaction", "bytes": len(text.encode()), "findings": len(findings),
                      "ms_p50": round(statistics.median(times), 2), "ms_p95": round(times[int(len(times) * 0.95)], 2)}))


if __name__ == "__main__":
    main()
