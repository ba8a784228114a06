"""Opening the label store: one SQLite file, WAL mode, a busy timeout, foreign keys on.

Open one connection per action (a CLI command, a Streamlit button press) with ``open_db`` and
pass it to the store functions; never share one connection across threads. Writes run inside
``write_tx`` (``BEGIN IMMEDIATE``, in ``workbench.store.base``), so two writers queue on the busy
timeout instead of failing with "database is locked" when a read transaction would have to be
upgraded. Opening a store whose schema is current, and every read, take no write lock.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from workbench.config import default_db_path
from workbench.store.base import StoreNotFoundError
from workbench.store.migrations import migrate

if TYPE_CHECKING:
    import sqlite_utils  # the label store's API; imported when a store is opened (it imports pandas)

__all__ = ["BUSY_TIMEOUT_MS", "open_db", "require_store", "resolve_db_path"]

BUSY_TIMEOUT_MS = 10_000


def resolve_db_path(path: str | Path | None = None) -> Path:
    """The store file ``path`` names (``None``: ``WORKBENCH_DB`` or ``labels/workbench.db``)."""
    return Path(default_db_path() if path is None else path).expanduser()


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


def open_db(path: str | Path | None = None, *, create: bool = True) -> sqlite_utils.Database:
    """Open (creating if needed) the label store at ``path`` and bring its schema up to date.

    Args:
        path: the SQLite file; ``None`` means ``workbench.config.default_db_path()``
            (``WORKBENCH_DB`` or ``labels/workbench.db``). The parent folder is created.
        create: with ``False``, a missing file raises ``StoreNotFoundError`` instead of being
            created (commands that only read a store).

    Returns:
        A ``sqlite_utils.Database`` in WAL mode with ``busy_timeout`` 10 s and foreign keys on,
        with every migration in ``workbench.store.migrations`` applied. A store already at the
        latest schema costs one read and takes no write lock; an older one is migrated under one
        write lock.
    """
    path = require_store(path) if not create else resolve_db_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    import sqlite_utils  # here, not at the top: it imports pandas, which commands that open no store skip

    db = sqlite_utils.Database(path, execute_plugins=False)
    # Connection settings are pragmas, which sqlite-utils has no API for (``enable_wal`` sets only
    # the journal mode). They must run outside a transaction; the timeout comes first so that
    # switching a fresh file to WAL waits for a concurrent opener instead of failing.
    db.conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_MS)}")
    db.conn.execute("PRAGMA foreign_keys = ON")
    # WAL + NORMAL: commits survive an app crash; only a power loss can drop the last commits.
    db.conn.execute("PRAGMA synchronous = NORMAL")
    db.enable_wal()  # reads the mode first; switches (once per file) only when it is not WAL
    migrate(db)
    return db
