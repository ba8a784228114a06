"""The append-only human label log, the current-label view, undo, and what to label next.

An annotator's current label for a unit is their latest non-retracted row (highest ``id``).
Editing appends a row; ``undo_last_label`` sets ``retracted_at`` on the annotator's latest
non-retracted row (the only update the table's triggers allow), so after an edit, undo brings
back the previous value, and the log keeps every row either way.

Labels on a stale unit (its item's text changed since; ``workbench.store.versions``) stay in the
log and in exports, but are left out of ``current_labels`` and ``progress`` unless asked for, so
they are never counted for the new text.

``next_unit_for`` with ``lease_seconds`` hands out units with a lease (``leases`` table: unit,
annotator, expiry), so concurrent annotators with overlap N get disjoint units until a unit has
N labels or a lease expires.
"""
from __future__ import annotations

import json
import random
import time
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from workbench.store.base import LabelError, now_iso, write_tx
from workbench.store.items import _QUEUE_ORDER, _UNIT_COLUMNS, _unit_from_row, list_units
from workbench.store.judgments import list_judgments
from workbench.types import TASK_VALUES, Judgment, Label, Unit

if TYPE_CHECKING:
    import sqlite_utils  # the label store's API; imported when a store is opened (it imports pandas)

ORDERS = ("sequential", "near_threshold", "helps_most", "random")


class PriorityOrder(Protocol):
    """The ``helps_most`` order, supplied by the caller (``workbench.stats.active.priority_order``).

    Given the first judge's score per unit (``None`` = not judged), the threshold and optionally
    a second judge's scores on the same units, returns a permutation of ``range(len(scores))``.
    The store holds no ordering rule of its own, so it need not import the statistics.
    """

    def __call__(self, scores: Sequence[float | None], *, threshold: float,
                 second_scores: Sequence[float | None] | None = None) -> list[int]: ...


_CURRENT_SQL = """
    SELECT l.* FROM labels l
    WHERE l.retracted_at IS NULL
      AND l.id = (SELECT MAX(l2.id) FROM labels l2
                  WHERE l2.unit_id = l.unit_id AND l2.annotator = l.annotator AND l2.retracted_at IS NULL)
"""
_LIVE_UNIT = " AND l.unit_id IN (SELECT unit_id FROM units WHERE stale_at IS NULL)"


def _label_from_row(row: dict) -> Label:
    return Label(row["unit_id"], row["task"], row["annotator"], row["value"], row["note"], row["created_at"])


def validate_labels(db: sqlite_utils.Database, labels: Sequence[Label], *,
                    allow_stale: bool = False) -> list[tuple[int, str]]:
    """Check labels against ``TASK_VALUES`` and the stored units; returns ``(row_index, problem)``.

    A row is bad when its task is unknown, its value is not one of the task's two values, its
    annotator is empty, its unit does not exist or belongs to another task, its unit is stale
    (the text changed since; allowed with ``allow_stale``, for imports matched by text hash), or
    ``created_at`` is given but is not ISO 8601. Every problem of every row is listed (empty
    list = all good).
    """
    problems: list[tuple[int, str]] = []
    unit_tasks: dict[str, str | None] = {}
    unit_stale: dict[str, bool] = {}
    for index, label in enumerate(labels):
        if label.task not in TASK_VALUES:
            problems.append((index, f"task: expected one of {', '.join(TASK_VALUES)}, got {label.task!r}"))
        elif label.value not in TASK_VALUES[label.task]:
            allowed = " or ".join(repr(v) for v in TASK_VALUES[label.task])
            problems.append((index, f"value: expected {allowed} for task {label.task}, got {label.value!r}"))
        if not isinstance(label.annotator, str) or not label.annotator.strip():
            problems.append((index, f"annotator: expected a non-empty name, got {label.annotator!r}"))
        if label.unit_id not in unit_tasks:
            rows = list(db["units"].rows_where("unit_id = ?", [label.unit_id], select="task, stale_at"))
            unit_tasks[label.unit_id] = rows[0]["task"] if rows else None
            unit_stale[label.unit_id] = bool(rows) and rows[0]["stale_at"] is not None
        unit_task = unit_tasks[label.unit_id]
        if unit_task is None:
            problems.append((index, f"unit: no unit {label.unit_id!r} in the store (run `workbench labels add` first)"))
        elif unit_task != label.task:
            problems.append((index, f"task: unit {label.unit_id!r} belongs to task {unit_task}, got {label.task!r}"))
        elif unit_stale[label.unit_id] and not allow_stale:
            problems.append((index, f"unit: {label.unit_id!r} is stale (its text changed since it was shown); "
                                    "label the current version instead"))
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
    allow_stale: bool = False,
) -> int:
    """Append labels to the log in one transaction; returns how many rows were written.

    All or nothing: if any row is invalid (see ``validate_labels``) nothing is written and
    ``LabelError`` is raised listing every bad row (``problems`` holds ``(index, message)``).
    ``created_at`` is set to the current UTC time (ISO, microseconds) when ``None``. An empty
    note is stored as ``None``. ``retracted_at`` (one entry per label, used by import of a full
    history export) records rows that were already retracted. ``allow_stale``: see
    ``validate_labels``. Each label ends its annotator's lease on the unit.
    """
    labels = list(labels)
    if retracted_at is not None and len(retracted_at) != len(labels):
        raise ValueError("retracted_at must have one entry per label")
    with write_tx(db):
        problems = validate_labels(db, labels, allow_stale=allow_stale)
        if problems:
            lines = "\n".join(f"  row {i + 1}: {message}" for i, message in problems)
            raise LabelError(f"{len(problems)} problem(s) in labels, nothing written:\n{lines}", problems)
        db.table("labels").insert_all(
            {
                "unit_id": label.unit_id,
                "task": label.task,
                "annotator": label.annotator,
                "value": label.value,
                "note": label.note if label.note else None,
                "created_at": label.created_at or now_iso(),
                "retracted_at": None if retracted_at is None else retracted_at[index],
            }
            for index, label in enumerate(labels)
        )
        leases = db.table("leases")
        for label in labels:
            leases.delete_where("unit_id = ? AND annotator = ?", [label.unit_id, label.annotator])
    return len(labels)


