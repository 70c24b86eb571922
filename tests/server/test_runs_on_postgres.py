"""A research run with --database-url keeps its checkpoints, long-term memory and corpus index in
PostgreSQL: resumable from any machine that reaches the database, with no password in
run.json."""

from __future__ import annotations

import json

import pytest

from briefroom.config import Settings
from briefroom.corpus.embeddings import make_embedder
from briefroom.errors import ConfigError, FatalBreaker
from briefroom.memory.namespace import Namespace
from briefroom.postgres.memory import PgMemoryStore
from briefroom.run import ResearchRequest, resume_research, run_research

QUESTION = "How big is the 2026 public cloud market and who grows fastest?"


def test_checkpoints_and_memory_live_in_postgres_and_a_resume_needs_the_url(pg_url, small_corpus, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("BRIEFROOM_USER", "pg-run")
    out = tmp_path / "run"
    settings = Settings(model="test", rounds=3, data_dir=tmp_path / "data", database_url=pg_url, max_tokens=3000)
    with pytest.raises(FatalBreaker):  # the budget stops it part way: a checkpoint to resume from
        run_research(ResearchRequest(question=QUESTION, corpus=[small_corpus], out=out), settings)
    assert not (out / "checkpoints.sqlite").exists()
    record = json.loads((out / "run.json").read_text())
    password = pg_url.split(":")[2].split("@")[0]
    assert password not in (out / "run.json").read_text() and record["settings"]["database"].startswith("postgresql://")
    with pytest.raises(ConfigError, match="BRIEFROOM_DATABASE_URL"):
        resume_research(out, {"max_tokens": 200_000})
    monkeypatch.setenv("BRIEFROOM_DATABASE_URL", pg_url)
    result = resume_research(out, {"max_tokens": 200_000})
    assert result.report and (out / "report.md").is_file()
    assert any(e.event == "run_resume" for e in result.events)
    store = PgMemoryStore(pg_url, make_embedder(settings.embedder))
    try:
        rows = store.items(Namespace("pg-run", "default"), scope="user")
    finally:
        store.close()
    assert rows  # what the gates let through went to PostgreSQL, not the data directory
    assert not list((tmp_path / "data").glob("memory/*/memory.sqlite"))
    assert not list((tmp_path / "data").glob("index/*/documents.sqlite"))  # the corpus index is there too
