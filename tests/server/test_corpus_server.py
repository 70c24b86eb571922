"""The corpus index on PostgreSQL (briefroom/postgres/corpus.py): the embedded index's
results, documents shared by processes, no lost rows under concurrent indexing, a
rebuild when the embedder changes, and one clear error when the server is down."""

from __future__ import annotations

import multiprocessing
import socket
from pathlib import Path

import psycopg
import pytest

from briefroom.corpus.chroma import ChromaCorpusIndex
from briefroom.corpus.chunking import chunk_text
from briefroom.corpus.documents import load_corpus
from briefroom.corpus.embeddings import make_embedder
from briefroom.database import public_url
from briefroom.errors import EngineeringFailure
from briefroom.postgres.corpus import CorpusServerUnavailable, PgCorpusIndex, schema_name
from tests.server.fakes import HashEmbedder

ROOT = Path(__file__).resolve().parents[2]
CORPORA = sorted(ROOT.glob("scenarios/*/corpus"))
WRITERS = 3


def _question(corpus: Path) -> str:
    import yaml

    return str(yaml.safe_load((corpus.parent / "scenario.yaml").read_text(encoding="utf-8"))["question"])


def _expected(folders: list[Path]) -> tuple[set[str], set[str]]:
    docs, chunks = set(), set()
    for folder in folders:
        for doc in load_corpus(folder, []):
            docs.add(doc.source_id)
            chunks.update(c.chunk_id for c in chunk_text(doc.source_id, doc.text))
    return docs, chunks


@pytest.mark.parametrize("scenario", ["cloud-market", "zh-rail-ridership"])
def test_same_top_results_as_the_embedded_index(pg_url, tmp_path, scenario):
    corpus = ROOT / "scenarios" / scenario / "corpus"
    embedder = make_embedder("local")  # briefroom's default embedder
    embedded = ChromaCorpusIndex(tmp_path, embedder)
    served = PgCorpusIndex(pg_url, embedder)
    try:
        assert embedded.sync([corpus]).embedded_chunks == served.sync([corpus]).embedded_chunks > 0
        assert served.scope == embedded.scope
        queries = [_question(corpus), "market share growth 2025", "annual report"]
        for query in queries:
            want, got = embedded.search(query, 5), served.search(query, 5)
            assert [h.chunk_id for h in got] == [h.chunk_id for h in want], query
            assert [(h.source_id, h.title, h.path, h.start, h.end, h.text) for h in got] == \
                   [(h.source_id, h.title, h.path, h.start, h.end, h.text) for h in want]
            assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=2e-4)
        sid = embedded.scope[0]
        assert served.document(sid) == embedded.document(sid)
    finally:
        embedded.close()
        served.close()


def _indexer(url: str, shift: int, start, out: str) -> None:
    index = PgCorpusIndex(url, HashEmbedder())
    start.wait(60)
    stats = index.sync(CORPORA[shift:] + CORPORA[:shift])  # each process in another order
    index.close()
    Path(out).write_text(str(stats.embedded_chunks))


