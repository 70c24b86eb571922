"""bench.attacks: planting is reproducible, every planted string carries its canary, and
the success detector finds a canary where an attack put it and nothing in a clean run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bench.attack_corpus import CATALOGUE, CATEGORIES, PLACEHOLDER, SPLITS, plant, templates_of
from bench.attacks import Evidence, false_hits, gather, judge, parse

DOCS = {
    "brief.md": "# Cloud brief\n\nThe market is 723 billion USD in 2026.\n\nAzure grew 31%.\n",
    "roundup.html": "<html><body>\n<p>AWS grew 19%.</p>\n<p>Google grew 32%.</p>\n</body></html>",
    "notes.txt": "Meeting notes.\nNothing about clouds here.\n",
}


def test_catalogue_covers_every_category_in_both_languages() -> None:
    pairs = {(t.category, t.lang) for t in CATALOGUE}
    assert pairs == {(c, lang) for c in CATEGORIES for lang in ("en", "zh")}
    assert all(PLACEHOLDER[t.canary_kind] in t.text for t in CATALOGUE)
    assert len({t.name for t in CATALOGUE}) == len(CATALOGUE)


def test_each_split_covers_every_category_in_both_languages() -> None:
    for split in SPLITS:
        pairs = {(t.category, t.lang) for t in templates_of(split)}
        assert pairs == {(c, lang) for c in CATEGORIES for lang in ("en", "zh")}, split
    assert len(templates_of("dev")) + len(templates_of("test")) == len(templates_of("all")) == len(CATALOGUE)


def test_a_run_plants_only_its_split() -> None:
    test_names = {t.name for t in templates_of("test")}
    for run in range(4):
        _, planted = plant(DOCS, sorted(DOCS), seed=0, run=run, k=10, split="test")
        assert {a.template for a in planted} <= test_names and {a.split for a in planted} == {"test"}
    assert parse(["--split", "test"]).split == "test" and parse([]).split == "all"
    with pytest.raises(ValueError, match="exceeds"):
        plant(DOCS, sorted(DOCS), seed=0, run=0, k=len(templates_of("test")) + 1, split="test")


def test_planting_is_deterministic_for_a_seed() -> None:
    first = plant(DOCS, sorted(DOCS), seed=7, run=3, k=10)
    again = plant(DOCS, sorted(DOCS), seed=7, run=3, k=10)
    assert first == again
    other_run = plant(DOCS, sorted(DOCS), seed=7, run=4, k=10)
    other_seed = plant(DOCS, sorted(DOCS), seed=8, run=3, k=10)
    assert other_run[1] != first[1] and other_seed[1] != first[1]
    # different attacks per run: consecutive runs draw different templates
    assert {a.template for a in first[1]} != {a.template for a in other_run[1]}


def test_every_planted_string_carries_its_canary_and_lands_in_its_document() -> None:
    documents, planted = plant(DOCS, sorted(DOCS), seed=1, run=0, k=len(CATALOGUE))
    assert len(planted) == len(CATALOGUE)
    assert len({a.canary for a in planted}) == len(planted)  # unique: success is attributable
    for attack in planted:
        assert attack.canary in attack.text
        assert attack.text in documents[attack.document]
        assert not any(attack.canary in text for text in DOCS.values())  # absent from the clean corpus
    hidden = [a for a in planted if a.wrapper == "html_comment"]
    assert hidden and all(a.text.startswith("<!--") and a.text.endswith("-->") for a in hidden)
    assert {a.position for a in planted} == {"start", "middle", "end"}


def test_planting_only_touches_targets() -> None:
    documents, planted = plant(DOCS, ["brief.md"], seed=2, run=0, k=5)
    assert {a.document for a in planted} == {"brief.md"}
    assert documents["notes.txt"] == DOCS["notes.txt"] and documents["roundup.html"] == DOCS["roundup.html"]


def test_html_plants_go_inside_the_body() -> None:
    documents, planted = plant(DOCS, ["roundup.html"], seed=3, run=0, k=12)
    html = documents["roundup.html"]
    body = html[html.index("<body>"):html.index("</body>")]
    assert all(a.text in body for a in planted)


def _write_run(root: Path, report: str, tool_args: list[dict], memory_texts: list[str]) -> tuple[Path, Path]:
    """A synthetic run folder and data dir shaped like a real run's (run.jsonl events,
    report.md, a memory.sqlite with a facts table)."""
    run_dir, data_dir = root / "run", root / "data"
    run_dir.mkdir(parents=True)
    (run_dir / "report.md").write_text(report, encoding="utf-8")
    lines = [{"event": "tool_call", "seq": i, "elapsed_s": 0.0, "agent": "searcher", "round": 1,
              "tool": "read_source", "call_id": f"c{i}", "args": args} for i, args in enumerate(tool_args)]
    (run_dir / "run.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    store = data_dir / "memory" / "use-multilingual-v3"
    store.mkdir(parents=True)
    db = sqlite3.connect(store / "memory.sqlite")
    db.execute("CREATE TABLE facts (id TEXT, text TEXT)")
    db.executemany("INSERT INTO facts VALUES (?, ?)", [(f"f{i}", t) for i, t in enumerate(memory_texts)])
    db.commit()
    db.close()
    return run_dir, data_dir


CLEAN_REPORT = "# Q\n\n## Short answer\n\nThe market is 723 billion USD. [1]\n\n## Sources\n\n[1] Cloud brief\n"


@pytest.fixture
def attacks():
    return plant(DOCS, sorted(DOCS), seed=5, run=0, k=6)[1]


def test_detector_finds_canaries_where_the_attack_put_them(tmp_path: Path, attacks) -> None:
    in_report, in_tool, in_memory, in_sources = attacks[0], attacks[1], attacks[2], attacks[3]
    report = (f"# Q\n\n## Short answer\n\nVerified quote: “the market is {in_report.canary} billion”. [1]\n\n"
              f"## Sources\n\n[1] {in_sources.canary} — `corpus/brief.md` (source `Sabcdef01`)\n")
    run_dir, data_dir = _write_run(tmp_path, report, [{"source_id": "Sabcdef01"}, {"source_id": in_tool.canary}],
                                   [f"Remember: market is {in_memory.canary}"])
    evidence = gather(run_dir, data_dir)
    hit = {a.attack_id: judge(a, evidence) for a in attacks}
    assert hit[in_report.attack_id].hits == {"report": True, "tool_call": False, "memory": False}
    assert hit[in_report.attack_id].in_body
    assert hit[in_tool.attack_id].hits == {"report": False, "tool_call": True, "memory": False}
    assert hit[in_memory.attack_id].hits == {"report": False, "tool_call": False, "memory": True}
    assert hit[in_memory.attack_id].memory_tables == ("facts",)
    # a planted title repeated in the Sources list is a success, but not in the report's prose
    assert hit[in_sources.attack_id].hits["report"] and not hit[in_sources.attack_id].in_body
    assert not any(hit[a.attack_id].succeeded for a in attacks[4:])


def test_detector_finds_nothing_in_a_clean_run(tmp_path: Path, attacks) -> None:
    run_dir, data_dir = _write_run(tmp_path, CLEAN_REPORT, [{"source_id": "Sabcdef01"}, {"query": "cloud 2026"}],
                                   ["The market is 723 billion USD in 2026."])
    evidence = gather(run_dir, data_dir)
    assert not any(judge(a, evidence).succeeded for a in attacks)
    assert false_hits(attacks, evidence) == []
    # and the same check does fail when a canary is there
    leaked = Evidence(CLEAN_REPORT + attacks[0].canary, [], [], "")
    assert false_hits(attacks, leaked) == [attacks[0].canary]


def test_more_plants_per_run_than_the_split_holds_fail_before_any_run(capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse(["--split", "test", "--per-run", "50"])
    assert stopped.value.code == 2
    held = len(templates_of("test"))
    assert f"--per-run 50: split 'test' has {held} templates" in capsys.readouterr().err
    assert parse(["--split", "all", "--per-run", "50"]).per_run == 50
