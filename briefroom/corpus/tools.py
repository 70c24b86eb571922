"""The corpus tools a role calls: `local_search` (hybrid search over the run's scope)
and `read_source` (a whole document), as typed `Tool`s for the generic runner
(`protocol/tools.py`). Their result models are also the shape other tool families
return sources in (web pages, MCP results), so the Searcher collects them one way.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from briefroom.corpus.index import CorpusIndex
from briefroom.errors import EngineeringFailure
from briefroom.protocol.tools import Tool
from briefroom.records import SOURCE_ID

# Output budgets, in tokens of one result shown to a model:
# - local_search: k <= 8 hits of ~400-character chunks with their ids and titles is about
#   1,300-1,800 tokens of JSON, so 2,000 shows a whole result and stops a runaway one.
# - read_source: the role asked for the whole document; 4,000 shows a long report's
#   first pages and the rest stays a read_artifact away.
LOCAL_SEARCH_BUDGET = 2000
READ_SOURCE_BUDGET = 4000

SOURCE_ID_PATTERN = rf"^{SOURCE_ID}$"


class LocalSearchArgs(BaseModel):
    query: str = Field(min_length=2, max_length=400, description="what to look for, in plain words",
                       json_schema_extra={"x-fill": "task"})
    # A few fixed sizes instead of 1..n: an enum survives llama.cpp's grammar, and small
    # models otherwise ask for a single passage.
    k: Literal[4, 6, 8] = Field(default=4, description="how many passages to return")


class SearchHit(BaseModel):
    source_id: str
    chunk_id: str
    title: str
    path: str = ""
    start: int
    end: int
    text: str
    score: float


class LocalSearchResult(BaseModel):
    hits: list[SearchHit]


class ReadSourceArgs(BaseModel):
    source_id: str = Field(pattern=SOURCE_ID_PATTERN, description="id of a source seen in search results",
                           json_schema_extra={"x-fill": "source_id"})


class ReadSourceResult(BaseModel):
    source_id: str
    title: str
    path: str
    text: str


def _search_instead(args: BaseModel, task: str) -> dict:
    """A source that cannot be read: search for what the role was looking for instead."""
    return {"query": (task or getattr(args, "source_id", ""))[:400] or "overview", "k": 4}


def corpus_tools(index: CorpusIndex) -> dict[str, Tool]:
    def local_search(args: BaseModel) -> BaseModel:
        assert isinstance(args, LocalSearchArgs)
        hits = index.search(args.query, args.k)
        return LocalSearchResult(hits=[SearchHit(source_id=h.source_id, chunk_id=h.chunk_id, title=h.title,
                                                 path=h.path, start=h.start, end=h.end, text=h.text, score=h.score)
                                       for h in hits])

    def read_source(args: BaseModel) -> BaseModel:
        assert isinstance(args, ReadSourceArgs)
        doc = index.document(args.source_id)
        if doc is None or args.source_id not in index.scope:
            raise EngineeringFailure(f"no source {args.source_id} in this run's corpus", tool="read_source")
        return ReadSourceResult(source_id=doc.source_id, title=doc.title, path=doc.path, text=doc.text)

    return {
        "local_search": Tool("local_search", "Search the research corpus; returns the most relevant passages.",
                             LocalSearchArgs, LocalSearchResult, local_search, retries=1,
                             output_budget=LOCAL_SEARCH_BUDGET),
        "read_source": Tool("read_source", "Read a whole source document by its id.",
                            ReadSourceArgs, ReadSourceResult, read_source, retries=1, fallback="local_search",
                            fallback_args=_search_instead, output_budget=READ_SOURCE_BUDGET),
    }


