"""MemoryStore: the three zones on SQLite (text, rows) and chromadb (vectors only).

Layout under `<data-dir>/memory/<embedder>/`: `memory.sqlite` (WAL, busy timeout,
secure_delete so deleted text is overwritten) and `chroma/`. chromadb gets ids,
vectors and the namespace fields it must filter on, never the text: its own SQLite
keeps written documents in places a delete does not reach (the `embeddings_queue`
table; chromadb issues #3793 and #7659), so `forget` could not be exact there.

Every query is bounded by the namespace in the store itself: SQL `WHERE`, and one
chromadb collection per (user, session), so a vector read cannot reach another user's
vectors; rows read back are checked against the whole namespace again.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from briefroom import faults
from briefroom.corpus.embeddings import Embedder
from briefroom.files import store_file
from briefroom.memory.namespace import Namespace, Scope
from briefroom.memory.rules import (
    DEFAULT_THRESHOLD,
    FACT_CANDIDATES,
    FACT_THRESHOLD,
    Found,
    MemoryRules,
    StoredFact,
    candidate_facts,
    content_id,
    fact_query,
    fact_relevance,
    fact_version,
    namespace_of,
    skill_recalled,
    terms,
)
from briefroom.memory.zones import FactRow, Recalled
from briefroom.protocol.redaction import redact_text

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
  id TEXT PRIMARY KEY, user TEXT NOT NULL, session TEXT NOT NULL, task TEXT NOT NULL,
  kind TEXT NOT NULL, text TEXT NOT NULL, provenance TEXT NOT NULL, importance REAL NOT NULL,
  created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS memories_ns ON memories(user, session, task);
CREATE TABLE IF NOT EXISTS facts (
  id TEXT PRIMARY KEY, user TEXT NOT NULL, session TEXT NOT NULL, task TEXT NOT NULL,
  entity TEXT NOT NULL, attribute TEXT NOT NULL, value TEXT NOT NULL, unit TEXT NOT NULL, text TEXT NOT NULL,
  source_ids TEXT NOT NULL, confirmed_by TEXT NOT NULL, run_id TEXT NOT NULL, valid_from REAL NOT NULL,
  superseded_by TEXT, status TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS facts_entity ON facts(user, entity, attribute);
CREATE INDEX IF NOT EXISTS facts_ns ON facts(user, session, task);
CREATE TABLE IF NOT EXISTS fact_terms (
  user TEXT NOT NULL, term TEXT NOT NULL, fact_id TEXT NOT NULL, PRIMARY KEY (user, term, fact_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS fact_terms_fact ON fact_terms(fact_id);
CREATE TABLE IF NOT EXISTS term_counts (
  user TEXT NOT NULL, term TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (user, term)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS applied (key TEXT PRIMARY KEY, result TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS skills (
  id TEXT PRIMARY KEY, user TEXT NOT NULL, session TEXT NOT NULL, task TEXT NOT NULL,
  name TEXT NOT NULL, applies_when TEXT NOT NULL, steps TEXT NOT NULL, successes INTEGER NOT NULL,
  failures INTEGER NOT NULL, evaluated_by TEXT NOT NULL, retired INTEGER NOT NULL, created REAL NOT NULL,
  updated REAL NOT NULL);
CREATE INDEX IF NOT EXISTS skills_ns ON skills(user, session, task);
"""
class MemoryStore(MemoryRules):
    """Vector memories, the fact table and the skill library of one data directory."""

    def __init__(self, data_dir: Path, embedder: Embedder, *, now: Any = time.time):
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        self.root = data_dir / "memory" / "".join(c if c.isalnum() or c in "-_." else "_" for c in embedder.name)
        self.root.mkdir(parents=True, exist_ok=True)
        self._embedder = embedder
        self._now = now
        self._lock = threading.RLock()
        with store_file(self.root / "memory.sqlite", "long-term memory"):
            self._db = sqlite3.connect(self.root / "memory.sqlite", check_same_thread=False)
            self._db.row_factory = sqlite3.Row  # rows are read by column name, never by position
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable at checkpoints, no fsync per commit
            self._db.execute("PRAGMA secure_delete=ON")  # deleted text is overwritten, not left in free pages
            self._db.executescript(_SCHEMA)
        with store_file(self.root / "chroma", "long-term memory's vectors"):
            self._client = chromadb.PersistentClient(path=str(self.root / "chroma"),
                                                     settings=ChromaSettings(anonymized_telemetry=False))
        self._collections: dict[str, Any] = {}
        self._pending: dict[str, tuple[list, list, list]] | None = None  # vectors held by transaction()
        self._vectors: dict[str, list[list[float]]] = {}
        self._migrate()

    def _coll(self, user: str, session: str):
        """One chromadb collection per (user, session), for task memories and skills. A
        namespace filter inside one big collection (`where=`) made a read 5-30x slower; a
        partition needs no filter, and a read cannot reach another user's vectors at all."""
        name = f"memories-{content_id(user, session)}"
        coll = self._collections.get(name)
        if coll is None:
            coll = self._collections[name] = self._client.get_or_create_collection(
                name, metadata={"hnsw:space": "cosine"}, embedding_function=None)
        return coll

    def _migrate(self) -> None:
        """Data directories of earlier versions, brought up to date once: (1) facts were
        vectors, now they are found by their terms; (2) skills had a collection of their
        own, now their vector sits beside their task's."""
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version >= 2:
            return
        if not self._db.execute("SELECT EXISTS (SELECT 1 FROM facts) OR EXISTS (SELECT 1 FROM skills)").fetchone()[0]:
            self._db.execute("PRAGMA user_version = 2")  # a new store: nothing to bring up to date
            self._db.commit()
            return
        with self.transaction():
            if version < 1:
                for fact_id, user, entity, text in self._db.execute(
                        "SELECT id, user, entity, text FROM facts WHERE status != 'superseded'").fetchall():
                    self._index_fact(fact_id, user, entity, text)
            for skill_id, user, session, task, applies_when in self._db.execute(
                    "SELECT id, user, session, task, applies_when FROM skills WHERE retired = 0").fetchall():
                self._add_vector(Namespace(user, session, task), skill_id, self.vector_of(applies_when)[0], "skill")
            self._db.execute("PRAGMA user_version = 2")

    def _index_fact(self, fact_id: str, user: str, entity: str, text: str) -> None:
        added = [t for t in terms(f"{entity} {text}") if self._db.execute(
            "INSERT OR IGNORE INTO fact_terms VALUES (?, ?, ?)", (user, t, fact_id)).rowcount]
        self._db.executemany("INSERT INTO term_counts VALUES (?, ?, 1) ON CONFLICT(user, term) DO UPDATE SET "
                             "n = n + 1", [(user, t) for t in added])

    def _unindex_fact(self, fact_id: str) -> None:
        gone = self._db.execute("SELECT user, term FROM fact_terms WHERE fact_id = ?", (fact_id,)).fetchall()
        self._db.executemany("UPDATE term_counts SET n = n - 1 WHERE user = ? AND term = ?", gone)
        self._db.executemany("DELETE FROM term_counts WHERE user = ? AND term = ? AND n <= 0", gone)
        self._db.execute("DELETE FROM fact_terms WHERE fact_id = ?", (fact_id,))

    # --- writes: one transaction, vectors first -------------------------------------
    @contextlib.contextmanager
    def transaction(self):
        """Writes inside the block land together or not at all: SQL is committed once at
        the end, after the vectors it refers to are upserted (one upsert per collection;
        ids are content-derived, so upserting again after a crash changes nothing). A
        vector without its row is never read: every hit is checked against SQLite."""
        with self._lock:
            if self._pending is not None:  # nested: the outer block commits
                yield self
                return
            self._pending = {}
            try:
                yield self
                for name, (ids, vectors, metas) in self._pending.items():
                    self._collections[name].upsert(ids=ids, embeddings=vectors, metadatas=metas)
                faults.reached("memory_commit")
                self._db.commit()
            except BaseException:
                self._db.rollback()
                raise
            finally:
                self._pending = None

    def _add_vector(self, ns: Namespace, item_id: str, vector: list[float], zone: str) -> None:
        coll = self._coll(ns.user, ns.session)
        ids, vectors, metas = self._pending.setdefault(coll.name, ([], [], []))  # type: ignore[union-attr]
        ids.append(item_id)
        vectors.append(vector)
        metas.append({"user": ns.user, "session": ns.session, "task": ns.task, "zone": zone})

    def applied(self, key: str) -> Any:
        """What an idempotent write recorded under `key`, or None if it never landed."""
        with self._lock:
            row = self._db.execute("SELECT result FROM applied WHERE key = ?", (key,)).fetchone()
        return json.loads(row["result"]) if row else None

    def mark_applied(self, key: str, result: Any) -> None:
        """Record `key` inside the current transaction: a rerun of the same step (a resumed
        run) finds it and writes nothing twice."""
        assert self._pending is not None, "mark_applied belongs inside transaction()"
        self._db.execute("INSERT OR REPLACE INTO applied VALUES (?, ?)", (key, json.dumps(result)))

    def _sessions(self, ns: Namespace, scope: Scope, tables: tuple[str, ...]) -> list[str]:
        if scope != "user":
            return [ns.session]
        found: set[str] = set()
        for table in tables:
            found |= {r["session"] for r in self._db.execute(f"SELECT DISTINCT session FROM {table} WHERE user = ?",
                                                     (ns.user,))}
        return sorted(found)

    def _query(self, tables: tuple[str, ...], query: str, ns: Namespace, scope: Scope, n: int) -> list[tuple]:
        """(id, distance, metadata) from every collection the scope covers, nearest first."""
        hits: list[tuple] = []
        vector = None
        for session in self._sessions(ns, scope, tables):
            coll = self._coll(ns.user, session)
            vector = vector or self.vector_of(query)
            # chromadb returns fewer hits when the collection is smaller; no count() round trip
            found = coll.query(query_embeddings=vector, n_results=n, include=["distances", "metadatas"])
            hits += list(zip(found["ids"][0], found["distances"][0], found["metadatas"][0]))
        return sorted(hits, key=lambda h: h[1])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- vector zone ------------------------------------------------------------------
    def put_memory(self, ns: Namespace, kind: str, text: str, provenance: dict, importance: float,
                   key: str | None = None) -> str:
        """Store (or refresh) a memory; the id derives from namespace, kind and text, so
        writing the same memory twice writes one row. `key` is what it is found by when
        that is not the whole text: a past task is found by its question, whose vector
        the run already has from reading memory at its start."""
        text = redact_text(text)
        item_id = "v" + content_id(ns.user, ns.session, kind, text)
        with self.transaction():
            known = self._db.execute("SELECT 1 FROM memories WHERE id = ?", (item_id,)).fetchone() is not None
            if not known:  # a refreshed memory keeps its vector
                self._add_vector(ns, item_id, self.vector_of(redact_text(key) if key else text)[0], "vector")
            self._db.execute("INSERT OR REPLACE INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (item_id, ns.user, ns.session, ns.task, kind, text,
                              json.dumps(provenance, sort_keys=True), importance, self._now()))
        return item_id

    def recall(self, query: str, ns: Namespace, scope: Scope = "user", k: int = 5,
               threshold: float = DEFAULT_THRESHOLD, fact_threshold: float = FACT_THRESHOLD) -> list[Recalled]:
        """Memories similar to `query` (cosine) and facts that match it (`find_facts`)
        within the scope, best first by relevance x recency x importance."""
        with self._lock:
            hits = self._query(("memories",), query, ns, scope, 4 * k)
            out = self.find_facts(query, ns, scope, k, fact_threshold)
            for item_id, distance, meta in hits:
                # skills share the collection; facts of older stores may still have a vector
                if meta.get("zone") != "vector":
                    continue
                similarity = 1.0 - float(distance)
                if similarity < threshold:
                    continue
                row = self._row_for(item_id, "vector", ns, scope)
                if row is not None:
                    out.append(self.scored(item_id, similarity, *row))
        out.sort(key=lambda r: -r.score)
        return out[:k]

    def find_facts(self, query: str, ns: Namespace, scope: Scope = "user", k: int = 5,
                   threshold: float = FACT_THRESHOLD) -> list[Recalled]:
        """Current and competing facts that hold at least `threshold` of the query's
        terms. Exact facts are found by their words and numbers through an inverted index
        in SQLite, not by a vector: writing one costs no embedding.

        Postings are read only for the query's terms that stand in at most FACT_CANDIDATES
        facts (the rarest one at least), and counted here; a word that stands in most facts
        of a large table costs no scan, and is still counted when the few best candidates
        are checked against their text."""
        wanted, need = fact_query(query, threshold)
        if not wanted:
            return []
        with self._lock:
            ids = candidate_facts(
                wanted, need, k,
                lambda words: dict(self._db.execute(
                    f"SELECT term, n FROM term_counts WHERE user = ? AND term IN ({','.join('?' * len(words))})",
                    [ns.user, *words]).fetchall()),
                lambda term: (fact_id for (fact_id,) in self._db.execute(
                    "SELECT fact_id FROM fact_terms WHERE user = ? AND term = ? LIMIT ?",
                    (ns.user, term, FACT_CANDIDATES))))
            out = []
            for fact_id in ids:  # the user is filtered above; _row_for checks the rest
                row = self._row_for(fact_id, "fact", ns, scope)
                if row is None:
                    continue
                relevance = fact_relevance(wanted, row.provenance["entity"], row.text)
                if relevance >= threshold:
                    out.append(self.scored(fact_id, relevance, *row))
        out.sort(key=lambda r: -r.score)
        return out[:k]

    def _row_for(self, item_id: str, zone: str, ns: Namespace, scope: Scope) -> Found | None:
        where, params = ns.sql(scope)
        if zone == "fact":
            row = self._db.execute(f"SELECT text, valid_from, source_ids, confirmed_by, run_id, status, entity, "
                                   f"value, unit, user, session, task FROM facts WHERE id = ? AND {where}",
                                   [item_id, *params]).fetchone()
            if row is None or row["status"] == "superseded":
                return None
            provenance = {"sources": json.loads(row["source_ids"]), "confirmed_by": json.loads(row["confirmed_by"]),
                          "run": row["run_id"], "status": row["status"], "entity": row["entity"],
                          "value": row["value"], "unit": row["unit"], "namespace": namespace_of(row)}
            return Found(row["text"], 1.0, row["valid_from"], provenance, "fact")
        row = self._db.execute(f"SELECT text, importance, created, provenance, user, session, task FROM memories "
                               f"WHERE id = ? AND {where}", [item_id, *params]).fetchone()
        if row is None:
            return None
        provenance = {**json.loads(row["provenance"]), "namespace": namespace_of(row)}
        return Found(row["text"], float(row["importance"]), float(row["created"]), provenance, "vector")

    # --- fact zone --------------------------------------------------------------------
    def put_fact(self, ns: Namespace, row: FactRow) -> tuple[str, str, str]:
        return self.put_facts(ns, [row])[0]

    def put_facts(self, ns: Namespace, rows: list[FactRow]) -> list[tuple[str, str, str]]:
        """Insert, confirm again, supersede or add a competing version, per row: (id, action, reason).

        Same entity and attribute in the user's table: the same value adds provenance to
        the existing row; a new value from a source the old row rests on supersedes it
        (kept as history, no longer found by its terms); a new value from other sources
        is a competing version. One transaction for all rows; no embedding.
        """
        with self.transaction():
            return [self._put_fact_row(ns, row) for row in rows]

    def _put_fact_row(self, ns: Namespace, row: FactRow) -> tuple[str, str, str]:
        rows = self._db.execute("SELECT id, value, unit, source_ids, confirmed_by FROM facts WHERE user = ? AND "
                                "entity = ? AND attribute = ? AND status != 'superseded'",
                                (ns.user, row.entity, row.attribute)).fetchall()
        version = fact_version(ns.user, row, [StoredFact(r["id"], r["value"], r["unit"], tuple(json.loads(r["source_ids"])),
                                                         tuple(json.loads(r["confirmed_by"]))) for r in rows])
        if version.action == "update":
            self._db.execute("UPDATE facts SET source_ids = ?, confirmed_by = ? WHERE id = ?",
                             (json.dumps(list(version.source_ids)), json.dumps(list(version.confirmed_by)),
                              version.fact_id))
            return version.fact_id, version.action, version.reason
        text = redact_text(row.text)
        self._db.execute("INSERT OR REPLACE INTO facts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (version.fact_id, ns.user, ns.session, ns.task, row.entity, row.attribute, row.value,
                          row.unit, text, json.dumps(sorted(row.source_ids)), json.dumps(sorted(set(row.confirmed_by))),
                          row.run_id, self._now(), None, version.status))
        for old_id in version.replaced:
            self._db.execute("UPDATE facts SET status = 'superseded', superseded_by = ? WHERE id = ?",
                             (version.fact_id, old_id))
            self._unindex_fact(old_id)
        self._index_fact(version.fact_id, ns.user, row.entity, text)
        return version.fact_id, version.action, version.reason

    def facts_about(self, entity: str, ns: Namespace, scope: Scope = "user") -> list[dict]:
        """Exact lookup by entity (indexed), history included, newest first."""
        where, params = ns.sql(scope)
        with self._lock:
            rows = self._db.execute(f"SELECT id, entity, attribute, value, unit, text, source_ids, confirmed_by, "
                                    f"run_id, status, superseded_by FROM facts WHERE {where} AND entity = ? "
                                    f"ORDER BY valid_from DESC", [*params, entity]).fetchall()
        return [{"id": r["id"], "entity": r["entity"], "attribute": r["attribute"], "value": r["value"],
                 "unit": r["unit"], "text": r["text"], "source_ids": json.loads(r["source_ids"]),
                 "confirmed_by": json.loads(r["confirmed_by"]), "run": r["run_id"], "status": r["status"],
                 "superseded_by": r["superseded_by"]} for r in rows]

    # --- skill zone -------------------------------------------------------------------
    def put_skill(self, ns: Namespace, name: str, applies_when: str, steps: list[str],
                  evaluated_by: list[str]) -> tuple[str, str]:
        """A skill's vector is the situation it applies to (the run's question), filed in
        the memories collection beside the task memory with the same vector: a skill is
        found when its task is."""
        skill_id = "s" + content_id(ns.user, name, applies_when)
        now = self._now()
        with self.transaction():
            old = self._db.execute("SELECT successes FROM skills WHERE id = ?", (skill_id,)).fetchone()
            if old is not None:  # same name and situation: its vector is already there
                self._db.execute("UPDATE skills SET steps = ?, updated = ? WHERE id = ?",
                                 (json.dumps([redact_text(s) for s in steps]), now, skill_id))
                return skill_id, "update"
            self._add_vector(ns, skill_id, self.vector_of(redact_text(applies_when))[0], "skill")
            self._db.execute("INSERT INTO skills VALUES (?, ?, ?, ?, ?, ?, ?, 1, 0, ?, 0, ?, ?)",
                             (skill_id, ns.user, ns.session, ns.task, redact_text(name), redact_text(applies_when),
                              json.dumps([redact_text(s) for s in steps]), json.dumps(sorted(evaluated_by)),
                              now, now))
        return skill_id, "insert"

    def skills_for(self, query: str, ns: Namespace, scope: Scope = "user", k: int = 2,
                   threshold: float = DEFAULT_THRESHOLD) -> list[Recalled]:
        with self._lock:
            hits = self._query(("memories", "skills"), query, ns, scope, 4 * k)
            where, params = ns.sql(scope)
            out = []
            for skill_id, distance, meta in hits:
                if meta.get("zone") != "skill":
                    continue
                similarity = 1.0 - float(distance)
                row = self._db.execute(f"SELECT name, applies_when, steps, successes, failures, evaluated_by, user, "
                                       f"session, task FROM skills WHERE id = ? AND retired = 0 AND {where}",
                                       [skill_id, *params]).fetchone()
                if row is None or similarity < threshold:
                    continue
                out.append(skill_recalled(skill_id, similarity, row, json.loads(row["steps"]),
                                          json.loads(row["evaluated_by"])))
        out.sort(key=lambda r: -r.score)
        return out[:k]

    def record_use(self, skill_id: str, ns: Namespace, success: bool) -> str:
        """Count a reuse; a skill that keeps failing is retired (never recalled again)."""
        with self.transaction():
            column = "successes" if success else "failures"
            self._db.execute(f"UPDATE skills SET {column} = {column} + 1, updated = ? WHERE id = ? AND user = ?",
                             (self._now(), skill_id, ns.user))
            row = self._db.execute("SELECT successes, failures FROM skills WHERE id = ?", (skill_id,)).fetchone()
            retired = bool(row and self.retires(row["successes"], row["failures"]))
            if retired:
                self._db.execute("UPDATE skills SET retired = 1 WHERE id = ?", (skill_id,))
        return "retired" if retired else ("success" if success else "failure")

    # --- listing, export, forget ------------------------------------------------------
    def items(self, ns: Namespace, scope: Scope = "user", zone: str | None = None) -> list[dict]:
        where, params = ns.sql(scope)
        out: list[dict] = []
        with self._lock:
            if zone in (None, "vector"):
                for r in self._db.execute(f"SELECT id, kind, text, provenance, importance, user, session, task "
                                          f"FROM memories WHERE {where} ORDER BY created", params):
                    out.append({"id": r["id"], "zone": "vector", "kind": r["kind"], "text": r["text"],
                                "provenance": json.loads(r["provenance"]), "importance": r["importance"],
                                "namespace": namespace_of(r)})
            if zone in (None, "fact"):
                for r in self._db.execute(f"SELECT id, entity, attribute, value, unit, text, source_ids, confirmed_by, "
                                          f"run_id, status, superseded_by, user, session, task FROM facts "
                                          f"WHERE {where} ORDER BY valid_from", params):
                    out.append({"id": r["id"], "zone": "fact", "entity": r["entity"], "attribute": r["attribute"],
                                "value": r["value"], "unit": r["unit"], "text": r["text"],
                                "source_ids": json.loads(r["source_ids"]), "confirmed_by": json.loads(r["confirmed_by"]),
                                "run": r["run_id"], "status": r["status"], "superseded_by": r["superseded_by"],
                                "namespace": namespace_of(r)})
            if zone in (None, "skill"):
                for r in self._db.execute(f"SELECT id, name, applies_when, steps, successes, failures, evaluated_by, "
                                          f"retired, user, session, task FROM skills WHERE {where} ORDER BY created",
                                          params):
                    out.append({"id": r["id"], "zone": "skill", "text": r["name"], "applies_when": r["applies_when"],
                                "steps": json.loads(r["steps"]), "successes": r["successes"], "failures": r["failures"],
                                "evaluated_by": json.loads(r["evaluated_by"]), "retired": bool(r["retired"]),
                                "namespace": namespace_of(r)})
        return out

    def forget(self, item_id: str, ns: Namespace, scope: Scope = "user") -> int:
        """Delete an item from every zone (rows, history that points at it, vectors), then
        compact so no plaintext of it stays on disk. Returns how many rows went."""
        where, params = ns.sql(scope)
        with self._lock:
            placed = []  # (session, id) of every row to delete, and its vector if it has one
            for table in ("memories", "facts", "skills"):
                for (session,) in self._db.execute(f"SELECT session FROM {table} WHERE id = ? AND {where}",
                                                   [item_id, *params]).fetchall():
                    placed.append((session, item_id))
            if not placed:
                return 0
            # a superseded row is history of the forgotten fact: it goes too
            placed += [(r["session"], r["id"]) for r in self._db.execute(
                f"SELECT id, session FROM facts WHERE superseded_by = ? AND {where}", [item_id, *params])]
            removed = 0
            for table in ("memories", "facts", "skills"):
                for _, gone in placed:
                    removed += self._db.execute(f"DELETE FROM {table} WHERE id = ? AND {where}",
                                                [gone, *params]).rowcount
            for _, gone in placed:
                self._unindex_fact(gone)
            self._db.commit()
            for session, gone in placed:  # facts of older stores had vectors too
                self._coll(ns.user, session).delete(ids=[gone])
            self.compact()
            return removed

    def compact(self) -> None:
        """Fold the WAL into the database and rebuild it without free pages."""
        with self._lock:
            self._db.commit()
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("VACUUM")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
