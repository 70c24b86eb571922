import pytest

from briefroom.corpus.chunking import chunk_text
from briefroom.corpus.documents import decode_text, load_corpus, source_id_for
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


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF with one line of text, written by hand (no PDF library needed)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def test_pdf_text_is_read(tmp_path):
    (tmp_path / "report.pdf").write_bytes(minimal_pdf("Cloud spending reached 723 billion USD in 2026."))
    (doc,) = load_corpus(tmp_path)
    assert doc.text == "Cloud spending reached 723 billion USD in 2026."


def test_what_is_not_readable_text_is_skipped_with_its_reason_and_the_rest_loads(tmp_path):
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (tmp_path / "empty.pdf").write_bytes(b"")
    (tmp_path / "tool.md").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 8)
    (tmp_path / "blank.txt").write_text("   \n\n")
    (tmp_path / "good.md").write_text("# Good\n\nCloud spending grew 21% in 2026.\n")
    skipped: list = []
    docs = load_corpus(tmp_path, skipped)
    assert [d.title for d in docs] == ["Good"]
    reasons = {s.path.rsplit("/", 1)[1]: s.reason for s in skipped}
    assert set(reasons) == {"broken.pdf", "empty.pdf", "tool.md", "blank.txt"}
    assert reasons["tool.md"].startswith("binary content") and reasons["broken.pdf"].startswith("not a readable PDF")


@pytest.mark.parametrize("encoding", ["gbk", "latin-1", "utf-16"])
def test_text_in_another_encoding_is_decoded_as_what_it_is(tmp_path, encoding):
    text = {"gbk": "截至2025年底，临江省公共充电桩保有量达到48.6万台，同比增长27.4%。",
            "latin-1": "Le café coûte 3,50 € à Zürich; la hausse atteint 12 % en 2025, selon l'étude.",
            "utf-16": "Überblick: Die Nachfrage stieg 2025 um 12 %, sagte die Behörde in Köln."}[encoding]
    if encoding == "latin-1":
        text = text.replace("€", "EUR")  # not in Latin-1
    (tmp_path / "doc.txt").write_bytes(text.encode(encoding))
    (doc,) = load_corpus(tmp_path)
    assert doc.text == text and "\ufffd" not in doc.text


def test_control_characters_never_reach_a_document():
    assert decode_text("a\x00b".encode("utf-16")) == "a\x00b"  # UTF-16 with its BOM is text, not binary
    from briefroom.corpus.documents import normalise_text
    assert normalise_text("Cloud\x07 grew\x1b 21%\ufffd in 2026.\r\nNext") == "Cloud grew 21% in 2026.\nNext"


def test_a_document_with_more_chunks_than_one_store_batch_is_indexed_whole(tmp_path, monkeypatch):
    from briefroom.corpus import chroma as index_module
    from briefroom.corpus.embeddings import make_embedder

    monkeypatch.setattr(index_module, "EMBED_BATCH", 3)  # as a 4 MB file does with chromadb's limit
    (tmp_path / "docs").mkdir()
    paragraphs = [f"Paragraph {i}: the figure for region {i} was {i * 7} units in 2025, the survey said, after a "
                  "long review of the data." * 3 for i in range(12)]
    (tmp_path / "docs" / "long.md").write_text("\n\n".join(paragraphs))
    idx = index_module.ChromaCorpusIndex(tmp_path / "data", make_embedder("local"))  # its own store: count() is its chunks
    stats = idx.sync([tmp_path / "docs"])
    assert stats.embedded_chunks > 6
    assert idx._chunks.count() == stats.embedded_chunks
    assert "77 units" in idx.search("figure for region 11", k=1)[0].text
    idx.close()


def test_chinese_text_is_chunked_at_sentence_ends_by_size():
    from briefroom.corpus.chunking import chunk_text

    text = "".join(f"第{i}句说明充电桩的数量增长了{i}万台。" for i in range(60))
    chunks = chunk_text("S1", text, max_words=40)
    assert len(chunks) > 3  # one unspaced paragraph is not one giant chunk
    assert all(c.text.endswith("。") for c in chunks) and all(text[c.start:c.end] == c.text for c in chunks)


def test_lexical_ranking_finds_chinese_and_exact_names():
    from briefroom.corpus.lexical import LexicalIndex, fuse

    index = LexicalIndex.build([("a", "2025年临江省公共充电桩保有量达到48.6万台。"), ("b", "澜州市地铁日均客运量为386.7万人次。"),
                                ("c", "The Amber Line carried 61,400 riders a day in 2025."),
                                ("d", "The Cobalt Line carried 74,200 riders a day in 2025.")])
    assert index.search("临江省公共充电桩有多少？", 1)[0][0] == "a"
    assert index.search("Amber Line ridership 2025", 1)[0][0] == "c"
    assert fuse([["x", "a", "b"], ["a", "c"]], 2) == ["a", "x"]


