"""sources.json, the file a report's citations resolve through: written with report.md
by the run's finish step, read by the exporters, the run page, eval and `runs show`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from briefroom.errors import ConfigError
from briefroom.records import SourceRecord

SOURCES_FILE = "sources.json"


class WebRetrieval(BaseModel):
    url: str
    retrieved: str  # ISO 8601, UTC


class SourcesFile(BaseModel):
    """sources.json, written with the report: every source the run retrieved, and the ids
    its citations point at (`cited[n - 1]` is the source of `[n]`); for a web page (its
    `path` is its URL), when it was retrieved (`web`)."""

    cited: list[str] = Field(default_factory=list)
    sources: dict[str, SourceRecord] = Field(default_factory=dict)
    web: dict[str, WebRetrieval] = Field(default_factory=dict)

    def source_of(self, n: int) -> str | None:
        """The source id citation `[n]` points at, if the report has an n-th citation."""
        return self.cited[n - 1] if 0 < n <= len(self.cited) else None


def load_sources(run_dir: Path) -> SourcesFile:
    """The run's sources.json; ConfigError if it is missing or not valid."""
    path = run_dir / SOURCES_FILE
    try:
        return SourcesFile.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except ValidationError as exc:
        raise ConfigError(f"{path}: not a valid sources file ({exc.errors()[0]['msg']})") from None
