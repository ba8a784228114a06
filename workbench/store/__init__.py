"""The label store: SQLite via ``sqlite_utils``, opened once per action with ``open_db``.

Tables: ``items``, ``units``, ``labels`` (append-only log), ``judgments``, ``runs``, ``leases``;
schema in ``workbench.store.migrations``. Every function takes the ``db`` to use. Tables, indexes,
inserts, upserts, updates and simple reads go through sqlite-utils' table API; raw, parameterised
SQL is left for joins, aggregates, correlated "latest row" queries, triggers, partial indexes and
``BEGIN IMMEDIATE``, each marked where it is used.

The store imports only the standard library, sqlite-utils, ``workbench.types`` and
``workbench.config``; orderings that need statistics (``helps_most``) are passed in by the caller
(``priority=workbench.stats.active.priority_order``).

Example::

    db = open_db("labels/workbench.db")
    add_items(db, items)
    unit = next_unit_for(db, "alice", task="claim_support")
    append_labels(db, [Label(unit.unit_id, unit.task, "alice", "supported")])
"""
from workbench.store.base import LabelError, StoreError, StoreNotFoundError, now_iso, write_tx
from workbench.store.db import open_db, require_store, resolve_db_path
from workbench.store.items import (
    add_items,
    add_units,
    get_item,
    get_unit,
    is_stale,
    items_with_claim_units,
    list_items,
    list_units,
    live_tasks,
    slot_versions,
    store_items,
    store_units,
)
from workbench.store.judgments import add_judgments, judge_fingerprints, list_judgments, list_runs, record_run
from workbench.store.labels import (
    LEASE_SECONDS,
    ORDERS,
    PriorityOrder,
    active_leases,
    annotator_progress,
    append_labels,
    current_labels,
    label_history,
    label_log,
    next_unit_for,
    ordered_units,
    progress,
    release_lease,
    stale_label_count,
    undo_last_label,
    unit_quotes,
    validate_labels,
)
from workbench.store.migrations import LATEST, MIGRATIONS, applied_migrations, migrate
from workbench.store.versions import TASK_FIELDS, item_text_key, text_hash, unit_text_hash

__all__ = [
    "LATEST",
    "LEASE_SECONDS",
    "TASK_FIELDS",
    "active_leases",
    "annotator_progress",
    "live_tasks",
    "is_stale",
    "item_text_key",
    "release_lease",
    "slot_versions",
    "stale_label_count",
    "store_items",
    "store_units",
    "text_hash",
    "unit_quotes",
    "unit_text_hash",
    "MIGRATIONS",
    "ORDERS",
    "PriorityOrder",
    "LabelError",
    "StoreError",
    "StoreNotFoundError",
    "require_store",
    "resolve_db_path",
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
