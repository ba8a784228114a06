"""Numbered schema migrations, recorded in the ``_migrations`` table.

Each migration is ``(number, name, statements)``; ``migrate`` applies the missing ones in order,
inside one ``BEGIN IMMEDIATE`` transaction, so two processes opening a blank file at once cannot
both apply a migration. Never edit a released migration: append a new one.

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

A migration step is an SQL string or a callable ``step(db)`` (for back-filling computed columns).
"""
from __future__ import annotations

import sqlite_utils

from workbench.store.db import StoreError, now_iso, write_tx


def _backfill_text_hashes(db: sqlite_utils.Database) -> None:
    """Give every existing unit the hash of its text as it stands (one version per unit)."""
    from workbench.store.versions import backfill_text_hashes

    backfill_text_hashes(db)


MIGRATIONS: list[tuple[int, str, tuple]] = [
    (
        1,
        "items and units",
        (
            """CREATE TABLE items (
                id TEXT PRIMARY KEY,
                seq INTEGER NOT NULL,
                question TEXT NOT NULL,
                answer TEXT NOT NULL,
                contexts TEXT NOT NULL,
                reference TEXT,
                gold_context_ids TEXT,
                answerable INTEGER NOT NULL DEFAULT 1,
                line INTEGER,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
            "CREATE UNIQUE INDEX items_seq ON items(seq)",
            """CREATE TABLE units (
                unit_id TEXT PRIMARY KEY,
                task TEXT NOT NULL,
                item_id TEXT NOT NULL REFERENCES items(id),
                claim_index INTEGER,
                text TEXT NOT NULL,
                source TEXT,
                created_at TEXT NOT NULL
            )""",
            "CREATE INDEX units_item ON units(item_id, claim_index)",
            "CREATE INDEX units_task ON units(task)",
        ),
    ),
    (
        2,
        "append-only labels",
        (
            """CREATE TABLE labels (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                unit_id TEXT NOT NULL REFERENCES units(unit_id),
                task TEXT NOT NULL,
                annotator TEXT NOT NULL,
                value TEXT NOT NULL,
                note TEXT,
                created_at TEXT NOT NULL,
                retracted_at TEXT
            )""",
            "CREATE INDEX labels_unit_annotator ON labels(unit_id, annotator, id)",
            "CREATE INDEX labels_annotator ON labels(annotator, id)",
            "CREATE INDEX labels_task ON labels(task)",
            """CREATE TRIGGER labels_no_delete BEFORE DELETE ON labels
               BEGIN SELECT RAISE(ABORT, 'labels are append-only: rows are never deleted'); END""",
            """CREATE TRIGGER labels_only_retract BEFORE UPDATE ON labels
               WHEN NOT (OLD.retracted_at IS NULL AND NEW.retracted_at IS NOT NULL
                         AND NEW.id IS OLD.id AND NEW.unit_id IS OLD.unit_id
                         AND NEW.task IS OLD.task AND NEW.annotator IS OLD.annotator
                         AND NEW.value IS OLD.value AND NEW.note IS OLD.note
                         AND NEW.created_at IS OLD.created_at)
               BEGIN SELECT RAISE(ABORT, 'labels are append-only: only retracted_at may be set, once'); END""",
        ),
    ),
    (
        3,
        "judgments and runs",
        (
            """CREATE TABLE judgments (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                unit_id TEXT NOT NULL REFERENCES units(unit_id),
                task TEXT NOT NULL,
                judge TEXT NOT NULL,
                value TEXT NOT NULL,
                score REAL,
                quote TEXT,
                quote_found INTEGER,
                "repeat" INTEGER NOT NULL DEFAULT 0,
                error TEXT,
                created_at TEXT NOT NULL,
                raw TEXT
            )""",
            'CREATE INDEX judgments_unit_judge ON judgments(unit_id, judge, "repeat", id)',
            "CREATE INDEX judgments_task_judge ON judgments(task, judge)",
            "CREATE INDEX judgments_judge ON judgments(judge, id)",
            """CREATE TABLE runs (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                path TEXT NOT NULL,
                created_at TEXT NOT NULL,
                judge TEXT,
                n_items INTEGER,
                summary TEXT
            )""",
        ),
    ),
    (
        4,
        "units are versions of text; leases; indexes for the label page",
        (
            "ALTER TABLE units ADD COLUMN text_hash TEXT",
            "ALTER TABLE units ADD COLUMN stale_at TEXT",
            "ALTER TABLE units ADD COLUMN item_seq INTEGER",
            "UPDATE units SET item_seq = (SELECT seq FROM items WHERE items.id = units.item_id)",
            _backfill_text_hashes,
            "CREATE UNIQUE INDEX units_version ON units(task, item_id, COALESCE(claim_index, -1), text_hash)",
            "CREATE INDEX units_live ON units(task, item_id, claim_index) WHERE stale_at IS NULL",
            "CREATE INDEX units_queue ON units(task, item_seq, claim_index) WHERE stale_at IS NULL",
            "CREATE INDEX units_queue_all ON units(item_seq, claim_index) WHERE stale_at IS NULL",
            "CREATE INDEX labels_live ON labels(unit_id, annotator) WHERE retracted_at IS NULL",
            "CREATE INDEX labels_annotator_live ON labels(annotator, task, unit_id) WHERE retracted_at IS NULL",
            """CREATE TABLE leases (
                unit_id TEXT NOT NULL REFERENCES units(unit_id),
                annotator TEXT NOT NULL,
                task TEXT NOT NULL,
                expires_at REAL NOT NULL,
                PRIMARY KEY (unit_id, annotator)
            )""",
            "CREATE INDEX leases_annotator ON leases(annotator, task)",
        ),
    ),
]

LATEST = MIGRATIONS[-1][0]


def applied_migrations(db: sqlite_utils.Database) -> list[int]:
    """Numbers of the migrations recorded in ``_migrations`` (empty for a blank database)."""
    if not db["_migrations"].exists():
        return []
    return [row["id"] for row in db.query("SELECT id FROM _migrations ORDER BY id")]


def _up_to_date(db: sqlite_utils.Database) -> bool:
    """Whether ``_migrations`` lists exactly the known migrations (one read, no lock held after)."""
    try:
        rows = db.execute("SELECT id FROM _migrations ORDER BY id").fetchall()
    except Exception:  # no table yet (blank file)
        return False
    return [row[0] for row in rows] == [number for number, _, _ in MIGRATIONS]


def migrate(db: sqlite_utils.Database, *, target: int | None = None) -> list[int]:
    """Apply every missing migration up to ``target`` (default: all) and return the numbers applied.

    Idempotent: re-running on an up-to-date database applies nothing and returns ``[]``.
    Raises ``StoreError`` when the database has a migration this code does not know (it was
    written by a newer workbench).
    """
    target = LATEST if target is None else target
    if target == LATEST and _up_to_date(db):  # the common case: a read, no write lock taken
        return []
    with write_tx(db):
        db.execute(
            "CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        done = set(applied_migrations(db))
        unknown = sorted(done - {number for number, _, _ in MIGRATIONS})
        if unknown:
            raise StoreError(
                f"label store has migration(s) {unknown} unknown to this workbench (latest known: {LATEST}); "
                "upgrade workbench to open it"
            )
        applied = []
        for number, name, statements in MIGRATIONS:
            if number in done or number > target:
                continue
            for statement in statements:
                if callable(statement):
                    statement(db)
                else:
                    db.execute(statement)
            db.execute(
                "INSERT INTO _migrations (id, name, applied_at) VALUES (?, ?, ?)", [number, name, now_iso()]
            )
            applied.append(number)
    return applied