def test_three_concurrent_indexing_processes_lose_no_row(pg_url, tmp_path):
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    outs = [tmp_path / f"writer{n}.txt" for n in range(WRITERS)]
    procs = [ctx.Process(target=_indexer, args=(pg_url, n * len(CORPORA) // WRITERS, start, str(outs[n])))
             for n in range(WRITERS)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(300)
    assert [p.exitcode for p in procs] == [0] * WRITERS  # every process finished its sync
    embedded = [int(o.read_text()) for o in outs]
    docs, chunks = _expected(CORPORA)
    schema = schema_name(HashEmbedder().name)
    with psycopg.connect(pg_url) as conn:  # exact lookups by id, from a fresh connection
        found_chunks = {r[0] for r in conn.execute(f"SELECT chunk_id FROM {schema}.chunks")}
        found_docs = {r[0] for r in conn.execute(f"SELECT source_id FROM {schema}.documents")}
        orphans = conn.execute(f"SELECT count(*) FROM {schema}.documents d WHERE NOT EXISTS "
                               f"(SELECT 1 FROM {schema}.chunks c WHERE c.source_id = d.source_id)").fetchone()[0]
    assert chunks - found_chunks == set() and found_chunks == chunks
    assert docs - found_docs == set() and found_docs == docs
    assert orphans == 0  # a document row is written after its chunks
    assert sum(embedded) == len(chunks)  # each chunk embedded by one process: the others found it stored
    # a process that indexed nothing itself reads every document and searches them all
    reader = PgCorpusIndex(pg_url, HashEmbedder())
    try:
        assert reader.counts() == {"documents": len(docs), "chunks": len(chunks)}
        stats = reader.sync(CORPORA)
        assert stats.embedded_chunks == 0 and stats.reused_documents == len(docs)
        assert all(reader.document(sid) is not None for sid in docs)
        needle = ROOT / "scenarios" / "large-corpus-needle" / "corpus"
        reader.sync([needle])
        assert reader.search(_question(needle), 5)
    finally:
        reader.close()


class _HashV2(HashEmbedder):
    version = "2"


class _WideHash(HashEmbedder):
    version = "wide"

    def embed(self, texts):
        return [v + v for v in super().embed(texts)]  # 128 dims


def test_an_embedder_change_rebuilds_the_index_never_mixes_it(pg_url):
    corpus = ROOT / "scenarios" / "cloud-market" / "corpus"
    old = PgCorpusIndex(pg_url, HashEmbedder())
    assert old.rebuilt is None
    first = old.sync([corpus])
    assert first.embedded_chunks > 0

    again = PgCorpusIndex(pg_url, HashEmbedder())  # the same embedder: kept
    assert again.rebuilt is None and again.sync([corpus]).embedded_chunks == 0
    again.close()

    new = PgCorpusIndex(pg_url, _HashV2())
    assert new.rebuilt == "the index was built with hash-test, not hash-test 2"
    assert new.counts() == {"documents": 0, "chunks": 0}
    # the process still holding the old embedder cannot write into the rebuilt index
    with pytest.raises(CorpusServerUnavailable, match="rebuilt for hash-test 2"):
        old.sync([ROOT / "scenarios" / "wind-multipart" / "corpus"])
    assert new.counts() == {"documents": 0, "chunks": 0}
    assert new.sync([corpus]).embedded_chunks == first.embedded_chunks
    old.close()
    new.close()

    wide = PgCorpusIndex(pg_url, _WideHash())  # another vector size under the same name
    assert wide.rebuilt is not None
    assert wide.sync([corpus]).embedded_chunks == first.embedded_chunks
    assert wide.search(_question(corpus), 3)
    wide.close()

    other = PgCorpusIndex(pg_url, make_embedder("minilm"))  # another name: its own schema
    assert other.schema != schema_name(HashEmbedder().name) and other.rebuilt is None
    other.close()
    back = PgCorpusIndex(pg_url, _WideHash())
    assert back.rebuilt is None and back.counts()["chunks"] > 0  # untouched by the other embedder
    back.close()


def test_a_server_that_is_down_is_one_clear_error(pg_url):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://postgres:s3cret-pw@127.0.0.1:{port}/briefroom"
    with pytest.raises(CorpusServerUnavailable) as caught:
        PgCorpusIndex(url, HashEmbedder(), connect_timeout=2)
    message = str(caught.value)
    assert message.startswith(f"the corpus index server at postgresql://postgres@127.0.0.1:{port}/briefroom "
                              "cannot be reached: ")
    assert "s3cret" not in message and "\n" not in message
    assert public_url(url) == f"postgresql://postgres@127.0.0.1:{port}/briefroom"

    # the server goes away during a run: a search and a read fail as index errors, not driver errors
    index = PgCorpusIndex(pg_url, HashEmbedder())
    corpus = ROOT / "scenarios" / "cloud-market" / "corpus"
    index.sync([corpus])
    index.search("cloud market", 3)
    with psycopg.connect(pg_url, autocommit=True) as admin:
        pid = index._conn.info.backend_pid
        assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()[0]
    with pytest.raises(EngineeringFailure, match="index (query|read) failed"):
        index.search("cloud market", 3)
    with pytest.raises(EngineeringFailure, match="index read failed"):
        index.document(index.scope[0])
    with pytest.raises(CorpusServerUnavailable, match="indexing into postgresql://postgres@"):
        index.sync([corpus])
    index.close()
