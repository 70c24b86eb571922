"""Files that are not text among good ones: skipped and reported, never cited or remembered."""

from __future__ import annotations

from briefroom.config import Settings
from briefroom.events import Index, read_events
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
    index = next(e for e in read_events(out / "run.jsonl") if isinstance(e, Index))
    assert index.documents == 2
    assert {s.path.rsplit("/", 1)[1] for s in index.skipped} == {"program.md", "scan.pdf"}
    report = (out / "report.md").read_bytes()
    assert b"\x00" not in report and "\ufffd".encode() not in report
    assert "program.md" not in report.decode() and "scan.pdf" not in report.decode()
    memory = b"".join(p.read_bytes() for p in (data_dir / "memory").rglob("*.sqlite"))
    assert b"ELF" not in memory and "\ufffd".encode() not in memory


def test_passages_with_nothing_usable_end_in_a_no_evidence_report_not_an_error(tmp_path, data_dir):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\\n\\nCloud grew 21% in 2026.")  # one heading line, literally
    out = tmp_path / "run"
    result = run_research(ResearchRequest(question="How fast did cloud spending grow in 2026?", corpus=[corpus],
                                          out=out), Settings(model="test", rounds=1, data_dir=data_dir))
    assert result.report is not None and result.report.startswith("# No verified answer")


# --- fuzz: random corpora and questions -------------------------------------------------

import os  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from briefroom.errors import ConfigError  # noqa: E402

_SENTENCES = ["Cloud spending grew 21% in 2026, the survey said.", "云计算支出在2026年增长了21%。",
              "Le marché a progressé de 19 % en 2026.", "Revenue was 4.2 billion USD in 2025."]
_names = st.one_of(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
                           min_size=1, max_size=12),
                   st.binary(min_size=1, max_size=12).map(lambda b: b.replace(b"/", b"_").replace(b"\x00", b"_")))
_bodies = st.one_of(
    st.binary(max_size=3000),  # random bytes
    st.tuples(st.lists(st.sampled_from(_SENTENCES), min_size=1, max_size=6),
              st.sampled_from(["utf-8", "utf-16", "gb18030", "latin-1"])).map(
        lambda t: " ".join(t[0]).encode(t[1], errors="replace")),
    st.text(max_size=2000).map(lambda s: s.encode("utf-8", "surrogatepass")),
)
_files = st.lists(st.tuples(_names, st.sampled_from([".md", ".txt", ".html", ".pdf", ".bin"]), _bodies),
                  min_size=1, max_size=5)
_questions = st.one_of(st.sampled_from(["How fast did cloud spending grow in 2026?", "云计算支出增长了多少？"]),
                       st.text(min_size=1, max_size=300))


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(files=_files, question=_questions)
def test_any_corpus_and_question_end_in_a_report_or_one_clear_error(tmp_path_factory, files, question):
    root = tmp_path_factory.mktemp("fuzz")
    corpus = root / "corpus"
    corpus.mkdir()
    for n, (name, suffix, body) in enumerate(files):
        raw = name if isinstance(name, bytes) else name.encode("utf-8", "surrogateescape")
        target = os.fsencode(corpus) + b"/" + str(n).encode() + raw.replace(b".", b"_") + suffix.encode()
        with open(target, "wb") as fh:
            fh.write(body)
    out, data = root / "run", root / "data"
    try:
        run_research(ResearchRequest(question=question, corpus=[corpus], out=out),
                     Settings(model="test", rounds=1, data_dir=data))
    except ConfigError as exc:  # a clear, one-line error for a user's input is a correct result
        assert str(exc) and "\n" not in str(exc).strip()
        return
    report = (out / "report.md").read_text(encoding="utf-8")
    assert not any(ch in report for ch in "\x00\ufffd"), report[:500]
    assert read_events(out / "run.jsonl")  # the log is readable afterwards: every line an event
    stored = b"".join(p.read_bytes() for p in (data / "memory").rglob("memory.sqlite"))
    assert "\ufffd".encode() not in stored
