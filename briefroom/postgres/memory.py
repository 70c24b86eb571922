"""PgMemoryStore: long-term memory (vectors, facts, skills) in PostgreSQL with pgvector.

A `MemoryBackend` (`memory/zones.py`), as `memory/store.py`'s `MemoryStore` is (the gates, the reader and the
CLI call the same methods, with the same ids, actions and results); only the storage
differs:

- One schema per embedder (`mem_<name>`), as the SQLite store has one directory per
  embedder: vectors of different models are never mixed.
- Text lives in `memories`, `facts` and `skills`; vectors live apart, in `vectors`
  (`vector(dims)`, HNSW, cosine), with the namespace columns and the zone. Keeping the
  text out of the table with the HNSW index is what makes `forget` affordable: the text
  tables are rewritten, the index is not rebuilt.
- Every query carries the namespace in its `WHERE` (`_where`), the vector reads too
  (`hnsw.iterative_scan = strict_order`, so a filtered read still returns the k nearest
  of the namespace); rows read back are checked against the namespace again by the join.
- Facts are found by their terms through an inverted index (`fact_terms`, `term_counts`),
  as in SQLite: writing a fact costs no embedding.
- Writes of one user are serialized by a transaction-level advisory lock on the user,
  so concurrent writers (several processes, several machines) neither lose a row nor
  race on "is there already a fact for this entity and attribute".

Forget is exact, and what that costs: PostgreSQL's DELETE only marks a row dead; its
bytes stay in the table's pages (and in index pages) until the page is rewritten, and
the WAL holds the row as it was inserted until a checkpoint removes the segment. So
`forget` deletes, then `compact()` runs `VACUUM FULL` on the text tables (a rewrite into
new files; the old files are unlinked), plain `VACUUM` on `vectors` (dead index entries
and tuples are pruned; the vector is no text), then `pg_switch_wal()` and `CHECKPOINT`
so the WAL segments holding the old row are removed (`wal_recycle=off` on the server
makes that an unlink, not a rename for reuse). The last two need superuser or the
`pg_checkpoint` role and EXECUTE on `pg_switch_wal`; without them `compact()` says so
in its result and an operator must run them. Backups, WAL archives and replicas hold
their own copies: a user who needs a forget to reach those must expire them.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
import time
from typing import Any

from briefroom import faults
from briefroom.corpus.embeddings import Embedder
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

TEXT_TABLES = ("memories", "facts", "skills", "fact_terms", "term_counts")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {s}.memories (
  id text PRIMARY KEY, "user" text NOT NULL, session text NOT NULL, task text NOT NULL,
  kind text NOT NULL, text text NOT NULL, provenance jsonb NOT NULL, importance double precision NOT NULL,
  created double precision NOT NULL);
CREATE INDEX IF NOT EXISTS memories_ns ON {s}.memories ("user", session, task);
CREATE TABLE IF NOT EXISTS {s}.vectors (
  id text PRIMARY KEY, "user" text NOT NULL, session text NOT NULL, task text NOT NULL, zone text NOT NULL,
  embedding vector({dims}) NOT NULL);
CREATE INDEX IF NOT EXISTS vectors_ns ON {s}.vectors ("user", session, task);
CREATE INDEX IF NOT EXISTS vectors_hnsw ON {s}.vectors USING hnsw (embedding vector_cosine_ops);
CREATE TABLE IF NOT EXISTS {s}.facts (
  id text PRIMARY KEY, "user" text NOT NULL, session text NOT NULL, task text NOT NULL,
  entity text NOT NULL, attribute text NOT NULL, value text NOT NULL, unit text NOT NULL, text text NOT NULL,
  source_ids jsonb NOT NULL, confirmed_by jsonb NOT NULL, run_id text NOT NULL, valid_from double precision NOT NULL,
  superseded_by text, status text NOT NULL);
CREATE INDEX IF NOT EXISTS facts_entity ON {s}.facts ("user", entity, attribute);
CREATE INDEX IF NOT EXISTS facts_ns ON {s}.facts ("user", session, task);
CREATE INDEX IF NOT EXISTS facts_superseded ON {s}.facts (superseded_by) WHERE superseded_by IS NOT NULL;
CREATE TABLE IF NOT EXISTS {s}.fact_terms (
  "user" text NOT NULL, term text NOT NULL, fact_id text NOT NULL, PRIMARY KEY ("user", term, fact_id));
CREATE INDEX IF NOT EXISTS fact_terms_fact ON {s}.fact_terms (fact_id);
CREATE TABLE IF NOT EXISTS {s}.term_counts (
  "user" text NOT NULL, term text NOT NULL, n integer NOT NULL, PRIMARY KEY ("user", term));
CREATE TABLE IF NOT EXISTS {s}.applied (key text PRIMARY KEY, result jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.skills (
  id text PRIMARY KEY, "user" text NOT NULL, session text NOT NULL, task text NOT NULL,
  name text NOT NULL, applies_when text NOT NULL, steps jsonb NOT NULL, successes integer NOT NULL,
  failures integer NOT NULL, evaluated_by jsonb NOT NULL, retired boolean NOT NULL, created double precision NOT NULL,
  updated double precision NOT NULL);
CREATE INDEX IF NOT EXISTS skills_ns ON {s}.skills ("user", session, task);
"""


