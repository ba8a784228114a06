"""The append-only human label log, the current-label view, undo, and what to label next.

An annotator's current label for a unit is their latest non-retracted row (highest ``id``).
Editing appends a row; ``undo_last_label`` sets ``retracted_at`` on the annotator's latest
non-retracted row (the only update the table's triggers allow), so after an edit, undo brings
back the previous value, and the log keeps every row either way.
"""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import datetime

import sqlite_utils

from workbench.store.db import LabelError, now_iso, write_tx
from workbench.store.items import list_units
from workbench.store.judgments import list_judgments
from workbench.types import TASK_VALUES, Judgment, Label, Unit

ORDERS = ("sequential", "near_threshold", "helps_most", "random")

_CURRENT_SQL = """
    SELECT l.* FROM labels l
    WHERE l.retracted_at IS NULL
      AND l.id = (SELECT MAX(l2.id) FROM labels l2
                  WHERE l2.unit_id = l.unit_id AND l2.annotator = l.annotator AND l2.retracted_at IS NULL)
"""


def _label_from_row(row: dict) -> Label:
    return Label(row["unit_id"], row["task"], row["annotator"], row["value"], row["note"], row["created_at"])


def validate_labels(db: sqlite_utils.Database, labels: Sequence[Label]) -> list[tuple[int, str]]:
    """Check labels against ``TASK_VALUES`` and the stored units; returns ``(row_index, problem)``.

    A row is bad when its task is unknown, its value is not one of the task's two values, its
    annotator is empty, its unit does not exist or belongs to another task, or ``created_at``
    is given but is not ISO 8601. Every problem of every row is listed (empty list = all good).
    """
    problems: list[tuple[int, str]] = []
    unit_tasks: dict[str, str | None] = {}
    for index, label in enumerate(labels):
        if label.task not in TASK_VALUES:
            problems.append((index, f"task: expected one of {', '.join(TASK_VALUES)}, got {label.task!r}"))
        elif label.value not in TASK_VALUES[label.task]:
            allowed = " or ".join(repr(v) for v in TASK_VALUES[label.task])
            problems.append((index, f"value: expected {allowed} for task {label.task}, got {label.value!r}"))
        if not isinstance(label.annotator, str) or not label.annotator.strip():
            problems.append((index, f"annotator: expected a non-empty name, got {label.annotator!r}"))
        if label.unit_id not in unit_tasks:
            rows = list(db.query("SELECT task FROM units WHERE unit_id = ?", [label.unit_id]))
            unit_tasks[label.unit_id] = rows[0]["task"] if rows else None
        unit_task = unit_tasks[label.unit_id]
        if unit_task is None:
            problems.append((index, f"unit: no unit {label.unit_id!r} in the store (run `workbench labels add` first)"))
        elif unit_task != label.task:
            problems.append((index, f"task: unit {label.unit_id!r} belongs to task {unit_task}, got {label.task!r}"))
        if label.created_at is not None:
            try:
                datetime.fromisoformat(label.created_at)
            except (TypeError, ValueError):
                problems.append((index, f"created_at: expected an ISO 8601 time, got {label.created_at!r}"))
    return problems


def append_labels(
    db: sqlite_utils.Database,
    labels: Iterable[Label],
    *,
    retracted_at: Sequence[str | None] | None = None,
) -> int:
    """Append labels to the log in one transaction; returns how many rows were written.

    All or nothing: if any row is invalid (see ``validate_labels``) nothing is written and
    ``LabelError`` is raised listing every bad row (``problems`` holds ``(index, message)``).
    ``created_at`` is set to the current UTC time (ISO, microseconds) when ``None``. An empty
    note is stored as ``None``. ``retracted_at`` (one entry per label, used by import of a full
    history export) records rows that were already retracted.
    """
    labels = list(labels)
    if retracted_at is not None and len(retracted_at) != len(labels):
        raise ValueError("retracted_at must have one entry per label")
    with write_tx(db):
        problems = validate_labels(db, labels)
        if problems:
            lines = "\n".join(f"  row {i + 1}: {message}" for i, message in problems)
            raise LabelError(f"{len(problems)} problem(s) in labels, nothing written:\n{lines}", problems)
        for index, label in enumerate(labels):
            db.execute(
                """INSERT INTO labels (unit_id, task, annotator, value, note, created_at, retracted_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?)""",
                [
                    label.unit_id,
                    label.task,
                    label.annotator,
                    label.value,
                    label.note if label.note else None,
                    label.created_at or now_iso(),
                    None if retracted_at is None else retracted_at[index],
                ],
            )
    return len(labels)


