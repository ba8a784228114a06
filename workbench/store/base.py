"""What every store module shares: the store's errors, its timestamps, its write transaction.

Imports nothing of the store, so every other store module can import it without a cycle.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils  # the label store's API; imported when a store is opened (it imports pandas)



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


def now_iso() -> str:
    """The current UTC time as ISO 8601 with microseconds, e.g. ``2025-01-31T09:15:02.123456+00:00``."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


@contextlib.contextmanager
def write_tx(db: sqlite_utils.Database) -> Iterator[sqlite_utils.Database]:
    """Run the block as one ``BEGIN IMMEDIATE`` transaction: all of it is committed or none.

    Nested use (already inside a transaction) joins the outer transaction. sqlite-utils' own
    ``db.atomic()`` starts a deferred ``BEGIN``, which takes the write lock only at the first
    write, so two writers that both read first can fail with "database is locked" instead of
    queueing on the busy timeout; hence this raw ``BEGIN IMMEDIATE``. Inside it, sqlite-utils'
    writes (``insert_all``, ``upsert_all``, ``update``, ``delete_where``) nest as savepoints.
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
