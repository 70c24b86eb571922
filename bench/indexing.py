"""Indexing at scale: one large document and a corpus of many files.

    .venv/bin/python -m bench.indexing --mb 50 --files 10000

For each: wall time, chunks per second, peak resident memory (of this process, which
indexes in-process like `briefroom index`), and for the large document what a retry
after a kill half-way costs: the share of its chunks embedded again (the kill is an
exception from the embedder after half the batches, as a SIGKILL would leave the
stores). The texts are generated (varied English sentences with figures), so nothing
is fetched.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import tempfile
import time
from pathlib import Path

from briefroom.corpus.chroma import ChromaCorpusIndex
from briefroom.corpus.embeddings import make_embedder

_WORDS = ("cloud spending revenue region market share growth survey figure quarter capacity demand supply "
          "price forecast report agency utility network station project operator output").split()


def sentence(r: random.Random) -> str:
    words = " ".join(r.choice(_WORDS) for _ in range(r.randint(8, 16)))
    return f"The {words} reached {r.randint(1, 999)}.{r.randint(0, 9)} units in {r.randint(2015, 2026)}."


def text_of(size: int, seed: int) -> str:
    r = random.Random(seed)
    parts, total = [], 0
    while total < size:
        paragraph = " ".join(sentence(r) for _ in range(r.randint(3, 7)))
        parts.append(paragraph)
        total += len(paragraph) + 2
    return "\n\n".join(parts)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class KilledHalfway(Exception):
    pass


class Dying:
    """The real embedder, which dies after `batches` batches."""

    def __init__(self, inner, batches: int):
        self.inner, self.left, self.name = inner, batches, inner.name
        self.embedded = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        if self.left == 0:
            raise KilledHalfway
        self.left -= 1
        self.embedded += len(texts)
        return self.inner.embed(texts)


def large_document(mb: float, embedder) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        (folder / "large.md").write_text("# A large report\n\n" + text_of(int(mb * 1024 * 1024), 1))
        data = Path(tmp) / "data"
        from briefroom.corpus import chroma as index_module
        from briefroom.corpus.chunking import chunk_text
        from briefroom.corpus.documents import load_corpus

        (doc,) = load_corpus(folder)
        total = len(chunk_text(doc.source_id, doc.text))
        batches = -(-total // index_module.EMBED_BATCH)
        dying = Dying(embedder, batches // 2)
        started = time.perf_counter()
        try:
            ChromaCorpusIndex(data, dying).sync([folder])
        except KilledHalfway:
            pass
        first = time.perf_counter() - started
        again = Dying(embedder, -1)
        started = time.perf_counter()
        lines: list[str] = []
        stats = ChromaCorpusIndex(data, again).sync([folder], progress=lines.append)
        second = time.perf_counter() - started
        return {"mb": mb, "chunks": total, "killed_after_chunks": dying.embedded,
                "retry_embedded_chunks": stats.embedded_chunks,
                "re_embedded_share": round((dying.embedded + stats.embedded_chunks - total) / total, 4),
                "seconds_total": round(first + second, 1), "chunks_per_s": round(total / (first + second), 1),
                "progress_lines": len(lines), "last_progress": lines[-1] if lines else None,
                "peak_rss_mb": round(peak_rss_mb(), 1)}


def many_files(n: int, embedder) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        for i in range(n):
            (folder / f"note-{i:05d}.md").write_text(f"# Note {i}\n\n" + text_of(1500, 100 + i))
        started = time.perf_counter()
        stats = ChromaCorpusIndex(Path(tmp) / "data", embedder).sync([folder])
        seconds = time.perf_counter() - started
        started = time.perf_counter()
        again = ChromaCorpusIndex(Path(tmp) / "data", embedder).sync([folder])
        return {"files": n, "documents": stats.documents, "chunks": stats.embedded_chunks,
                "seconds": round(seconds, 1), "chunks_per_s": round(stats.embedded_chunks / seconds, 1),
                "second_sync_s": round(time.perf_counter() - started, 1), "second_sync_embedded": again.embedded_chunks,
                "peak_rss_mb": round(peak_rss_mb(), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=50.0, help="size of the large document")
    parser.add_argument("--files", type=int, default=10_000, help="files in the many-files corpus")
    args = parser.parse_args()
    embedder = make_embedder("local")
    out = {"large_document": large_document(args.mb, embedder) if args.mb else None,
           "many_files": many_files(args.files, embedder) if args.files else None}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
