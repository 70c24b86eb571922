"""Files that are not text among good ones: skipped and reported, never cited or remembered."""

from __future__ import annotations

import json

from briefroom.config import Settings
from briefroom.run import ResearchRequest, run_research


def test_binary_and_broken_files_are_skipped_and_the_run_answers_from_the_rest(tmp_path, data_dir):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "notes.md").write_text("# Cloud notes\n\nPublic cloud spending grew 21% in 2026, the survey said.\n")
    (corpus / "latin1.txt").write_bytes("Le marché du cloud a progressé de 19 % en 2026, selon l'étude.".encode("latin-1"))
    (corpus / "program.md").write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 64 + b"Cloud spending grew" + b"\x00" * 64)
    (corpus / "scan.pdf").write_bytes(b"%PDF-1.7 truncated")
    out = tmp_path / "run"
    run_research(ResearchRequest(question="How fast did public cloud spending grow in 2026?", corpus=[corpus], out=out),
                 Settings(model="test", rounds=1, data_dir=data_dir))
    events = [json.loads(line) for line in (out / "run.jsonl").read_text().splitlines()]
    index = next(e for e in events if e["event"] == "index")
    assert index["documents"] == 2
    assert {s["path"].rsplit("/", 1)[1] for s in index["skipped"]} == {"program.md", "scan.pdf"}
    report = (out / "report.md").read_bytes()
    assert b"\x00" not in report and "\ufffd".encode() not in report
    assert "program.md" not in report.decode() and "scan.pdf" not in report.decode()
    memory = b"".join(p.read_bytes() for p in (data_dir / "memory").rglob("*.sqlite"))
    assert b"ELF" not in memory and "\ufffd".encode() not in memory
