"""Numbered schema migrations: a small ordered list of functions, recorded in ``_migrations``.

``MIGRATIONS`` holds ``(number, name, function)``; each function takes the ``db`` and changes
the schema through sqlite-utils (``db.table(table).create``, ``create_index``, ``add_column``). ``migrate`` first reads ``_migrations`` (no lock); only when the store is behind
does it take one write lock (``BEGIN IMMEDIATE``), re-read, and apply the missing functions in
order, so two processes opening a blank file at once cannot both apply a migration. Never edit
a released migration: append a new one.

Tables:
- ``items``: eval items (contexts and gold ids as JSON); ``seq`` is insertion order.
- ``units``: things to label, made once per item (``source`` says which judge or file made them).
- ``labels``: the append-only human label log. Triggers forbid deleting rows and changing any
  column except setting ``retracted_at`` once (that is how ``undo_last_label`` works).
- ``judgments``: judges' verdicts per unit, with fingerprint, score and the raw record as JSON.
- ``runs``: scoring runs recorded with their summary.
- (4) ``units.text_hash`` / ``units.stale_at``: a unit is one version of the text labelled (see
  ``workbench.store.versions``); a version whose item text changed is stale, keeps its labels and
  is never counted for the new text. ``leases``: which annotator holds which unit until when.
  ``units.item_seq`` copies the item's insertion position, so the sequential queue is read in
  index order and stops at the first unit to hand out. Indexes for the next-unit, progress and
  quote queries.

Raw SQL is left only where sqlite-utils has no API: triggers, partial (``WHERE``) or expression
(``COALESCE``) indexes, and migration 4's back-fill of every unit (a many-row update). Tables made by migrations 2 and 3 written before this module
used sqlite-utils have ``AUTOINCREMENT`` ids; new ones have plain ``INTEGER PRIMARY KEY`` ids
(``create`` offers no ``AUTOINCREMENT``). Rows of those tables are never deleted, so ids are
handed out the same way in both.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from workbench.store.base import StoreError, now_iso, write_tx
from workbench.store.items import get_item
from workbench.store.versions import text_hash, unit_text_hash
from workbench.types import EvalItem

if TYPE_CHECKING:
    import sqlite_utils  # the label store's API; imported when a store is opened (it imports pandas)

Migration = Callable[["sqlite_utils.Database"], None]


def _items_and_units(db: sqlite_utils.Database) -> None:
    """(1) ``items`` and ``units``."""
    db.table("items").create(
        {"id": str, "seq": int, "question": str, "answer": str, "contexts": str, "reference": str,
         "gold_context_ids": str, "answerable": int, "line": int, "created_at": str, "updated_at": str},
        pk="id",
        not_null={"seq", "question", "answer", "contexts", "answerable", "created_at", "updated_at"},
        defaults={"answerable": 1},
    )
    db.table("items").create_index(["seq"], index_name="items_seq", unique=True)
    db.table("units").create(
        {"unit_id": str, "task": str, "item_id": str, "claim_index": int, "text": str, "source": str,
         "created_at": str},
        pk="unit_id",
        not_null={"task", "item_id", "text", "created_at"},
        foreign_keys=[("item_id", "items", "id")],
    )
    db.table("units").create_index(["item_id", "claim_index"], index_name="units_item")
    db.table("units").create_index(["task"], index_name="units_task")


def _append_only_labels(db: sqlite_utils.Database) -> None:
    """(2) ``labels``, an append-only log: triggers refuse deletes and any update but a retraction."""
    db.table("labels").create(
        {"id": int, "unit_id": str, "task": str, "annotator": str, "value": str, "note": str,
         "created_at": str, "retracted_at": str},
        pk="id",
        not_null={"unit_id", "task", "annotator", "value", "created_at"},
        foreign_keys=[("unit_id", "units", "unit_id")],
    )
    db.table("labels").create_index(["unit_id", "annotator", "id"], index_name="labels_unit_annotator")
    db.table("labels").create_index(["annotator", "id"], index_name="labels_annotator")
    db.table("labels").create_index(["task"], index_name="labels_task")
    # sqlite-utils creates triggers only for its full-text search; these two are raw SQL.
    db.execute("""CREATE TRIGGER labels_no_delete BEFORE DELETE ON labels
               BEGIN SELECT RAISE(ABORT, 'labels are append-only: rows are never deleted'); END""")
    db.execute("""CREATE TRIGGER labels_only_retract BEFORE UPDATE ON labels
               WHEN NOT (OLD.retracted_at IS NULL AND NEW.retracted_at IS NOT NULL
                         AND NEW.id IS OLD.id AND NEW.unit_id IS OLD.unit_id
                         AND NEW.task IS OLD.task AND NEW.annotator IS OLD.annotator
                         AND NEW.value IS OLD.value AND NEW.note IS OLD.note
                         AND NEW.created_at IS OLD.created_at)
               BEGIN SELECT RAISE(ABORT, 'labels are append-only: only retracted_at may be set, once'); END""")


def _judgments_and_runs(db: sqlite_utils.Database) -> None:
    """(3) ``judgments`` (judges' verdicts per unit) and ``runs`` (scoring runs)."""
    db.table("judgments").create(
        {"id": int, "unit_id": str, "task": str, "judge": str, "value": str, "score": float, "quote": str,
         "quote_found": int, "repeat": int, "error": str, "created_at": str, "raw": str},
        pk="id",
        not_null={"unit_id", "task", "judge", "value", "repeat", "created_at"},
        defaults={"repeat": 0},
        foreign_keys=[("unit_id", "units", "unit_id")],
    )
    db.table("judgments").create_index(["unit_id", "judge", "repeat", "id"], index_name="judgments_unit_judge")
    db.table("judgments").create_index(["task", "judge"], index_name="judgments_task_judge")
    db.table("judgments").create_index(["judge", "id"], index_name="judgments_judge")
    db.table("runs").create(
        {"id": int, "path": str, "created_at": str, "judge": str, "n_items": int, "summary": str},
        pk="id",
        not_null={"path", "created_at"},
    )


def _units_are_versions(db: sqlite_utils.Database) -> None:
    """(4) Unit text hashes, staleness and queue position; leases; indexes for the label page."""
    units = db.table("units")
    units.add_column("text_hash", str)
    units.add_column("stale_at", str)
    units.add_column("item_seq", int)
    # every existing unit is one version: the hash of its text as it stands, its item's position
    items: dict[str, tuple[EvalItem | None, int | None]] = {}
    updates = []
    for row in units.rows_where(select="unit_id, task, item_id, text"):
        if row["item_id"] not in items:
            stored = list(db["items"].rows_where("id = ?", [row["item_id"]], select="seq"))
            items[row["item_id"]] = (get_item(db, row["item_id"]), stored[0]["seq"] if stored else None)
        item, seq = items[row["item_id"]]
        digest = unit_text_hash(row["task"], item, row["text"]) if item is not None else text_hash(row["task"], "", row["text"])
        updates.append((digest, seq, row["unit_id"]))
    # one prepared statement for every unit: ``Table.update`` changes one row per call and reads
    # the schema twice each time (about 1 ms a row: minutes on a store of 100k units)
    db.conn.executemany("UPDATE units SET text_hash = ?, item_seq = ? WHERE unit_id = ?", updates)
    # partial and expression indexes: ``create_index`` takes plain columns only
    for statement in (
        "CREATE UNIQUE INDEX units_version ON units(task, item_id, COALESCE(claim_index, -1), text_hash)",
        "CREATE INDEX units_live ON units(task, item_id, claim_index) WHERE stale_at IS NULL",
        "CREATE INDEX units_queue ON units(task, item_seq, claim_index) WHERE stale_at IS NULL",
        "CREATE INDEX units_queue_all ON units(item_seq, claim_index) WHERE stale_at IS NULL",
        "CREATE INDEX labels_live ON labels(unit_id, annotator) WHERE retracted_at IS NULL",
        "CREATE INDEX labels_annotator_live ON labels(annotator, task, unit_id) WHERE retracted_at IS NULL",
    ):
        db.execute(statement)
    db.table("leases").create(
        {"unit_id": str, "annotator": str, "task": str, "expires_at": float},
        pk=("unit_id", "annotator"),
        not_null={"unit_id", "annotator", "task", "expires_at"},
        foreign_keys=[("unit_id", "units", "unit_id")],
    )
    db.table("leases").create_index(["annotator", "task"], index_name="leases_annotator")


MIGRATIONS: list[tuple[int, str, Migration]] = [
    (1, "items and units", _items_and_units),
    (2, "append-only labels", _append_only_labels),
    (3, "judgments and runs", _judgments_and_runs),
    (4, "units are versions of text; leases; indexes for the label page", _units_are_versions),
]

LATEST = MIGRATIONS[-1][0]
_KNOWN = [number for number, _, _ in MIGRATIONS]


def applied_migrations(db: sqlite_utils.Database) -> list[int]:
    """Numbers of the migrations recorded in ``_migrations`` (empty for a blank database); a read."""
    table = db.table("_migrations")
    if not table.exists():
        return []
    return [row["id"] for row in table.rows_where(select="id", order_by="id")]


def _refuse_unknown(applied: list[int]) -> None:
    unknown = sorted(set(applied) - set(_KNOWN))
    if unknown:
        raise StoreError(
            f"label store has migration(s) {unknown} unknown to this workbench (latest known: {LATEST}); "
            "upgrade workbench to open it"
        )


def migrate(db: sqlite_utils.Database, *, target: int | None = None) -> list[int]:
    """Apply every missing migration up to ``target`` (default: all) and return the numbers applied.

    Idempotent: re-running on an up-to-date database applies nothing, returns ``[]`` and takes no
    write lock (one read of ``_migrations``). Otherwise the missing migrations and their records
    are written in one ``BEGIN IMMEDIATE`` transaction: all of them or none. Raises
    ``StoreError`` when the database has a migration this code does not know (it was written by
    a newer workbench).
    """
    target = LATEST if target is None else target
    wanted = [number for number in _KNOWN if number <= target]
    applied = applied_migrations(db)
    _refuse_unknown(applied)
    if set(wanted) <= set(applied):  # the common case: a read, no write lock taken
        return []
    with write_tx(db):
        db.table("_migrations").create({"id": int, "name": str, "applied_at": str}, pk="id",
                                 not_null={"name", "applied_at"}, if_not_exists=True)
        done = set(applied_migrations(db))  # again under the lock: another process may have migrated
        _refuse_unknown(sorted(done))
        newly = []
        for number, name, step in MIGRATIONS:
            if number in done or number > target:
                continue
            step(db)
            db.table("_migrations").insert({"id": number, "name": name, "applied_at": now_iso()})
            newly.append(number)
    return newly
