import pytest

from briefroom.corpus.chunking import chunk_text
from briefroom.corpus.documents import load_corpus, source_id_for
from briefroom.errors import ConfigError


def test_chunks_carry_exact_offsets():
    text = "\n\n".join(f"Paragraph {i}. " + "word " * 50 for i in range(6))
    chunks = chunk_text("S1", text, max_words=120)
    assert len(chunks) > 1
    for c in chunks:
        assert text[c.start:c.end] == c.text
        assert len(c.text.split()) <= 120
    assert [c.chunk_id for c in chunks] == [f"S1:{i}" for i in range(len(chunks))]


def test_long_paragraph_is_split_at_sentences():
    text = " ".join(f"Sentence {i} has several words in it." for i in range(60))
    chunks = chunk_text("S2", text, max_words=50)
    assert len(chunks) >= 5
    assert all(c.text.endswith(".") for c in chunks)


def test_load_corpus_reads_md_txt_html(small_corpus):
    docs = {d.title: d for d in load_corpus(small_corpus)}
    assert set(docs) == {"Cloud market", "Battery notes", "Forecast page"}
    html = docs["Forecast page"]
    assert "680 billion USD" in html.text and "var x" not in html.text
    assert html.path == "notes/page.html"
    assert html.source_id == source_id_for(html.text)


def test_missing_corpus_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="corpus folder not found"):
        load_corpus(tmp_path / "nope")
