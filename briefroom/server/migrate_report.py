"""What `briefroom migrate` did (or, in a dry run, would do): counts per table and per run."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Counts(BaseModel):
    copied: int = 0  # written by this migrate
    present: int = 0  # already in the database, the same
    differing: int = 0  # already in the database with other content: the database's row kept
    forgotten: int = 0  # moved by an earlier migrate and forgotten since: not brought back


class MemoryMove(BaseModel):
    directory: str
    embedder: str
    schema_name: str
    dims: int | None = None
    namespaces: int = 0  # distinct (user, session, task) among the rows
    counts: dict[str, Counts] = Field(default_factory=dict)
    re_embedded: int = 0
    differing_ids: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class RunMove(BaseModel):
    run_dir: str
    thread_id: str
    checkpoints: Counts = Field(default_factory=Counts)
    writes: Counts = Field(default_factory=Counts)
    status: str = ""  # the run's status in run.json


class Skipped(BaseModel):
    what: str
    reason: str


class MigrationReport(BaseModel):
    database: str  # the URL without its password
    dry_run: bool = False
    memory: list[MemoryMove] = Field(default_factory=list)
    runs: list[RunMove] = Field(default_factory=list)
    skipped: list[Skipped] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def copied(self) -> int:
        """Everything this migrate wrote (0 on a second run)."""
        return (sum(c.copied for m in self.memory for c in m.counts.values())
                + sum(r.checkpoints.copied + r.writes.copied for r in self.runs))

    def lines(self) -> list[str]:
        """What the CLI prints: one line per memory schema and per run, then what was skipped."""
        verb = "would copy" if self.dry_run else "copied"

        def said(c: Counts) -> str:
            return (f"{c.copied}" + (f" (+{c.present} already there)" if c.present else "")
                    + (f" ({c.differing} differ: the database's kept)" if c.differing else "")
                    + (f" ({c.forgotten} forgotten since the last migrate: not brought back)" if c.forgotten else ""))

        out = [f"{'dry run: ' if self.dry_run else ''}migrating to {self.database}"]
        for m in self.memory:
            out.append(f"memory {m.directory} -> {m.schema_name} ({m.namespaces} namespaces), {verb}: "
                       + ", ".join(f"{kind} {said(c)}" for kind, c in m.counts.items())
                       + (f"; {m.re_embedded} vectors embedded again" if m.re_embedded else ""))
            out += [f"  note: {n}" for n in m.notes]
        for r in self.runs:
            out.append(f"run {r.run_dir} ({r.status}, thread {r.thread_id}), {verb}: checkpoints "
                       f"{said(r.checkpoints)}, writes {said(r.writes)}")
        out += [f"skipped {s.what}: {s.reason}" for s in self.skipped]
        out += [f"note: {n}" for n in self.notes]
        return out