def schema_name(embedder_name: str) -> str:
    """`mem_` + the embedder's name folded to [a-z0-9_], with a hash when folding lost something."""
    folded = re.sub(r"[^a-z0-9_]", "_", embedder_name.lower())[:40]
    if folded != embedder_name:
        folded += "_" + hashlib.sha256(embedder_name.encode()).hexdigest()[:8]
    return "mem_" + folded


def _where(ns: Namespace, scope: Scope, alias: str = "") -> tuple[str, list[str]]:
    """The namespace filter every query carries: user, then session, then task."""
    prefix = f"{alias}." if alias else ""
    fields = ns.fields(scope)
    return " AND ".join(f'{prefix}"{k}" = %s' for k in fields), list(fields.values())


class PgMemoryStore(MemoryRules):
    """Vector memories, the fact table and the skill library of one database."""

    def __init__(self, url: str, embedder: Embedder, *, now: Any = time.time, dims: int | None = None):
        import psycopg
        from pgvector.psycopg import register_vector
        from psycopg.rows import dict_row

        self.url = url
        self.schema = schema_name(embedder.name)
        self._embedder = embedder
        self._now = now
        self._lock = threading.RLock()
        self._depth = 0
        self._vectors: dict[str, list[list[float]]] = {}
        self.last_compaction: dict[str, Any] = {}
        self._conn = psycopg.connect(url, autocommit=True, row_factory=dict_row)
        try:
            self._conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(self._conn)
            # a filtered HNSW read goes on scanning until k rows of the namespace are found
            self._conn.execute("SET hnsw.iterative_scan = strict_order")
            stored = self._stored_dims()
            if stored is not None:  # the tables exist: no DDL, which would wait for other writers' locks
                self.dims = stored
            else:
                self.dims = dims or len(self.vector_of("dimensions")[0])  # embedded outside the lock
                with self._conn.transaction():
                    self._conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('briefroom-memory-schema', 0))")
                    self._conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
                    for statement in _SCHEMA.format(s=self.schema, dims=self.dims).split(";"):
                        if statement.strip():
                            self._conn.execute(statement)  # type: ignore[arg-type]
        except BaseException:
            self._conn.close()
            raise

    def _stored_dims(self) -> int | None:
        row = self._conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
            [f"{self.schema}.vectors"]).fetchone()
        return int(row["atttypmod"]) if row else None

    def _sql(self, query: str, params: Any = None) -> Any:
        return self._conn.execute(query.replace("{s}", self.schema), params)  # type: ignore[arg-type]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # --- writes: one transaction --------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self):
        """Writes inside the block land together or not at all (one PostgreSQL
        transaction; a nested block joins the outer one)."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self
                finally:
                    self._depth -= 1
                return
            self._depth = 1
            try:
                with self._conn.transaction():
                    yield self
                    faults.reached("memory_commit")
            finally:
                self._depth = 0

    def _lock_user(self, user: str) -> None:
        """Writers of one user take turns until their transaction ends (re-entrant)."""
        self._sql("SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))", [f"{self.schema}/{user}"])

    def applied(self, key: str) -> Any:
        with self._lock:
            row = self._sql("SELECT result FROM {s}.applied WHERE key = %s", [key]).fetchone()
        return row["result"] if row else None

    def mark_applied(self, key: str, result: Any) -> None:
        from psycopg.types.json import Jsonb

        assert self._depth, "mark_applied belongs inside transaction()"
        self._sql("INSERT INTO {s}.applied VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET result = EXCLUDED.result",
                  [key, Jsonb(result)])

    def _add_vector(self, ns: Namespace, item_id: str, vector: list[float], zone: str) -> None:
        import numpy as np

        self._sql('INSERT INTO {s}.vectors (id, "user", session, task, zone, embedding) VALUES (%s, %s, %s, %s, %s, %s) '
                  "ON CONFLICT (id) DO NOTHING",
                  [item_id, ns.user, ns.session, ns.task, zone, np.asarray(vector, dtype=np.float32)])

    def _hits(self, table: str, columns: str, zone: str, query: str, ns: Namespace, scope: Scope, n: int,
              extra: str = "") -> list[dict]:
        """The n nearest vectors of `zone` in the scope, joined with their rows (same scope)."""
        import numpy as np

        where, params = _where(ns, scope)
        row_where, row_params = _where(ns, scope, "t")
        vector = np.asarray(self.vector_of(query)[0], dtype=np.float32)
        return self._sql(
            f"SELECT h.id, h.distance, {columns}, t.\"user\", t.session, t.task FROM ("
            f"SELECT id, embedding <=> %(q)s AS distance FROM {{s}}.vectors WHERE zone = %(zone)s AND "
            f"{_named(where, 'w')} ORDER BY embedding <=> %(q)s LIMIT %(n)s) h "
            f"JOIN {{s}}.{table} t ON t.id = h.id AND {_named(row_where, 'r')}{extra} ORDER BY h.distance",
            {"q": vector, "zone": zone, "n": n, **_params(params, "w"), **_params(row_params, "r")}).fetchall()

    # --- vector zone --------------------------------------------------------------------
    def put_memory(self, ns: Namespace, kind: str, text: str, provenance: dict, importance: float,
                   key: str | None = None) -> str:
        from psycopg.types.json import Jsonb

        text = redact_text(text)
        item_id = "v" + content_id(ns.user, ns.session, kind, text)
        with self.transaction():
            self._lock_user(ns.user)
            known = self._sql("SELECT 1 FROM {s}.vectors WHERE id = %s", [item_id]).fetchone() is not None
            if not known:  # a refreshed memory keeps its vector
                self._add_vector(ns, item_id, self.vector_of(redact_text(key) if key else text)[0], "vector")
            self._sql('INSERT INTO {s}.memories VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE '
                      'SET "user" = EXCLUDED."user", session = EXCLUDED.session, task = EXCLUDED.task, '
                      "kind = EXCLUDED.kind, text = EXCLUDED.text, provenance = EXCLUDED.provenance, "
                      "importance = EXCLUDED.importance, created = EXCLUDED.created",
                      [item_id, ns.user, ns.session, ns.task, kind, text, Jsonb(provenance), importance, self._now()])
        return item_id

    def recall(self, query: str, ns: Namespace, scope: Scope = "user", k: int = 5,
               threshold: float = DEFAULT_THRESHOLD, fact_threshold: float = FACT_THRESHOLD) -> list[Recalled]:
        with self._lock:
            hits = self._hits("memories", "t.text, t.importance, t.created, t.provenance", "vector",
                              query, ns, scope, 4 * k)
            out = self.find_facts(query, ns, scope, k, fact_threshold)
            for h in hits:
                similarity = 1.0 - float(h["distance"])
                if similarity < threshold:
                    continue
                provenance = {**h["provenance"], "namespace": namespace_of(h)}
                out.append(self.scored(h["id"], similarity, h["text"], float(h["importance"]), float(h["created"]),
                                        provenance, "vector"))
        out.sort(key=lambda r: -r.score)
        return out[:k]

    def find_facts(self, query: str, ns: Namespace, scope: Scope = "user", k: int = 5,
                   threshold: float = FACT_THRESHOLD) -> list[Recalled]:
        """Current and competing facts holding at least `threshold` of the query's terms
        (the same inverted index and candidate limit as the SQLite store)."""
        wanted, need = fact_query(query, threshold)
        if not wanted:
            return []
        with self._lock:
            ids = candidate_facts(
                wanted, need, k,
                lambda words: {r["term"]: r["n"] for r in self._sql(
                    'SELECT term, n FROM {s}.term_counts WHERE "user" = %s AND term = ANY(%s)', [ns.user, words])},
                lambda term: (r["fact_id"] for r in self._sql(
                    'SELECT fact_id FROM {s}.fact_terms WHERE "user" = %s AND term = %s LIMIT %s',
                    [ns.user, term, FACT_CANDIDATES])))
            out = []
            for found in self._fact_rows(ids, ns, scope):
                relevance = fact_relevance(wanted, found.provenance["entity"], found.text)
                if relevance >= threshold:
                    out.append(self.scored(found.provenance["id"], relevance, found.text, found.importance,
                                           found.created, {k: v for k, v in found.provenance.items() if k != "id"},
                                           "fact"))
        out.sort(key=lambda r: -r.score)
        return out[:k]

    def _fact_rows(self, ids: list[str], ns: Namespace, scope: Scope) -> list[Found]:
        if not ids:
            return []
        where, params = _where(ns, scope)
        rows = self._sql(f"SELECT id, text, valid_from, source_ids, confirmed_by, run_id, status, entity, value, unit, "
                         f'"user", session, task FROM {{s}}.facts WHERE id = ANY(%s) AND {where} '
                         "AND status != 'superseded'", [ids, *params]).fetchall()
        order = {fact_id: i for i, fact_id in enumerate(ids)}
        rows.sort(key=lambda r: order[r["id"]])
        return [Found(r["text"], 1.0, r["valid_from"],
                       {"id": r["id"], "sources": r["source_ids"], "confirmed_by": r["confirmed_by"], "run": r["run_id"],
                        "status": r["status"], "entity": r["entity"], "value": r["value"], "unit": r["unit"],
                        "namespace": namespace_of(r)}, "fact") for r in rows]

    # --- fact zone ----------------------------------------------------------------------
    def put_fact(self, ns: Namespace, row: FactRow) -> tuple[str, str, str]:
        return self.put_facts(ns, [row])[0]

    def put_facts(self, ns: Namespace, rows: list[FactRow]) -> list[tuple[str, str, str]]:
        """Insert, confirm again, supersede or add a competing version, per row (the rules
        of `MemoryStore.put_facts`); one transaction, the user's writers wait their turn."""
        with self.transaction():
            self._lock_user(ns.user)
            return [self._put_fact_row(ns, row) for row in rows]

    def _put_fact_row(self, ns: Namespace, row: FactRow) -> tuple[str, str, str]:
        from psycopg.types.json import Jsonb

        rows = self._sql('SELECT id, value, unit, source_ids, confirmed_by FROM {s}.facts WHERE "user" = %s AND '
                         "entity = %s AND attribute = %s AND status != 'superseded' ORDER BY id",
                         [ns.user, row.entity, row.attribute]).fetchall()
        version = fact_version(ns.user, row, [StoredFact(r["id"], r["value"], r["unit"], tuple(r["source_ids"]),
                                                         tuple(r["confirmed_by"])) for r in rows])
        if version.action == "update":
            self._sql("UPDATE {s}.facts SET source_ids = %s, confirmed_by = %s WHERE id = %s",
                      [Jsonb(list(version.source_ids)), Jsonb(list(version.confirmed_by)), version.fact_id])
            return version.fact_id, version.action, version.reason
        text = redact_text(row.text)
        values = [version.fact_id, ns.user, ns.session, ns.task, row.entity, row.attribute, row.value, row.unit, text,
                  Jsonb(sorted(row.source_ids)), Jsonb(sorted(set(row.confirmed_by))), row.run_id, self._now(), None,
                  version.status]
        columns = ('id, "user", session, task, entity, attribute, value, unit, text, source_ids, confirmed_by, run_id, '
                   "valid_from, superseded_by, status")
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns.split(", ")[1:])
        self._sql(f"INSERT INTO {{s}}.facts ({columns}) VALUES ({', '.join(['%s'] * 15)}) "
                  f"ON CONFLICT (id) DO UPDATE SET {updates}", values)
        for old_id in version.replaced:
            self._sql("UPDATE {s}.facts SET status = 'superseded', superseded_by = %s WHERE id = %s",
                      [version.fact_id, old_id])
            self._unindex_fact(old_id)
        self._index_fact(version.fact_id, ns.user, row.entity, text)
        return version.fact_id, version.action, version.reason

    def _index_fact(self, fact_id: str, user: str, entity: str, text: str) -> None:
        self._sql('WITH added AS (INSERT INTO {s}.fact_terms SELECT %(u)s, t, %(f)s FROM unnest(%(t)s::text[]) t '
                  "ON CONFLICT DO NOTHING RETURNING term) "
                  'INSERT INTO {s}.term_counts AS c SELECT %(u)s, term, 1 FROM added ORDER BY term '
                  'ON CONFLICT ("user", term) DO UPDATE SET n = c.n + 1',
                  {"u": user, "f": fact_id, "t": sorted(terms(f"{entity} {text}"))})

    def _unindex_fact(self, fact_id: str) -> None:
        gone = self._sql('DELETE FROM {s}.fact_terms WHERE fact_id = %s RETURNING "user", term', [fact_id]).fetchall()
        for user in sorted({g["user"] for g in gone}):
            words = sorted(g["term"] for g in gone if g["user"] == user)
            self._sql('UPDATE {s}.term_counts SET n = n - 1 WHERE "user" = %s AND term = ANY(%s)', [user, words])
            self._sql('DELETE FROM {s}.term_counts WHERE "user" = %s AND term = ANY(%s) AND n <= 0', [user, words])

    def facts_about(self, entity: str, ns: Namespace, scope: Scope = "user") -> list[dict]:
        """Exact lookup by entity (indexed), history included, newest first."""
        where, params = _where(ns, scope)
        with self._lock:
            rows = self._sql(f"SELECT id, entity, attribute, value, unit, text, source_ids, confirmed_by, run_id, "
                             f"status, superseded_by FROM {{s}}.facts WHERE {where} AND entity = %s "
                             f"ORDER BY valid_from DESC", [*params, entity]).fetchall()
        return [{"id": r["id"], "entity": r["entity"], "attribute": r["attribute"], "value": r["value"],
                 "unit": r["unit"], "text": r["text"], "source_ids": r["source_ids"], "confirmed_by": r["confirmed_by"],
                 "run": r["run_id"], "status": r["status"], "superseded_by": r["superseded_by"]} for r in rows]

    # --- skill zone ---------------------------------------------------------------------
    def put_skill(self, ns: Namespace, name: str, applies_when: str, steps: list[str],
                  evaluated_by: list[str]) -> tuple[str, str]:
        from psycopg.types.json import Jsonb

        skill_id = "s" + content_id(ns.user, name, applies_when)
        now = self._now()
        clean = [redact_text(s) for s in steps]
        with self.transaction():
            self._lock_user(ns.user)
            if self._sql("SELECT 1 FROM {s}.skills WHERE id = %s", [skill_id]).fetchone() is not None:
                self._sql("UPDATE {s}.skills SET steps = %s, updated = %s WHERE id = %s", [Jsonb(clean), now, skill_id])
                return skill_id, "update"
            self._add_vector(ns, skill_id, self.vector_of(redact_text(applies_when))[0], "skill")
            self._sql("INSERT INTO {s}.skills VALUES (%s, %s, %s, %s, %s, %s, %s, 1, 0, %s, false, %s, %s)",
                      [skill_id, ns.user, ns.session, ns.task, redact_text(name), redact_text(applies_when),
                       Jsonb(clean), Jsonb(sorted(evaluated_by)), now, now])
        return skill_id, "insert"

    def skills_for(self, query: str, ns: Namespace, scope: Scope = "user", k: int = 2,
                   threshold: float = DEFAULT_THRESHOLD) -> list[Recalled]:
        with self._lock:
            hits = self._hits("skills", "t.name, t.applies_when, t.steps, t.successes, t.failures, t.evaluated_by",
                              "skill", query, ns, scope, 4 * k, extra=" AND NOT t.retired")
        out = []
        for h in hits:
            similarity = 1.0 - float(h["distance"])
            if similarity < threshold:
                continue
            out.append(skill_recalled(h["id"], similarity, h, h["steps"], h["evaluated_by"]))
        out.sort(key=lambda r: -r.score)
        return out[:k]

    def record_use(self, skill_id: str, ns: Namespace, success: bool) -> str:
        column = "successes" if success else "failures"
        with self.transaction():
            self._lock_user(ns.user)
            row = self._sql(f'UPDATE {{s}}.skills SET {column} = {column} + 1, updated = %s WHERE id = %s AND "user" = %s '
                            "RETURNING successes, failures", [self._now(), skill_id, ns.user]).fetchone()
            retired = bool(row and self.retires(row["successes"], row["failures"]))
            if retired:
                self._sql("UPDATE {s}.skills SET retired = true WHERE id = %s", [skill_id])
        return "retired" if retired else ("success" if success else "failure")

    # --- listing, forget ----------------------------------------------------------------
    def items(self, ns: Namespace, scope: Scope = "user", zone: str | None = None) -> list[dict]:
        where, params = _where(ns, scope)
        out: list[dict] = []
        with self._lock:
            if zone in (None, "vector"):
                for r in self._sql(f'SELECT id, kind, text, provenance, importance, "user", session, task '
                                   f"FROM {{s}}.memories WHERE {where} ORDER BY created, id", params):
                    out.append({"id": r["id"], "zone": "vector", "kind": r["kind"], "text": r["text"],
                                "provenance": r["provenance"], "importance": r["importance"],
                                "namespace": namespace_of(r)})
            if zone in (None, "fact"):
                for r in self._sql(f"SELECT id, entity, attribute, value, unit, text, source_ids, confirmed_by, run_id, "
                                   f'status, superseded_by, "user", session, task FROM {{s}}.facts WHERE {where} '
                                   f"ORDER BY valid_from, id", params):
                    out.append({"id": r["id"], "zone": "fact", "entity": r["entity"], "attribute": r["attribute"],
                                "value": r["value"], "unit": r["unit"], "text": r["text"],
                                "source_ids": r["source_ids"], "confirmed_by": r["confirmed_by"], "run": r["run_id"],
                                "status": r["status"], "superseded_by": r["superseded_by"],
                                "namespace": namespace_of(r)})
            if zone in (None, "skill"):
                for r in self._sql(f"SELECT id, name, applies_when, steps, successes, failures, evaluated_by, retired, "
                                   f'"user", session, task FROM {{s}}.skills WHERE {where} ORDER BY created, id',
                                   params):
                    out.append({"id": r["id"], "zone": "skill", "text": r["name"], "applies_when": r["applies_when"],
                                "steps": r["steps"], "successes": r["successes"], "failures": r["failures"],
                                "evaluated_by": r["evaluated_by"], "retired": bool(r["retired"]),
                                "namespace": namespace_of(r)})
        return out

    def forget(self, item_id: str, ns: Namespace, scope: Scope = "user") -> int:
        """Delete an item from every zone (its row, the history that points at it, its
        vector and its terms), then `compact()` so no plaintext of it stays on disk.
        Returns how many rows went (vectors and terms not counted, as in SQLite)."""
        where, params = _where(ns, scope)
        with self._lock:
            with self.transaction():
                self._lock_user(ns.user)
                gone = [item_id] if any(self._sql(f"SELECT 1 FROM {{s}}.{t} WHERE id = %s AND {where}",
                                                  [item_id, *params]).fetchone()
                                        for t in ("memories", "facts", "skills")) else []
                if not gone:
                    return 0
                gone += [r["id"] for r in self._sql(f"SELECT id FROM {{s}}.facts WHERE superseded_by = %s AND {where}",
                                                    [item_id, *params])]
                removed = 0
                for table in ("memories", "facts", "skills"):
                    removed += self._sql(f"DELETE FROM {{s}}.{table} WHERE id = ANY(%s) AND {where}",
                                         [gone, *params]).rowcount
                self._sql(f"DELETE FROM {{s}}.vectors WHERE id = ANY(%s) AND {where}", [gone, *params])
                for fact_id in gone:
                    self._unindex_fact(fact_id)
            self.last_compaction = self.compact()
            return removed

    def compact(self) -> dict[str, Any]:
        """Rewrite the text tables (VACUUM FULL), prune the vectors (VACUUM), and have the
        WAL that held deleted rows removed (pg_switch_wal, CHECKPOINT). Returns what was
        done; `wal` is False when the role may not do the last step (see the module doc)."""
        import psycopg

        done: dict[str, Any] = {"tables": [], "wal": False}
        with self._lock:
            assert not self._depth, "compact() cannot run inside a transaction"
            self._sql("VACUUM (FULL) " + ", ".join(f"{{s}}.{t}" for t in TEXT_TABLES))
            done["tables"] = list(TEXT_TABLES)
            self._sql("VACUUM {s}.vectors")
            try:
                self._sql("SELECT pg_switch_wal()")
                self._sql("CHECKPOINT")
                done["wal"] = True
            except psycopg.errors.InsufficientPrivilege as e:
                done["wal_error"] = str(e).strip()
        return done


def _named(where: str, tag: str) -> str:
    """`a = %s AND b = %s` with named placeholders %(tag0)s, %(tag1)s (one query, two filters)."""
    parts = where.split("%s")
    return "".join(f"{p}%({tag}{i})s" for i, p in enumerate(parts[:-1])) + parts[-1]


def _params(values: list[str], tag: str) -> dict[str, str]:
    return {f"{tag}{i}": v for i, v in enumerate(values)}

