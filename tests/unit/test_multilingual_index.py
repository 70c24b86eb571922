"""The embedder switch: `local` is the multilingual encoder, MiniLM stays selectable, and
an index records the embedder that built it and is rebuilt, never mixed, under another."""

from __future__ import annotations

import sqlite3
import zlib

import numpy as np
import pytest

from briefroom.corpus.chroma import ChromaCorpusIndex
from briefroom.corpus.embeddings import MiniLMEmbedder, USEEmbedder, make_embedder
from briefroom.errors import ConfigError


class HashEmbedder:
    """Bag of hashed words: deterministic and fast; `name`/`version` as a real one has."""

    def __init__(self, name: str = "hash", version: str = "1", dims: int = 32):
        self.name, self.version, self.dims, self.calls = name, version, dims, 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += len(texts)
        out = np.zeros((len(texts), self.dims), np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, zlib.crc32(word.encode()) % self.dims] += 1.0
            out[row, 0] += 1e-3
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).tolist()


@pytest.fixture()
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("Cloud spending grew 21% in 2026.\n\nAzure grew fastest.")
    (folder / "b.md").write_text("2025年临江省公共充电桩保有量达到48.6万台。")
    return folder


def test_local_is_the_multilingual_encoder_and_minilm_stays_selectable():
    assert isinstance(make_embedder("local"), USEEmbedder)
    assert isinstance(make_embedder(""), USEEmbedder)
    assert isinstance(make_embedder("use"), USEEmbedder)
    assert isinstance(make_embedder("minilm"), MiniLMEmbedder)
    assert isinstance(make_embedder(MiniLMEmbedder.name), MiniLMEmbedder)
    assert make_embedder("local").version  # the package's version is part of the index's record
    with pytest.raises(ConfigError, match="minilm"):
        make_embedder("word2vec")


def test_the_multilingual_encoder_ranks_the_chinese_answer_first():
    passages = ["2025年临江省新能源汽车销量达到31.7万辆，同比增长41.2%。",
                "东川地铁全年累计运送乘客9.86亿人次。",
                "家常番茄炒蛋：准备两个番茄、三个鸡蛋。"]
    question = "临江省去年卖出了多少辆电动汽车？"
    vectors = np.asarray(make_embedder("local").embed([question, *passages]))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    assert int(np.argmax(vectors[1:] @ vectors[0])) == 0


def test_an_index_is_stamped_with_its_embedder_and_reused_by_the_same_one(tmp_path, docs):
    first = HashEmbedder()
    index = ChromaCorpusIndex(tmp_path / "data", first)
    assert index.rebuilt is None
    assert index.sync([docs]).embedded_chunks > 0
    index.close()
    again = HashEmbedder()
    index = ChromaCorpusIndex(tmp_path / "data", again)
    assert index.rebuilt is None and index.sync([docs]).embedded_chunks == 0 and again.calls == 0
    assert "Azure" in index.search("Azure fastest", k=1)[0].text
    index.close()


def test_an_index_built_by_another_version_is_rebuilt_not_mixed(tmp_path, docs):
    index = ChromaCorpusIndex(tmp_path / "data", HashEmbedder(version="1", dims=32))
    index.sync([docs])
    index.close()
    newer = HashEmbedder(version="2", dims=48)  # same name and directory, other vectors
    index = ChromaCorpusIndex(tmp_path / "data", newer)
    assert index.rebuilt is not None and "hash 1" in index.rebuilt and "hash 2" in index.rebuilt
    stats = index.sync([docs])
    assert stats.reused_documents == 0 and stats.embedded_chunks == newer.calls > 0
    assert index._chunks.count() == stats.embedded_chunks  # nothing of the old vectors is left
    assert "48.6万台" in index.search("临江省公共充电桩保有量", k=1)[0].text  # 48 dims query, 48 dims store
    index.close()


def test_an_index_that_does_not_name_its_embedder_is_rebuilt(tmp_path, docs):
    index = ChromaCorpusIndex(tmp_path / "data", HashEmbedder())
    index.sync([docs])
    root = index.root
    index.close()
    with sqlite3.connect(root / "documents.sqlite") as db:  # as an index from before the record
        db.execute("DELETE FROM meta")
    index = ChromaCorpusIndex(tmp_path / "data", HashEmbedder())
    assert index.rebuilt == "the index does not record the embedder that built it"
    assert index.sync([docs]).reused_documents == 0
    index.close()
    index = ChromaCorpusIndex(tmp_path / "data", HashEmbedder())  # stamped now: kept
    assert index.rebuilt is None
    index.close()
