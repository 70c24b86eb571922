"""bench/source_kinds: the labelled documents scored per split, and the rules' accuracy on
the development split they were written on."""

from pathlib import Path

from bench.source_kinds import LABELS, read_labels, score


def test_each_document_is_scored_against_the_kinds_its_row_accepts(tmp_path: Path):
    corpus = tmp_path / "demo" / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "registry.md").write_text("# Vehicle Registration Authority: fleet statistics\n\nCars on the register.\n",
                                        encoding="utf-8")
    (corpus / "blog.md").write_text("# Opinion: the fleet is bigger\n\nBy my own estimate there are more.\n",
                                    encoding="utf-8")
    (corpus / "recipe.md").write_text("# Lentil soup\n\nRinse the lentils.\n", encoding="utf-8")
    rows = [{"split": "dev", "scenario": "demo", "file": "registry.md", "kinds": "official"},
            {"split": "dev", "scenario": "demo", "file": "blog.md", "kinds": "news|analyst"},
            {"split": "test", "scenario": "demo", "file": "recipe.md", "kinds": "reference"}]
    result = {name: split.as_json() for name, split in score(rows, tmp_path).items()}
    assert (result["dev"]["documents"], result["dev"]["right"], result["dev"]["misleading"]) == (2, 1, 1)
    assert result["dev"]["misses"] == [{"document": "demo/blog.md", "given": "opinion", "rule": "title says opinion",
                                         "accepted": ["news", "analyst"]}]
    assert (result["test"]["right"], result["test"]["misleading"], result["test"]["accuracy"]) == (0, 0, 0.0)


def test_the_rules_give_the_development_documents_the_kinds_they_were_labelled():
    rows = read_labels(LABELS)
    assert {r["split"] for r in rows} == {"dev", "test"}
    dev = score([r for r in rows if r["split"] == "dev"])["dev"]
    assert dev.documents >= 70 and dev.misleading == 0 and dev.right / dev.documents >= 0.95