def current_labels(db: sqlite_utils.Database, *, task: str | None = None,
                   include_stale: bool = False) -> list[Label]:
    """The current label of every (unit, annotator): their latest non-retracted row, in log order.

    Labels on stale units (text changed since) are left out unless ``include_stale``.
    """
    # raw SQL here and in ``label_log``: "latest non-retracted row per (unit, annotator)" is a
    # correlated subquery, and the log export joins units; sqlite-utils has neither
    sql, params = _CURRENT_SQL + ("" if include_stale else _LIVE_UNIT), []
    if task is not None:
        sql += " AND l.task = ?"
        params.append(task)
    return [_label_from_row(row) for row in db.query(sql + " ORDER BY l.id", params)]


def label_history(db: sqlite_utils.Database, unit_id: str) -> list[Label]:
    """Every row ever appended for a unit (retracted ones included), oldest first."""
    return [_label_from_row(row) for row in db["labels"].rows_where("unit_id = ?", [unit_id], order_by="id")]


def label_log(db: sqlite_utils.Database, *, current_only: bool = False, task: str | None = None,
              include_stale: bool = True) -> list[dict]:
    """Label rows joined with their unit, oldest first, for export.

    Each dict has ``id, task, item_id, claim_index, annotator, value, note, created_at,
    retracted_at, unit_id, text, text_hash, stale`` (``text`` is the unit's text: claim, answer
    or passage; ``stale`` is 1 when the item's text changed since). With ``current_only`` only
    current labels (see ``current_labels``); ``include_stale=False`` leaves out stale units.
    """
    base = _CURRENT_SQL if current_only else "SELECT l.* FROM labels l WHERE 1 = 1"
    sql = (
        "SELECT x.id, x.task, u.item_id, u.claim_index, x.annotator, x.value, x.note, x.created_at, x.retracted_at, "
        "u.unit_id, u.text, u.text_hash, (u.stale_at IS NOT NULL) AS stale "
        f"FROM ({base}) x JOIN units u ON u.unit_id = x.unit_id WHERE 1 = 1"
    )
    params: list = []
    if not include_stale:
        sql += " AND u.stale_at IS NULL"
    if task is not None:
        sql += " AND x.task = ?"
        params.append(task)
    return list(db.query(sql + " ORDER BY x.id", params))


def undo_last_label(db: sqlite_utils.Database, annotator: str) -> Label | None:
    """Retract the annotator's latest non-retracted label and return it (``None`` if there is none).

    Nothing is deleted: the row gets ``retracted_at`` and stays in ``label_history``; the
    annotator's current label for that unit falls back to their previous row, if any. Calling it
    again retracts the row before that.
    """
    with write_tx(db):
        rows = list(db["labels"].rows_where("annotator = ? AND retracted_at IS NULL", [annotator],
                                            order_by="id DESC", limit=1))
        if not rows:
            return None
        db.table("labels").update(rows[0]["id"], {"retracted_at": now_iso()})
    return _label_from_row(rows[0])


