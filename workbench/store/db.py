"""Opening the label store: one SQLite file, WAL mode, a busy timeout, foreign keys on.

Open one connection per action (a CLI command, a Streamlit button press) with ``open_db`` and
pass it to the store functions; never share one connection across threads. Writes run inside
``write_tx`` (``BEGIN IMMEDIATE``), so two writers queue on the busy timeout instead of failing
with "database is locked" when a read transaction would have to be upgraded.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import sqlite_utils

BUSY_TIMEOUT_MS = 10_000


class StoreError(ValueError):
    """A request the store refuses (bad input, a database newer than this code).

    ``problems`` lists ``(row_index, message)`` pairs, 0-based in the input given, when the error
    is about several input rows; it is empty for a single-cause error.
    """

    def __init__(self, message: str, problems: list[tuple[int, str]] | None = None) -> None:
        super().__init__(message)
        self.problems: list[tuple[int, str]] = list(problems or [])


class LabelError(StoreError):
    """One or more labels failed validation; nothing was written. ``problems`` lists every bad row."""


class StoreNotFoundError(StoreError):
    """A command that reads a store was given a path with no store at it."""


def resolve_db_path(path: str | Path | None = None) -> Path:
    """The store file ``path`` names (``None``: ``WORKBENCH_DB`` or ``labels/workbench.db``)."""
    if path is None:
        from workbench.config import default_db_path

        path = default_db_path()
    return Path(path).expanduser()


def require_store(path: str | Path | None = None) -> Path:
    """The resolved store path, or ``StoreNotFoundError`` when no file is there.

    For every command that reads a store: a mistyped ``--db`` must not silently create an empty
    store and report nothing.
    """
    resolved = resolve_db_path(path)
    if not resolved.is_file():
        raise StoreNotFoundError(
            f"no label store at {resolved} (check --db / WORKBENCH_DB; "
            f"create one with `workbench labels add EVALSET --db {resolved}`)"
        )
    return resolved


def now_iso() -> str:
    """The current UTC time as ISO 8601 with microseconds, e.g. ``2025-01-31T09:15:02.123456+00:00``."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def open_db(path: str | Path | None = None, *, create: bool = True) -> sqlite_utils.Database:
    """Open (creating if needed) the label store at ``path`` and bring its schema up to date.

    Args:
        path: the SQLite file; ``None`` means ``workbench.config.default_db_path()``
            (``WORKBENCH_DB`` or ``labels/workbench.db``). The parent folder is created.
        create: with ``False``, a missing file raises ``StoreNotFoundError`` instead of being
            created (commands that only read a store).

    Returns:
        A ``sqlite_utils.Database`` in WAL mode with ``busy_timeout`` 10 s and foreign keys on,
        with every migration in ``workbench.store.migrations`` applied (idempotent on re-open).
    """
    from workbench.store.migrations import migrate

    path = require_store(path) if not create else resolve_db_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite_utils.Database(path, execute_plugins=False)
    # Pragmas must run outside a transaction; the timeout comes first so that switching a fresh
    # file to WAL waits for a concurrent opener instead of failing.
    db.conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_MS)}")
    db.conn.execute("PRAGMA foreign_keys = ON")
    # WAL + NORMAL: commits survive an app crash; only a power loss can drop the last commits.
    db.conn.execute("PRAGMA synchronous = NORMAL")
    mode = db.conn.execute("PRAGMA journal_mode").fetchone()[0]
    if str(mode).lower() != "wal":
        db.conn.execute("PRAGMA journal_mode = WAL")
    migrate(db)
    return db


@contextlib.contextmanager
def write_tx(db: sqlite_utils.Database) -> Iterator[sqlite_utils.Database]:
    """Run the block as one ``BEGIN IMMEDIATE`` transaction: all of it is committed or none.

    Nested use (already inside a transaction) joins the outer transaction.
    """
    if db.conn.in_transaction:
        yield db
        return
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        raise
    else:
        db.conn.execute("COMMIT")
