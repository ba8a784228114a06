"""Where a run has no signal: placeholder scores and scores whose calibration does not beat chance.

Two checks, both ending in plain warnings for ``workbench score`` (and fields in ``summary.json``):

1. **Placeholders declared by the judge** (``judges.base.DeclaresScores``): the offline judge's
   answer relevance is a baseline with no useful signal. :func:`placeholder_fields` records them
   in the summary as ``"placeholders": ["answer_relevance"]`` plus ``"placeholder_notes"``
   (``{score: note with the measured AUC}``).
2. **Calibration against the label store** (when one is given): for each score a pass rate or
   the quadrant rests on (faithfulness, answer relevance), the judge's stored continuous scores
   are compared with the human majority labels of the same task (``stats.calibration.score_auc``,
   a Mann-Whitney test, nothing fitted). A score whose AUC is not significantly above 0.5
   (p >= 0.05, or AUC <= 0.5) does not beat chance.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.judges.base import placeholder_scores

#: Summary score -> the label-store task whose human labels judge it.
SCORE_TASKS = {"faithfulness": "answer_faithfulness", "answer_relevance": "answer_relevance"}
#: Fewer labelled units than this: the calibration check is skipped (and says so).
MIN_UNITS = 10
ALPHA = 0.05


def placeholder_fields(judge: object) -> dict[str, Any]:
    """``{"placeholders": [score, ...], "placeholder_notes": {score: note}}`` for ``judge`` (empty
    list and dict when it declares no placeholder, or declares nothing)."""
    declared = placeholder_scores(judge)
    return {"placeholders": list(declared), "placeholder_notes": {k: d.note for k, d in declared.items()}}


def _rests_on(summary: dict, score: str) -> list[str]:
    """What in ``summary`` is built on ``score``: its pass rate and the quadrant, when computed."""
    if not summary.get(score):
        return []
    return [f"the {score.replace('_', ' ')} pass rate", "the quadrant"]


def placeholder_warnings(summary: dict) -> list[str]:
    """One warning per placeholder score that a pass rate or the quadrant rests on."""
    notes = summary.get("placeholder_notes") or {}
    out = []
    for score in summary.get("placeholders") or []:
        rests = _rests_on(summary, score)
        if rests:
            out.append(f"warning: {' and '.join(rests)} rest on {score}, which this judge declares a PLACEHOLDER, "
                       f"not a measurement ({notes.get(score, 'no note')}); do not read them as findings")
    return out


def calibration_checks(db, fingerprint: str) -> dict[str, dict[str, Any]]:
    """Per score in :data:`SCORE_TASKS`: does the judge's stored score separate the human classes?

    Compares, unit by unit, the judge's continuous score (judgments stored under
    ``fingerprint``) with the human majority label (positive = first value of the task). Returns
    ``{score: {"n", "auc", "p_value", "beats_chance"}}``; ``beats_chance`` is ``None`` (and
    ``auc``/``p_value`` ``None``) when fewer than :data:`MIN_UNITS` units, or one human class only.
    """
    from workbench import store
    from workbench.calibration.agreement import human_majority
    from workbench.stats.calibration import score_auc
    from workbench.types import TASK_VALUES

    out = {}
    for score, task in SCORE_TASKS.items():
        majority, _ = human_majority(db, task)
        verdicts = {j.unit_id: j.score for j in store.list_judgments(db, task=task, judge=fingerprint)
                    if j.repeat == 0 and j.error is None and j.score is not None}
        units = [u for u in majority if u in verdicts]
        positive = [majority[u] == TASK_VALUES[task][0] for u in units]
        auc = p_value = beats = None
        if len(units) >= MIN_UNITS and 0 < sum(positive) < len(units):
            auc, p_value = score_auc([verdicts[u] for u in units], positive)
            beats = auc is not None and auc > 0.5 and p_value is not None and p_value < ALPHA
        out[score] = {"n": len(units), "auc": auc, "p_value": p_value, "beats_chance": beats}
    return out


def calibration_warnings(summary: dict, checks: dict[str, dict[str, Any]], db_label: str) -> list[str]:
    """Warnings for scores a pass rate or the quadrant rests on whose calibration does not beat chance."""
    out = []
    for score, check in checks.items():
        rests = _rests_on(summary, score)
        if rests and check["beats_chance"] is False:
            out.append(f"warning: {' and '.join(rests)} rest on {score}, whose calibration on {check['n']} human "
                       f"labels in {db_label} does not beat chance (AUC {check['auc']:.2f}, Mann-Whitney "
                       f"p = {check['p_value']:.2g})")
    return out


def no_signal_warnings(summary: dict, db_path: str | Path | None,
                       fingerprint: str) -> tuple[list[str], dict[str, dict[str, Any]] | None]:
    """All warnings for one scored run, and the calibration checks (``None`` without a store).

    Declared placeholders first, then (with a label store) scores whose calibration does not beat
    chance (:func:`calibration_checks`). A store that cannot be read gives one warning saying so.
    """
    out = placeholder_warnings(summary)
    if db_path is None:
        return out, None
    import sqlite3

    from workbench import store
    from workbench.store import StoreError

    try:
        db = store.open_db(db_path)
        try:
            checks = calibration_checks(db, fingerprint)
        finally:
            db.conn.close()
    except (StoreError, sqlite3.DatabaseError) as exc:
        return [*out, f"warning: {db_path}: cannot check calibration against the label store ({exc})"], None
    return out + calibration_warnings(summary, checks, str(db_path)), checks