def _latest_score_rows(db: sqlite_utils.Database, task: str | None) -> Iterator[tuple[Judgment, float]]:
    """The latest judgment per (unit, judge, repeat) that has a score and no error, with that score."""
    return ((j, j.score) for j in list_judgments(db, task=task) if j.score is not None and j.error is None)


def _latest_scores(db: sqlite_utils.Database, task: str | None) -> dict[str, float]:
    """Mean over judges and repeats of the latest non-error score per unit."""
    sums: dict[str, list[float]] = defaultdict(list)
    for row, score in _latest_score_rows(db, task):
        sums[row.unit_id].append(score)
    return {unit_id: sum(values) / len(values) for unit_id, values in sums.items()}


def _latest_scores_by_judge(db: sqlite_utils.Database, task: str | None) -> dict[str, dict[str, float]]:
    """``{judge: {unit_id: mean over repeats of the latest non-error score}}``."""
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row, score in _latest_score_rows(db, task):
        values[row.judge][row.unit_id].append(score)
    return {judge: {u: sum(v) / len(v) for u, v in units.items()} for judge, units in values.items()}


def ordered_units(
    db: sqlite_utils.Database,
    *,
    task: str | None = None,
    order: str = "sequential",
    threshold: float = 0.5,
    rng_seed: int = 0,
    priority: PriorityOrder | None = None,
) -> list[Unit]:
    """Units (of ``task``, if given) in the order ``next_unit_for`` offers them.

    ``order``: ``sequential`` (``list_units`` order); ``near_threshold`` (smallest
    ``|score - threshold|`` first, where score is the mean of the latest judgments per judge and
    repeat, errors left out; units without a judgment come last, in sequential order; ties keep
    sequential order); ``helps_most`` (``priority``, the caller's ``PriorityOrder``, e.g.
    ``workbench.stats.active.priority_order``, given the scores of the two judges that scored the
    most units: where they disagree about ``threshold`` first, then nearest the threshold,
    unjudged last); ``random`` (one fixed shuffle of all units from ``rng_seed``, so the order
    stays the same while units get labelled).

    Raises:
        ValueError: an unknown ``order``, or ``helps_most`` without ``priority``.
    """
    _check_order(order, priority)
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
        assert priority is not None  # _check_order
        by_judge = sorted(_latest_scores_by_judge(db, task).values(), key=len, reverse=True)
        first = by_judge[0] if by_judge else {}
        second = [by_judge[1].get(u.unit_id) for u in units] if len(by_judge) > 1 else None
        units = [units[i] for i in priority([first.get(u.unit_id) for u in units], threshold=threshold,
                                            second_scores=second)]
    return units


def _check_order(order: str, priority: PriorityOrder | None) -> None:
    if order not in ORDERS:
        raise ValueError(f"order: expected one of {ORDERS}, got {order!r}")
    if order == "helps_most" and priority is None:
        raise ValueError("order 'helps_most' needs priority= (e.g. workbench.stats.active.priority_order)")


LEASE_SECONDS = 600.0

# a unit this annotator may take: live, of the task, not labelled by them, fewer than ``overlap``
# people holding it (current labels by anyone plus unexpired leases of others), not excluded
_ELIGIBLE = """
    u.stale_at IS NULL
    AND (:task IS NULL OR u.task = :task)
    AND u.unit_id NOT IN (SELECT value FROM json_each(:exclude))
    AND NOT EXISTS (SELECT 1 FROM labels l
                    WHERE l.unit_id = u.unit_id AND l.annotator = :annotator AND l.retracted_at IS NULL)
    AND (SELECT COUNT(DISTINCT l.annotator) FROM labels l WHERE l.unit_id = u.unit_id AND l.retracted_at IS NULL)
        + (SELECT COUNT(*) FROM leases s
           WHERE s.unit_id = u.unit_id AND s.annotator <> :annotator AND s.expires_at > :now) < :overlap
"""


