"""The label store: SQLite via ``sqlite_utils``, opened once per action with ``open_db``.

Tables: ``items``, ``units``, ``labels`` (append-only log), ``judgments``, ``runs``; schema in
``workbench.store.migrations``. Every function takes the ``db`` to use; SQL is parameterised.

Example::

    db = open_db("labels/workbench.db")
    add_items(db, items)
    unit = next_unit_for(db, "alice", task="claim_support")
    append_labels(db, [Label(unit.unit_id, unit.task, "alice", "supported")])
"""
from workbench.store.db import LabelError, StoreError, now_iso, open_db, write_tx
from workbench.store.items import (
    add_items,
    add_units,
    get_item,
    get_unit,
    items_with_claim_units,
    list_items,
    list_units,
)
from workbench.store.judgments import add_judgments, judge_fingerprints, list_judgments, list_runs, record_run
from workbench.store.labels import (
    ORDERS,
    append_labels,
    current_labels,
    label_history,
    label_log,
    next_unit_for,
    ordered_units,
    progress,
    undo_last_label,
    validate_labels,
)
from workbench.store.migrations import LATEST, MIGRATIONS, applied_migrations, migrate

__all__ = [
    "LATEST",
    "MIGRATIONS",
    "ORDERS",
    "LabelError",
    "StoreError",
    "add_items",
    "add_judgments",
    "add_units",
    "append_labels",
    "applied_migrations",
    "current_labels",
    "get_item",
    "get_unit",
    "items_with_claim_units",
    "judge_fingerprints",
    "label_history",
    "label_log",
    "list_items",
    "list_judgments",
    "list_runs",
    "list_units",
    "migrate",
    "next_unit_for",
    "now_iso",
    "open_db",
    "ordered_units",
    "progress",
    "record_run",
    "undo_last_label",
    "validate_labels",
    "write_tx",
]
