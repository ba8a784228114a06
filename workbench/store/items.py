"""Eval items and the units made from them (a unit is one thing to label)."""
from __future__ import annotations

import json
from collections.abc import Iterable

import sqlite_utils

from workbench.store.db import StoreError, now_iso, write_tx
from workbench.types import TASK_VALUES, EvalItem, Passage, Unit

_UNIT_ORDER = "ORDER BY i.seq, u.claim_index, u.rowid"


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
    """Insert or update items by id; returns how many items were given.

    An updated item keeps its original insertion position (``seq``) and its units: units are
    made once and are not rewritten when an item's answer changes.
    """
    n = 0
    with write_tx(db):
        for item in items:
            row = _item_row(item)
            now = now_iso()
            db.execute(
                """INSERT INTO items (id, seq, question, answer, contexts, reference, gold_context_ids,
                                      answerable, line, created_at, updated_at)
                   VALUES (:id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM items), :question, :answer, :contexts,
                           :reference, :gold_context_ids, :answerable, :line, :now, :now)
                   ON CONFLICT(id) DO UPDATE SET
                       question = excluded.question, answer = excluded.answer, contexts = excluded.contexts,
                       reference = excluded.reference, gold_context_ids = excluded.gold_context_ids,
                       answerable = excluded.answerable, line = excluded.line, updated_at = excluded.updated_at""",
                {**row, "now": now},
            )
            n += 1
    return n


def get_item(db: sqlite_utils.Database, item_id: str) -> EvalItem | None:
    """The item with this id, or ``None``."""
    rows = list(db.query("SELECT * FROM items WHERE id = ?", [item_id]))
    return _item_from_row(rows[0]) if rows else None


def list_items(db: sqlite_utils.Database) -> list[EvalItem]:
    """Every item, in insertion order."""
    return [_item_from_row(row) for row in db.query("SELECT * FROM items ORDER BY seq")]


def _unit_from_row(row: dict) -> Unit:
    return Unit(row["unit_id"], row["task"], row["item_id"], row["claim_index"], row["text"])


def add_units(db: sqlite_utils.Database, units: Iterable[Unit], *, source: str | None = None) -> int:
    """Insert units, ignoring any whose ``unit_id`` already exists; returns how many were new.

    Units are made once: an existing unit keeps its text. ``source`` records what made them (a
    judge fingerprint or ``file:<name>``). Raises ``StoreError`` (nothing written) for an unknown
    task, a unit id that is not ``Unit.make_id(task, item_id, claim_index)``, or an unknown item.
    """
    units = list(units)
    problems: list[tuple[int, str]] = []
    with write_tx(db):
        for index, unit in enumerate(units):
            if unit.task not in TASK_VALUES:
                problems.append((index, f"task: expected one of {sorted(TASK_VALUES)}, got {unit.task!r}"))
            expected = Unit.make_id(unit.task, unit.item_id, unit.claim_index)
            if unit.unit_id != expected:
                problems.append((index, f"unit_id: expected {expected!r}, got {unit.unit_id!r}"))
            if not list(db.query("SELECT 1 FROM items WHERE id = ?", [unit.item_id])):
                problems.append((index, f"item_id: no item {unit.item_id!r} in the store"))
        if problems:
            raise StoreError(
                "invalid units, nothing written:\n" + "\n".join(f"  unit {i + 1}: {m}" for i, m in problems), problems
            )
        before = db.execute("SELECT COUNT(*) FROM units").fetchone()[0]
        now = now_iso()
        for unit in units:
            db.execute(
                """INSERT OR IGNORE INTO units (unit_id, task, item_id, claim_index, text, source, created_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?)""",
                [unit.unit_id, unit.task, unit.item_id, unit.claim_index, unit.text, source, now],
            )
        after = db.execute("SELECT COUNT(*) FROM units").fetchone()[0]
    return after - before


def get_unit(db: sqlite_utils.Database, unit_id: str) -> Unit | None:
    """The unit with this id, or ``None``."""
    rows = list(db.query("SELECT * FROM units WHERE unit_id = ?", [unit_id]))
    return _unit_from_row(rows[0]) if rows else None


def list_units(db: sqlite_utils.Database, *, task: str | None = None, item_id: str | None = None) -> list[Unit]:
    """Units, optionally of one task and/or one item.

    Order is stable: item insertion order, then ``claim_index`` (answer-level units, whose index
    is ``None``, first), then unit insertion order.
    """
    sql = "SELECT u.* FROM units u JOIN items i ON i.id = u.item_id WHERE 1 = 1"
    params: list = []
    if task is not None:
        sql += " AND u.task = ?"
        params.append(task)
    if item_id is not None:
        sql += " AND u.item_id = ?"
        params.append(item_id)
    return [_unit_from_row(row) for row in db.query(f"{sql} {_UNIT_ORDER}", params)]


def items_with_claim_units(db: sqlite_utils.Database) -> set[str]:
    """Ids of items that already have at least one ``claim_support`` unit (decomposed once)."""
    return {row["item_id"] for row in db.query("SELECT DISTINCT item_id FROM units WHERE task = 'claim_support'")}