def _first_eligible(db: sqlite_utils.Database, params: dict, order: str, threshold: float,
                    rng_seed: int, priority: PriorityOrder | None) -> Unit | None:
    # raw SQL: the eligibility test is correlated subqueries over labels and leases, and the
    # sequential queue must be read in ``units_queue`` index order with LIMIT 1 to stay fast
    if order == "sequential":  # read in index order (units_queue); stops at the first eligible unit
        task_filter = "u.task = :task AND" if params["task"] is not None else ""
        rows = list(db.query(f"SELECT {_UNIT_COLUMNS} FROM units u "
                             f"WHERE {task_filter} {_ELIGIBLE} {_QUEUE_ORDER} LIMIT 1", params))
        return _unit_from_row(rows[0]) if rows else None
    eligible = {row["unit_id"] for row in db.query(f"SELECT u.unit_id FROM units u WHERE {_ELIGIBLE}", params)}
    if not eligible:
        return None
    for unit in ordered_units(db, task=params["task"], order=order, threshold=threshold, rng_seed=rng_seed,
                              priority=priority):
        if unit.unit_id in eligible:
            return unit
    return None


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
    lease_seconds: float | None = None,
    now: float | None = None,
    priority: PriorityOrder | None = None,
) -> Unit | None:
    """The next unit this annotator should label, or ``None`` when nothing is left.

    Candidates are live units (of ``task``, if given) that the annotator has no current label
    on, that fewer than ``overlap`` distinct annotators currently label or hold a lease on, and
    whose id is not in ``exclude`` (e.g. units skipped in this session). So work resumes where
    the annotator stopped, an undone label makes its unit available again, and ``overlap=2``
    hands each unit to two people. Candidates come in ``ordered_units`` order (``sequential``,
    ``near_threshold`` around ``threshold``, ``helps_most`` by the caller's ``priority``, or
    ``random`` from ``rng_seed``).

    With ``lease_seconds`` the call reserves the unit it returns: in one write transaction it
    drops expired leases, gives back the annotator's own unexpired lease when that unit is still
    a candidate (so re-asking returns the same unit and extends the lease), else leases the first
    candidate for ``lease_seconds`` and releases the annotator's other leases in the task.
    Concurrent callers queue on the write lock, so with ``overlap=1`` they get disjoint units.
    ``now`` (epoch seconds) is for tests; default ``time.time()``.
    """
    if overlap < 1:
        raise ValueError(f"overlap: expected at least 1, got {overlap}")
    _check_order(order, priority)
    now = time.time() if now is None else now
    params = {"task": task, "annotator": annotator, "overlap": int(overlap), "now": now,
              "exclude": json.dumps(sorted(set(exclude)))}
    if lease_seconds is None:
        return _first_eligible(db, params, order, threshold, rng_seed, priority)
    # ``BEGIN IMMEDIATE`` (write_tx): the lease is read and taken under one write lock, so two
    # annotators asking at once cannot both get the same unit
    with write_tx(db):
        leases = db.table("leases")
        leases.delete_where("expires_at <= ?", [now])
        held = list(db.query(
            f"SELECT {_UNIT_COLUMNS} FROM leases s JOIN units u ON u.unit_id = s.unit_id "
            f"WHERE s.annotator = :annotator AND {_ELIGIBLE} ORDER BY s.expires_at DESC LIMIT 1", params))
        unit = (_unit_from_row(held[0]) if held
                else _first_eligible(db, params, order, threshold, rng_seed, priority))
        leases.delete_where("annotator = ? AND (? IS NULL OR task = ?) AND unit_id IS NOT ?",
                            [annotator, task, task, None if unit is None else unit.unit_id])
        if unit is not None:
            leases.upsert({"unit_id": unit.unit_id, "annotator": annotator, "task": unit.task,
                           "expires_at": now + float(lease_seconds)}, pk=("unit_id", "annotator"))
    return unit


def release_lease(db: sqlite_utils.Database, annotator: str, unit_id: str | None = None) -> int:
    """End the annotator's lease on ``unit_id`` (all their leases when ``None``); returns how many."""
    where, args = "annotator = ? AND (? IS NULL OR unit_id = ?)", [annotator, unit_id, unit_id]
    with write_tx(db):
        count = db["leases"].count_where(where, args)
        db.table("leases").delete_where(where, args)
    return count


def active_leases(db: sqlite_utils.Database, *, now: float | None = None) -> list[dict]:
    """Unexpired leases: ``{"unit_id", "annotator", "task", "expires_at"}`` (epoch seconds)."""
    now = time.time() if now is None else now
    return list(db["leases"].rows_where("expires_at > ?", [now], select="unit_id, annotator, task, expires_at",
                                        order_by="expires_at"))


