"""Eval items and the units made from them (a unit is one thing to label, one version of a text).

See ``workbench.store.versions`` for how a unit's text hash is made and when a unit goes stale.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from workbench.store.base import StoreError, now_iso, write_tx
from workbench.store.versions import item_text_key, mark_stale_units, unit_text_hash, version_id
from workbench.types import TASK_VALUES, EvalItem, Passage, Unit

if TYPE_CHECKING:
    import sqlite_utils  # the label store's API; imported when a store is opened (it imports pandas)

_UNIT_ORDER = "ORDER BY i.seq, u.claim_index, u.rowid"
_QUEUE_ORDER = "ORDER BY u.item_seq, u.claim_index, u.rowid"  # the same order, from the units index


def _item_row(item: EvalItem) -> dict:
    return {
        "id": item.id,
        "question": item.question,
        "answer": item.answer,
        "contexts": json.dumps(
            [{"id": p.id, "text": p.text, "source": p.source, "score": p.score} for p in item.contexts],
            ensure_ascii=False,
        ),
        "reference": item.reference,
        "gold_context_ids": None if item.gold_context_ids is None else json.dumps(list(item.gold_context_ids), ensure_ascii=False),
        "answerable": 1 if item.answerable else 0,
        "line": item.line,
    }


def _item_from_row(row: dict) -> EvalItem:
    gold = row["gold_context_ids"]
    return EvalItem(
        id=row["id"],
        question=row["question"],
        answer=row["answer"],
        contexts=tuple(Passage(p["id"], p["text"], p.get("source"), p.get("score")) for p in json.loads(row["contexts"])),
        reference=row["reference"],
        gold_context_ids=None if gold is None else tuple(json.loads(gold)),
        answerable=bool(row["answerable"]),
        line=row["line"],
    )


def add_items(db: sqlite_utils.Database, items: Iterable[EvalItem]) -> int:
    """Insert or update items by id; returns how many items were given (see ``store_items``)."""
    return store_items(db, items)["items"]


def store_items(db: sqlite_utils.Database, items: Iterable[EvalItem]) -> dict:
    """Insert or update items by id, and mark the units of changed text stale.

    An updated item keeps its original insertion position (``seq``). Its units whose text hash no
    longer matches the new text (``workbench.store.versions``) become stale: their labels stay on
    the old text and are never counted for the new one; ``add_units`` makes the new versions.

    Returns:
        ``{"items", "new", "changed", "unchanged", "stale_units"}``: items given; of them, new
        ids, ids whose stored text differed, ids stored with identical text; ids of units made
        stale by this call.
    """
    counts = {"items": 0, "new": 0, "changed": 0, "unchanged": 0, "stale_units": []}
    with write_tx(db):
        table = db.table("items")
        rows: dict[str, dict] = {}  # id -> the row to upsert; a repeated id updates its first row
        next_seq = _max_seq(db) + 1
        for item in items:
            now = now_iso()
            old = rows.get(item.id) or next(iter(table.rows_where("id = ?", [item.id])), None)
            counts["items"] += 1
            if old is None:
                counts["new"] += 1
                rows[item.id] = {**_item_row(item), "seq": next_seq, "created_at": now, "updated_at": now}
                next_seq += 1
                continue
            if item_text_key(_item_from_row(old)) == item_text_key(item):
                counts["unchanged"] += 1
            else:
                counts["changed"] += 1
            # an update keeps the item's position and creation time
            rows[item.id] = {**_item_row(item), "seq": old["seq"], "created_at": old["created_at"], "updated_at": now}
            counts["stale_units"] += mark_stale_units(db, item, now=now)
        table.upsert_all(rows.values(), pk="id")
    return counts


def _max_seq(db: sqlite_utils.Database) -> int:
    """The highest ``seq`` in ``items`` (0 when empty): one read of the ``items_seq`` index.

    Raw SQL: sqlite-utils has no aggregate API.
    """
    return db.execute("SELECT COALESCE(MAX(seq), 0) FROM items").fetchone()[0]


def get_item(db: sqlite_utils.Database, item_id: str) -> EvalItem | None:
    """The item with this id, or ``None``."""
    row = next(iter(db["items"].rows_where("id = ?", [item_id])), None)
    return None if row is None else _item_from_row(row)


def list_items(db: sqlite_utils.Database) -> list[EvalItem]:
    """Every item, in insertion order."""
    return [_item_from_row(row) for row in db["items"].rows_where(order_by="seq")]


_UNIT_FIELDS = "unit_id, task, item_id, claim_index, text, text_hash"
_UNIT_COLUMNS = "u.unit_id, u.task, u.item_id, u.claim_index, u.text, u.text_hash"  # for joins


def _unit_from_row(row: dict) -> Unit:
    return Unit(row["unit_id"], row["task"], row["item_id"], row["claim_index"], row["text"], row.get("text_hash"))


def add_units(db: sqlite_utils.Database, units: Iterable[Unit], *, source: str | None = None) -> int:
    """Store units as versions of text; returns how many unit rows were new (see ``store_units``)."""
    return store_units(db, units, source=source)["new"]


def store_units(db: sqlite_utils.Database, units: Iterable[Unit], *, source: str | None = None) -> dict:
    """Store units, each as a version of its slot's text; nothing is overwritten.

    Each unit is given with its slot id ``Unit.make_id(task, item_id, claim_index)``. Its text hash
    is computed from the stored item (``workbench.store.versions``). Per slot:

    - a live unit with the same hash: unchanged (nothing written);
    - a stale unit with the same hash (the text changed back): it is live again, and any other
      live version is marked stale;
    - otherwise a new unit row (``unit_id`` = the slot id if free, else ``"<slot>@<hash>"``), and
      the slot's other live version, if any, is marked stale ("changed").

    ``source`` records what made the units (a judge fingerprint or ``file:<name>``). Raises
    ``StoreError`` (nothing written) for an unknown task, a unit id that is not the slot id, or an
    unknown item.

    Returns:
        ``{"new", "changed", "unchanged", "revived", "stale_units"}``: ``new`` counts new rows
        (including new versions), ``changed`` the slots that had another live text before.
    """
    units = list(units)
    problems: list[tuple[int, str]] = []
    counts = {"new": 0, "changed": 0, "unchanged": 0, "revived": 0, "stale_units": []}
    with write_tx(db):
        items: dict[str, EvalItem | None] = {}
        seqs: dict[str, int] = {}
        for index, unit in enumerate(units):
            if unit.task not in TASK_VALUES:
                problems.append((index, f"task: expected one of {sorted(TASK_VALUES)}, got {unit.task!r}"))
            expected = Unit.make_id(unit.task, unit.item_id, unit.claim_index)
            if unit.unit_id != expected:
                problems.append((index, f"unit_id: expected {expected!r}, got {unit.unit_id!r}"))
            if unit.item_id not in items:
                row = next(iter(db["items"].rows_where("id = ?", [unit.item_id])), None)
                items[unit.item_id] = None if row is None else _item_from_row(row)
                if row is not None:
                    seqs[unit.item_id] = row["seq"]
            if items[unit.item_id] is None:
                problems.append((index, f"item_id: no item {unit.item_id!r} in the store"))
        if problems:
            raise StoreError(
                "invalid units, nothing written:\n" + "\n".join(f"  unit {i + 1}: {m}" for i, m in problems), problems
            )
        now = now_iso()
        table = db.table("units")
        new_rows: list[dict] = []  # rows made by this call, inserted in one batch at the end
        pending: dict[tuple, list[dict]] = {}  # the same rows by slot
        for unit in units:
            item = items[unit.item_id]
            assert item is not None  # units of unknown items were refused above
            digest = unit_text_hash(unit.task, item, unit.text)
            slot = (unit.task, unit.item_id, unit.claim_index)
            stored = list(table.rows_where(
                "task = ? AND item_id = ? AND COALESCE(claim_index, -1) = COALESCE(?, -1)",
                [unit.task, unit.item_id, unit.claim_index], select="unit_id, text_hash, stale_at"))
            made = pending.setdefault(slot, [])
            versions = stored + made
            live = [v for v in versions if v["stale_at"] is None]
            same = [v for v in versions if v["text_hash"] == digest]
            if same and same[0]["stale_at"] is None:
                counts["unchanged"] += 1
                continue
            for v in live:
                _set_stale(db, v, now, stored=not any(v is row for row in made))
                counts["stale_units"].append(v["unit_id"])
            if live:
                counts["changed"] += 1
            if same:
                _set_stale(db, same[0], None, stored=not any(same[0] is row for row in made))
                counts["revived"] += 1
                continue
            taken = {v["unit_id"] for v in versions}
            new_rows.append({"unit_id": unit.unit_id if unit.unit_id not in taken else version_id(unit.unit_id, digest),
                             "task": unit.task, "item_id": unit.item_id, "claim_index": unit.claim_index,
                             "text": unit.text, "source": source, "created_at": now, "text_hash": digest,
                             "item_seq": seqs[unit.item_id], "stale_at": None})
            made.append(new_rows[-1])
            counts["new"] += 1
        table.insert_all(new_rows)
    return counts


def _set_stale(db: sqlite_utils.Database, version: dict, stale_at: str | None, *, stored: bool) -> None:
    """Set ``stale_at`` on one version of a slot: a stored row, or a row this call has yet to insert.

    A version made stale loses its leases: a stale unit is never handed out again.
    """
    version["stale_at"] = stale_at
    if stored:
        db.table("units").update(version["unit_id"], {"stale_at": stale_at})
        if stale_at is not None:
            db.table("leases").delete_where("unit_id = ?", [version["unit_id"]])


def get_unit(db: sqlite_utils.Database, unit_id: str) -> Unit | None:
    """The unit with this id (live or stale), or ``None``."""
    row = next(iter(db["units"].rows_where("unit_id = ?", [unit_id], select=_UNIT_FIELDS)), None)
    return None if row is None else _unit_from_row(row)


def is_stale(db: sqlite_utils.Database, unit_id: str) -> bool:
    """Whether the unit exists and is a stale version (its item's text has changed since)."""
    row = next(iter(db["units"].rows_where("unit_id = ?", [unit_id], select="stale_at")), None)
    return row is not None and row["stale_at"] is not None


def slot_versions(db: sqlite_utils.Database, task: str, item_id: str, claim_index: int | None) -> list[dict]:
    """Every version of one slot, oldest first: ``{"unit_id", "text", "text_hash", "stale"}``."""
    rows = db["units"].rows_where("task = ? AND item_id = ? AND COALESCE(claim_index, -1) = COALESCE(?, -1)",
                                  [task, item_id, claim_index], select="unit_id, text, text_hash, stale_at",
                                  order_by="rowid")
    return [{"unit_id": r["unit_id"], "text": r["text"], "text_hash": r["text_hash"], "stale": r["stale_at"] is not None}
            for r in rows]


def list_units(db: sqlite_utils.Database, *, task: str | None = None, item_id: str | None = None,
               include_stale: bool = False) -> list[Unit]:
    """Live units (stale versions too with ``include_stale``), optionally of one task and/or item.

    Order is stable: item insertion order, then ``claim_index`` (answer-level units, whose index
    is ``None``, first), then unit insertion order.
    """
    # raw SQL: the order comes from the joined items table, and sqlite-utils has no join API
    sql = f"SELECT {_UNIT_COLUMNS} FROM units u JOIN items i ON i.id = u.item_id WHERE 1 = 1"
    params: list = []
    if not include_stale:
        sql += " AND u.stale_at IS NULL"
    if task is not None:
        sql += " AND u.task = ?"
        params.append(task)
    if item_id is not None:
        sql += " AND u.item_id = ?"
        params.append(item_id)
    return [_unit_from_row(row) for row in db.query(f"{sql} {_UNIT_ORDER}", params)]


def live_tasks(db: sqlite_utils.Database) -> list[str]:
    """Tasks that have at least one live unit (one indexed lookup per task)."""
    units = db.table("units")
    return [task for task in TASK_VALUES
            if next(iter(units.rows_where("task = ? AND stale_at IS NULL", [task], select="1", limit=1)), None)]


def items_with_claim_units(db: sqlite_utils.Database) -> set[str]:
    """Ids of items with at least one live ``claim_support`` unit (decomposed once per answer text)."""
    return {row["item_id"] for row in db["units"].rows_where("task = ? AND stale_at IS NULL", ["claim_support"],
                                                              select="DISTINCT item_id")}
