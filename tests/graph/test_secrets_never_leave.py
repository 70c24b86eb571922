"""A corpus full of planted secrets: none of them reaches the run directory or the index.

Every file the run writes (report, sources, charter, run log, checkpoints, llama log)
and every file of the data directory (chromadb, SQLite document store) is scanned as
bytes for each secret value.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from briefroom.config import Settings
from briefroom.run import ResearchRequest, run_research
from tests.secret_samples import KEY_STYLES, PREFIXED, contexts, fake, samples, secret_value


def plant(corpus: Path) -> list[str]:
    values = []
    for i, (name, secret) in enumerate(samples()):
        body = "\n\n".join(contexts(name, secret).values())
        (corpus / f"incident-{i:02d}.md").write_text(
            f"# Incident {i}: cloud spend review\n\nCloud spending rose 12% in 2026 after incident {i}.\n\n{body}\n")
        values.append(secret_value(secret))
    # the formats and key styles the first redactor missed, and an env file with a
    # credential URL (its redacted form once stopped every run that retrieved it)
    lines = [f"Service note {name}: the deploy used {value} yesterday." for name, value in PREFIXED.items()]
    keyed = [fake(zlib.crc32(style.encode()) + 1, 32) for style in KEY_STYLES]
    lines += [style.format(v=v) for style, v in zip(KEY_STYLES, keyed)]
    password = fake(99, 20)
    lines.append(f"DATABASE_URL=postgres://app:{password}@db.internal:5432/orders")
    (corpus / "settings-dump.md").write_text("# Cloud spend settings\n\nCloud spending rose 12% in 2026.\n\n"
                                             + "\n".join(lines) + "\n")
    return values + list(PREFIXED.values()) + keyed + [password]


def scan(root: Path, values: list[str]) -> list[tuple[str, str]]:
    leaks = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            leaks += [(str(path.relative_to(root)), v[:12]) for v in values if v.encode() in data]
    return leaks


def test_no_planted_secret_is_written_anywhere(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    values = plant(corpus)
    data, out = tmp_path / "data", tmp_path / "run"
    question = f"How much did cloud spending rise in 2026? (my key is {samples()[0][1]})"
    run_research(ResearchRequest(question=question, corpus=[corpus], out=out),
                 Settings(model="test", rounds=2, data_dir=data))
    assert (out / "report.md").is_file()
    assert "settings-dump.md" in (out / "run.jsonl").read_text()  # the env-style file was retrieved, and redacted
    assert scan(out, values + [samples()[0][1]]) == []
    assert scan(data, values) == []
    assert any((data / "memory").rglob("memory.sqlite"))  # the memory store was written and scanned
    assert "[REDACTED:" in (out / "run.jsonl").read_text()