def progress(db: sqlite_utils.Database, annotator: str | None = None, *, task: str | None = None) -> dict:
    """Labelling progress over live units (of ``task``, if given), counting current labels only.

    Returns ``{"units", "labelled_by_annotator", "labelled_any", "per_task", "per_annotator"}``:
    ``labelled_by_annotator`` is the number of units ``annotator`` currently labels (``None``
    when no annotator is given); ``labelled_any`` the units with at least one current label;
    ``per_task`` maps each task with units to the same three counts; ``per_annotator`` maps every
    annotator to the number of units they currently label. Stale units and their labels are not
    counted. Each count is one indexed aggregate query (raw SQL: sqlite-utils has no
    aggregate or join API; the same holds for ``annotator_progress``, ``unit_quotes`` and
    ``stale_label_count`` below).
    """
    where_task = "" if task is None else " AND u.task = :task"
    params = {"task": task, "annotator": annotator}
    live = "FROM labels l JOIN units u ON u.unit_id = l.unit_id WHERE l.retracted_at IS NULL AND u.stale_at IS NULL"
    per_task: dict[str, dict] = {
        row["task"]: {"units": row["n"], "labelled_by_annotator": None if annotator is None else 0, "labelled_any": 0}
        for row in db.query(f"SELECT u.task, COUNT(*) AS n FROM units u WHERE u.stale_at IS NULL{where_task} "
                            "GROUP BY u.task", params)
    }
    for row in db.query(f"SELECT u.task, COUNT(DISTINCT l.unit_id) AS n {live}{where_task} GROUP BY u.task", params):
        per_task[row["task"]]["labelled_any"] = row["n"]
    if annotator is not None:
        for row in db.query(f"SELECT u.task, COUNT(DISTINCT l.unit_id) AS n {live} AND l.annotator = :annotator"
                            f"{where_task} GROUP BY u.task", params):
            per_task[row["task"]]["labelled_by_annotator"] = row["n"]
    per_annotator = {row["annotator"]: row["n"] for row in db.query(
        f"SELECT l.annotator, COUNT(DISTINCT l.unit_id) AS n {live}{where_task} GROUP BY l.annotator "
        "ORDER BY l.annotator", params)}
    per_task = {t: per_task[t] for t in sorted(per_task, key=lambda t: list(TASK_VALUES).index(t)
                                                if t in TASK_VALUES else len(TASK_VALUES))}
    return {
        "units": sum(entry["units"] for entry in per_task.values()),
        "labelled_by_annotator": None if annotator is None
        else sum(entry["labelled_by_annotator"] for entry in per_task.values()),
        "labelled_any": sum(entry["labelled_any"] for entry in per_task.values()),
        "per_task": per_task,
        "per_annotator": per_annotator,
    }


def annotator_progress(db: sqlite_utils.Database, annotator: str, *, task: str | None = None) -> tuple[int, int]:
    """``(units this annotator currently labels, live units)``, of ``task`` if given; two indexed counts.

    The cheap form of ``progress`` for the Label page's progress bar; stale units are not counted.
    """
    where_task = "" if task is None else " AND u.task = :task"
    params = {"task": task, "annotator": annotator}
    total = db.execute(f"SELECT COUNT(*) FROM units u WHERE u.stale_at IS NULL{where_task}", params).fetchone()[0]
    done = db.execute(
        "SELECT COUNT(DISTINCT l.unit_id) FROM labels l JOIN units u ON u.unit_id = l.unit_id "
        f"WHERE l.annotator = :annotator AND l.retracted_at IS NULL AND u.stale_at IS NULL{where_task}"
        + ("" if task is None else " AND l.task = :task"), params).fetchone()[0]
    return done, total


def unit_quotes(db: sqlite_utils.Database, unit_id: str) -> list[str]:
    """Quotes of the latest judgment per (judge, repeat) on one unit, oldest judge first (indexed)."""
    rows = db.query(
        """SELECT j.quote FROM judgments j
           WHERE j.unit_id = :unit AND j.quote IS NOT NULL AND j.quote <> ''
             AND j.id = (SELECT MAX(j2.id) FROM judgments j2
                         WHERE j2.unit_id = :unit AND j2.judge = j.judge AND j2."repeat" = j."repeat")
           ORDER BY j.id""", {"unit": unit_id})
    return [row["quote"] for row in rows]


def stale_label_count(db: sqlite_utils.Database) -> int:
    """How many current (non-retracted) label rows sit on stale units (text changed since)."""
    return db.execute("SELECT COUNT(*) FROM labels l JOIN units u ON u.unit_id = l.unit_id "
                      "WHERE l.retracted_at IS NULL AND u.stale_at IS NOT NULL").fetchone()[0]
