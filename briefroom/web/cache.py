"""Fetched pages in the data directory: `web/cache.sqlite`.

A page row holds the URL, the validators the server gave (ETag, Last-Modified), when it
was fetched or last confirmed, and its extracted text (already redacted: no secret a
page held reaches the data directory). The next fetch of the URL is conditional
(If-None-Match / If-Modified-Since); a 304 reuses the text and refreshes the time.
`retrievals` maps each web source id to its URL and the time it was retrieved: what the
report's Sources list and sources.json show.

URLs are stored redacted too (a token in a query string is a secret like any other).
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from briefroom.files import store_file
from briefroom.protocol.redaction import redact_text


@dataclass(frozen=True)
class CachedPage:
    url: str
    final_url: str
    etag: str | None
    last_modified: str | None
    fetched_at: str  # ISO 8601, UTC, seconds
    content_type: str
    title: str
    text: str
    source_id: str
    truncated: bool


@dataclass(frozen=True)
class Retrieval:
    source_id: str
    url: str
    retrieved: str  # ISO 8601, UTC


class WebCache:
    def __init__(self, data_dir: Path):
        root = data_dir / "web"
        root.mkdir(parents=True, exist_ok=True)
        self.path = root / "cache.sqlite"
        self._lock = threading.Lock()
        with store_file(self.path, "the web page cache"):
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.execute("PRAGMA secure_delete=ON")
            self._db.execute("CREATE TABLE IF NOT EXISTS pages (url TEXT PRIMARY KEY, final_url TEXT, etag TEXT, "
                             "last_modified TEXT, fetched_at TEXT, content_type TEXT, title TEXT, text TEXT, "
                             "source_id TEXT, truncated INTEGER)")
            self._db.execute("CREATE TABLE IF NOT EXISTS retrievals (source_id TEXT PRIMARY KEY, url TEXT, "
                             "retrieved TEXT)")
            self._db.commit()

    def close(self) -> None:
        self._db.close()

    def get(self, url: str) -> CachedPage | None:
        with self._lock:
            row = self._db.execute("SELECT url, final_url, etag, last_modified, fetched_at, content_type, title, "
                                   "text, source_id, truncated FROM pages WHERE url = ?", (redact_text(url),)).fetchone()
        if row is None:
            return None
        url, final_url, etag, last_modified, fetched_at, content_type, title, text, source_id, truncated = row
        return CachedPage(url=url, final_url=final_url, etag=etag, last_modified=last_modified, fetched_at=fetched_at,
                          content_type=content_type, title=title, text=text, source_id=source_id,
                          truncated=bool(truncated))

    def put(self, page: CachedPage) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO pages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (redact_text(page.url), redact_text(page.final_url), page.etag, page.last_modified,
                              page.fetched_at, page.content_type, redact_text(page.title), redact_text(page.text),
                              page.source_id, int(page.truncated)))
            self._db.execute("INSERT OR REPLACE INTO retrievals VALUES (?, ?, ?)",
                             (page.source_id, redact_text(page.final_url), page.fetched_at))
            self._db.commit()

    def retrievals(self, source_ids: list[str]) -> dict[str, Retrieval]:
        """URL and retrieval time of each id that is a fetched page (others are left out)."""
        out: dict[str, Retrieval] = {}
        with self._lock:
            for sid in source_ids:
                row = self._db.execute("SELECT source_id, url, retrieved FROM retrievals WHERE source_id = ?",
                                       (sid,)).fetchone()
                if row:
                    out[sid] = Retrieval(*row)
        return out