def test_a_chinese_question_retrieves_the_chinese_passage_that_answers(tmp_path, data_dir):
    from briefroom.corpus.chroma import ChromaCorpusIndex
    from briefroom.corpus.embeddings import make_embedder

    corpus = tmp_path / "zh"
    corpus.mkdir()
    (corpus / "a.md").write_text("# 通报\n\n截至2025年底，临江省公共充电桩保有量达到48.6万台。\n", encoding="utf-8")
    (corpus / "b.md").write_text("# 菜谱\n\n番茄炒蛋需要三个鸡蛋和两个番茄，炒五分钟。\n", encoding="utf-8")
    (corpus / "c.md").write_text("# 客运\n\n澜州市城市轨道交通日均客运量为386.7万人次。\n", encoding="utf-8")
    index = ChromaCorpusIndex(data_dir, make_embedder("local"))
    index.sync([corpus])
    assert "48.6万台" in index.search("临江省公共充电桩保有量是多少？", k=1)[0].text
    index.close()


def test_a_document_over_the_size_cap_is_skipped_with_the_setting_to_change(tmp_path, monkeypatch):
    (tmp_path / "big.txt").write_text("Cloud spending grew. " * 60_000)  # about 1.2 MB
    (tmp_path / "small.txt").write_text("Cloud spending grew 21% in 2026.")
    monkeypatch.setenv("BRIEFROOM_MAX_DOCUMENT_MB", "1")
    skipped: list = []
    assert [d.text for d in load_corpus(tmp_path, skipped)] == ["Cloud spending grew 21% in 2026."]
    assert "over the 1 MB cap per document (BRIEFROOM_MAX_DOCUMENT_MB)" in skipped[0].reason
    monkeypatch.setenv("BRIEFROOM_MAX_DOCUMENT_MB", "lots")
    with pytest.raises(ConfigError, match="BRIEFROOM_MAX_DOCUMENT_MB must be a number"):
        load_corpus(tmp_path)


def test_indexing_a_large_document_resumes_where_a_kill_stopped_it(tmp_path, data_dir, monkeypatch):
    from briefroom.corpus import chroma as index_module
    from briefroom.corpus.embeddings import make_embedder

    monkeypatch.setattr(index_module, "EMBED_BATCH", 2)
    (tmp_path / "long.md").write_text("\n\n".join(f"Paragraph {i}: region {i} reported {i * 7} units in 2025 "
                                                  f"after a long survey of the data. " * 3 for i in range(16)))

    class Dies:
        """An embedder that is killed after three batches (as a machine would be)."""

        def __init__(self, inner, after):
            self.inner, self.left, self.batches = inner, after, 0
            self.name = inner.name

        def embed(self, texts):
            if self.left == 0:
                raise KeyboardInterrupt
            self.left -= 1
            self.batches += 1
            return self.inner.embed(texts)

    real = make_embedder("local")
    first = index_module.ChromaCorpusIndex(data_dir, Dies(real, 3))
    with pytest.raises(KeyboardInterrupt):
        first.sync([tmp_path])
    first.close()
    again = Dies(real, -1)
    lines: list[str] = []
    second = index_module.ChromaCorpusIndex(data_dir, again)
    stats = second.sync([tmp_path], progress=lines.append)
    (doc,) = load_corpus(tmp_path)
    total = len(chunk_text(doc.source_id, doc.text))
    assert stats.embedded_chunks == total - 3 * 2  # the three stored batches were not embedded again
    assert again.batches == -(-(total - 6) // 2)
    assert "77 units" in second.search("region 11 reported", k=1)[0].text
    second.close()


def test_a_title_taken_from_a_file_name_that_is_not_utf8_is_text_the_index_can_store(tmp_path):
    import os

    from briefroom.corpus.documents import load_document

    raw = os.fsencode(str(tmp_path)) + b"/\x80.md"
    with open(raw, "wb") as f:
        f.write(b"\x05\x05\x05\x80z")
    doc = load_document(tmp_path / os.fsdecode(b"\x80.md"))
    assert doc is not None
    doc.title.encode("utf-8")  # surrogates would raise here, as they did in the index's INSERT
    assert doc.title == "\\x80"
