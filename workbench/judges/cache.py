"""SQLite cache of judge calls, keyed by an explicit hash of NAMED parts.

The key is sha256 over canonical JSON of what determines a reply: backend, model, base-URL host,
template hash, decoding parameters and the input. Retries, timeouts, concurrency and API keys are
refused as key parts (``ValueError``) so they can neither split nor leak into the cache.

Values are the raw response content; ``meta`` holds token counts and the logprob score. Only
successful, parsed replies are stored: errors are never cached. The database runs in WAL mode
with a busy timeout and one connection per thread, so several threads and several processes can
write at once; each ``put`` commits on its own, so a run killed midway keeps every finished call.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORBIDDEN_KEY_PARTS = frozenset(
    {"api_key", "authorization", "timeout", "max_retries", "retries", "concurrency", "organization"}
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_cache (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    meta TEXT,
    created REAL NOT NULL
)
"""


@dataclass(frozen=True)
class CacheEntry:
    """A cached reply: raw ``value`` text and its ``meta`` dict (token counts, score)."""

    value: str
    meta: dict[str, Any]


def cache_key(parts: dict[str, Any]) -> str:
    """sha256 (hex) of canonical JSON of ``parts`` (sorted keys, no spaces).

    Raises ``ValueError`` if a top-level part is named like something that must not change or
    enter the key (api key, timeout, retries, concurrency).
    """
    bad = sorted(k for k in parts if k.lower() in FORBIDDEN_KEY_PARTS)
    if bad:
        raise ValueError(f"cache key parts must not include {bad}")
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class JudgeCache:
    """Thread- and process-safe key/value cache in one SQLite file.

    Args:
        path: database file (parent folders are created).
        busy_timeout: seconds a writer waits for another process's lock before failing.
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._connect()  # create the schema eagerly so a bad path fails here

    key = staticmethod(cache_key)

    def _connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(_SCHEMA)
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def get_entry(self, key: str) -> CacheEntry | None:
        """The cached entry for ``key`` or ``None``."""
        row = self._connect().execute("SELECT value, meta FROM judge_cache WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            meta = json.loads(row[1]) if row[1] else {}
        except json.JSONDecodeError:
            meta = {}
        return CacheEntry(row[0], meta if isinstance(meta, dict) else {})

    def get(self, key: str) -> str | None:
        """The cached raw value for ``key`` or ``None``."""
        entry = self.get_entry(key)
        return None if entry is None else entry.value

    def put(self, key: str, value: str, meta: dict[str, Any] | None = None) -> None:
        """Store ``value`` (raw reply text) and optional ``meta`` under ``key``; commits at once."""
        if not isinstance(value, str):
            raise TypeError(f"cache value must be str, got {type(value).__name__}")
        self._connect().execute(
            "INSERT OR REPLACE INTO judge_cache (key, value, meta, created) VALUES (?, ?, ?, ?)",
            (key, value, json.dumps(meta or {}, sort_keys=True), time.time()),
        )

    def __len__(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0]

    def __contains__(self, key: str) -> bool:
        return self.get_entry(key) is not None

    def close(self) -> None:
        """Close every connection this object opened (in any thread)."""
        with self._lock:
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.ProgrammingError:
                    pass
            self._connections.clear()
        self._local = threading.local()

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
