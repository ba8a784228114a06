"""Judges' verdicts per unit, and scoring runs."""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.store.base import StoreError, now_iso, write_tx
from workbench.types import TASK_VALUES, Judgment

if TYPE_CHECKING:
    import sqlite_utils  # the label store's API; imported when a store is opened (it imports pandas)


def _judgment_from_row(row: dict) -> Judgment:
    return Judgment(
        unit_id=row["unit_id"],
        task=row["task"],
        judge=row["judge"],
        value=row["value"],
        score=row["score"],
        quote=row["quote"],
        quote_found=None if row["quote_found"] is None else bool(row["quote_found"]),
        repeat=row["repeat"],
        error=row["error"],
        created_at=row["created_at"],
    )


def add_judgments(db: sqlite_utils.Database, judgments: Iterable[Judgment]) -> int:
    """Append judgments in one transaction; returns how many rows were written.

    A row is refused (``StoreError`` listing every bad row, nothing written) when its task is
    unknown, its unit does not exist, its judge fingerprint is empty, its score is outside
    [0, 1], or it has no ``error`` and its value is not one of the task's values. A failed call
    is stored with its ``error`` and any value (usually ``""``). ``created_at`` defaults to now.
    """
    judgments = list(judgments)
    problems: list[tuple[int, str]] = []
    with write_tx(db):
        known: dict[str, bool] = {}
        for index, j in enumerate(judgments):
            if j.task not in TASK_VALUES:
                problems.append((index, f"task: expected one of {', '.join(TASK_VALUES)}, got {j.task!r}"))
            elif j.error is None and j.value not in TASK_VALUES[j.task]:
                problems.append((index, f"value: expected one of {TASK_VALUES[j.task]}, got {j.value!r}"))
            if not j.judge:
                problems.append((index, "judge: expected a fingerprint, got an empty value"))
            if j.score is not None and not 0.0 <= float(j.score) <= 1.0:
                problems.append((index, f"score: expected a number in [0, 1] or None, got {j.score!r}"))
            if j.unit_id not in known:
                known[j.unit_id] = bool(db["units"].count_where("unit_id = ?", [j.unit_id]))
            if not known[j.unit_id]:
                problems.append((index, f"unit: no unit {j.unit_id!r} in the store"))
        if problems:
            lines = "\n".join(f"  judgment {i + 1}: {m}" for i, m in problems)
            raise StoreError(f"{len(problems)} problem(s) in judgments, nothing written:\n{lines}", problems)
        rows = []
        for j in judgments:
            created = j.created_at or now_iso()
            rows.append({
                "unit_id": j.unit_id,
                "task": j.task,
                "judge": j.judge,
                "value": j.value,
                "score": None if j.score is None else float(j.score),
                "quote": j.quote,
                "quote_found": None if j.quote_found is None else int(bool(j.quote_found)),
                "repeat": int(j.repeat),
                "error": j.error,
                "created_at": created,
                "raw": json.dumps({**asdict(j), "created_at": created}, ensure_ascii=False, default=str),
            })
        db.table("judgments").insert_all(rows)
    return len(judgments)


def list_judgments(db: sqlite_utils.Database, *, task: str | None = None, judge: str | None = None) -> list[Judgment]:
    """The latest judgment per (unit, judge, repeat), in the order they were stored."""
    # raw SQL: "latest per (unit, judge, repeat)" is a correlated subquery, beyond rows_where
    sql = """
        SELECT j.* FROM judgments j
        WHERE j.id = (SELECT MAX(j2.id) FROM judgments j2
                      WHERE j2.unit_id = j.unit_id AND j2.judge = j.judge AND j2."repeat" = j."repeat")
    """
    params: list = []
    if task is not None:
        sql += " AND j.task = ?"
        params.append(task)
    if judge is not None:
        sql += " AND j.judge = ?"
        params.append(judge)
    return [_judgment_from_row(row) for row in db.query(sql + " ORDER BY j.id", params)]


def judge_fingerprints(db: sqlite_utils.Database) -> list[str]:
    """Every judge fingerprint with stored judgments, in order of first appearance."""
    # raw SQL: a GROUP BY, which sqlite-utils' table API does not offer
    return [row["judge"] for row in db.query("SELECT judge FROM judgments GROUP BY judge ORDER BY MIN(id)")]


def record_run(db: sqlite_utils.Database, run_dir: str | Path, summary: dict) -> None:
    """Record a scoring run: its folder, the judge fingerprint and item count from ``summary``.

    ``summary`` is the ``summary.json`` contract (it holds no secrets); it is stored as JSON.
    """
    judge = summary.get("judge")
    fingerprint = judge.get("fingerprint") if isinstance(judge, dict) else judge
    with write_tx(db):
        db.table("runs").insert({"path": str(run_dir), "created_at": now_iso(), "judge": fingerprint,
                           "n_items": summary.get("n_items"), "summary": json.dumps(summary, default=str)})


def list_runs(db: sqlite_utils.Database) -> list[dict]:
    """Recorded runs, oldest first: ``{"id", "path", "created_at", "judge", "n_items", "summary"}``."""
    rows = list(db["runs"].rows_where(order_by="id"))
    for row in rows:
        row["summary"] = json.loads(row["summary"]) if row["summary"] else None
    return rows