def current_labels(db: sqlite_utils.Database, *, task: str | None = None) -> list[Label]:
    """The current label of every (unit, annotator): their latest non-retracted row, in log order."""
    sql, params = _CURRENT_SQL, []
    if task is not None:
        sql += " AND l.task = ?"
        params.append(task)
    return [_label_from_row(row) for row in db.query(sql + " ORDER BY l.id", params)]


def label_history(db: sqlite_utils.Database, unit_id: str) -> list[Label]:
    """Every row ever appended for a unit (retracted ones included), oldest first."""
    return [_label_from_row(row) for row in db.query("SELECT * FROM labels WHERE unit_id = ? ORDER BY id", [unit_id])]


def label_log(db: sqlite_utils.Database, *, current_only: bool = False, task: str | None = None) -> list[dict]:
    """Label rows joined with their unit, oldest first, for export.

    Each dict has ``id, task, item_id, claim_index, annotator, value, note, created_at,
    retracted_at``. With ``current_only`` only current labels (see ``current_labels``).
    """
    base = _CURRENT_SQL if current_only else "SELECT l.* FROM labels l WHERE 1 = 1"
    sql = (
        "SELECT x.id, x.task, u.item_id, u.claim_index, x.annotator, x.value, x.note, x.created_at, x.retracted_at "
        f"FROM ({base}) x JOIN units u ON u.unit_id = x.unit_id"
    )
    params: list = []
    if task is not None:
        sql += " WHERE x.task = ?"
        params.append(task)
    return list(db.query(sql + " ORDER BY x.id", params))


def undo_last_label(db: sqlite_utils.Database, annotator: str) -> Label | None:
    """Retract the annotator's latest non-retracted label and return it (``None`` if there is none).

    Nothing is deleted: the row gets ``retracted_at`` and stays in ``label_history``; the
    annotator's current label for that unit falls back to their previous row, if any. Calling it
    again retracts the row before that.
    """
    with write_tx(db):
        rows = list(
            db.query(
                "SELECT * FROM labels WHERE annotator = ? AND retracted_at IS NULL ORDER BY id DESC LIMIT 1",
                [annotator],
            )
        )
        if not rows:
            return None
        db.execute("UPDATE labels SET retracted_at = ? WHERE id = ?", [now_iso(), rows[0]["id"]])
    return _label_from_row(rows[0])


def _latest_score_rows(db: sqlite_utils.Database, task: str | None) -> Iterator[Judgment]:
    """The latest judgment per (unit, judge, repeat) that has a score and no error."""
    return (j for j in list_judgments(db, task=task) if j.score is not None and j.error is None)


def _latest_scores(db: sqlite_utils.Database, task: str | None) -> dict[str, float]:
    """Mean over judges and repeats of the latest non-error score per unit."""
    sums: dict[str, list[float]] = defaultdict(list)
    for row in _latest_score_rows(db, task):
        sums[row.unit_id].append(float(row.score))
    return {unit_id: sum(values) / len(values) for unit_id, values in sums.items()}


def _latest_scores_by_judge(db: sqlite_utils.Database, task: str | None) -> dict[str, dict[str, float]]:
    """``{judge: {unit_id: mean over repeats of the latest non-error score}}``."""
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in _latest_score_rows(db, task):
        values[row.judge][row.unit_id].append(float(row.score))
    return {judge: {u: sum(v) / len(v) for u, v in units.items()} for judge, units in values.items()}


def ordered_units(
    db: sqlite_utils.Database,
    *,
    task: str | None = None,
    order: str = "sequential",
    threshold: float = 0.5,
    rng_seed: int = 0,
) -> list[Unit]:
    """Units (of ``task``, if given) in the order ``next_unit_for`` offers them.

    ``order``: ``sequential`` (``list_units`` order); ``near_threshold`` (smallest
    ``|score - threshold|`` first, where score is the mean of the latest judgments per judge and
    repeat, errors left out; units without a judgment come last, in sequential order; ties keep
    sequential order); ``helps_most`` (``workbench.stats.active.priority_order`` with the two
    judges that scored the most units: where they disagree about ``threshold`` first, then
    nearest the threshold, unjudged last); ``random`` (one fixed shuffle of all units from
    ``rng_seed``, so the order stays the same while units get labelled).
    """
    if order not in ORDERS:
        raise ValueError(f"order: expected one of {ORDERS}, got {order!r}")
    units = list_units(db, task=task)
    if order == "random":
        random.Random(rng_seed).shuffle(units)
    elif order == "near_threshold":
        scores = _latest_scores(db, task)
        position = {unit.unit_id: i for i, unit in enumerate(units)}
        units.sort(
            key=lambda u: (0, abs(scores[u.unit_id] - threshold), position[u.unit_id])
            if u.unit_id in scores
            else (1, 0.0, position[u.unit_id])
        )
    elif order == "helps_most":
        from workbench.stats.active import priority_order

        by_judge = sorted(_latest_scores_by_judge(db, task).values(), key=len, reverse=True)
        first = by_judge[0] if by_judge else {}
        second = [by_judge[1].get(u.unit_id) for u in units] if len(by_judge) > 1 else None
        units = [units[i] for i in priority_order([first.get(u.unit_id) for u in units], threshold=threshold,
                                                  second_scores=second)]
    return units


def next_unit_for(
    db: sqlite_utils.Database,
    annotator: str,
    *,
    task: str | None = None,
    overlap: int = 1,
    order: str = "sequential",
    threshold: float = 0.5,
    rng_seed: int = 0,
    exclude: Collection[str] = (),
) -> Unit | None:
    """The next unit this annotator should label, or ``None`` when nothing is left.

    Candidates are units (of ``task``, if given) that the annotator has no current label on,
    that fewer than ``overlap`` distinct annotators currently label, and whose id is not in
    ``exclude`` (e.g. units skipped in this session). So work resumes where the annotator
    stopped, an undone label makes its unit available again, and ``overlap=2`` hands each unit
    to two people. Candidates come in ``ordered_units`` order (``sequential``,
    ``near_threshold`` around ``threshold``, or ``random`` from ``rng_seed``).
    """
    if overlap < 1:
        raise ValueError(f"overlap: expected at least 1, got {overlap}")
    units = ordered_units(db, task=task, order=order, threshold=threshold, rng_seed=rng_seed)
    current = current_labels(db, task=task)
    mine = {label.unit_id for label in current if label.annotator == annotator}
    counts = Counter(unit_id for unit_id, _ in {(l.unit_id, l.annotator) for l in current})
    excluded = set(exclude)
    for unit in units:
        if unit.unit_id not in mine and unit.unit_id not in excluded and counts[unit.unit_id] < overlap:
            return unit
    return None


def progress(db: sqlite_utils.Database, annotator: str | None = None, *, task: str | None = None) -> dict:
    """Labelling progress over units (of ``task``, if given), counting current labels only.

    Returns ``{"units", "labelled_by_annotator", "labelled_any", "per_task", "per_annotator"}``:
    ``labelled_by_annotator`` is the number of units ``annotator`` currently labels (``None``
    when no annotator is given); ``labelled_any`` the units with at least one current label;
    ``per_task`` maps each task with units to the same three counts; ``per_annotator`` maps every
    annotator to the number of units they currently label.
    """
    units = list_units(db, task=task)
    current = current_labels(db, task=task)
    by_unit: dict[str, set[str]] = defaultdict(set)
    for label in current:
        by_unit[label.unit_id].add(label.annotator)
    per_task: dict[str, dict] = {}
    for unit in units:
        entry = per_task.setdefault(
            unit.task, {"units": 0, "labelled_by_annotator": None if annotator is None else 0, "labelled_any": 0}
        )
        entry["units"] += 1
        if by_unit.get(unit.unit_id):
            entry["labelled_any"] += 1
        if annotator is not None and annotator in by_unit.get(unit.unit_id, ()):
            entry["labelled_by_annotator"] += 1
    per_annotator: Counter = Counter()
    for annotators in by_unit.values():
        per_annotator.update(annotators)
    return {
        "units": len(units),
        "labelled_by_annotator": None
        if annotator is None
        else sum(1 for unit in units if annotator in by_unit.get(unit.unit_id, ())),
        "labelled_any": sum(1 for unit in units if by_unit.get(unit.unit_id)),
        "per_task": per_task,
        "per_annotator": dict(sorted(per_annotator.items())),
    }
