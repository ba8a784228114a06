"""Corrected pass rates: the judge's raw rate on a scored run, corrected for the judge's own errors.

For each rate the judge produces on a scored eval set (``RATES``), compare the judge against the
human majority label of the same task in the label store:

=====================  =============================================  =====================================
rate                   judge positive (scored population)             human positive (task: value)
=====================  =============================================  =====================================
``faithfulness_pass``  ``faithfulness >= threshold`` (scored items)   ``answer_faithfulness: faithful``
``relevance_pass``     ``answer_relevance >= threshold``              ``answer_relevance: relevant``
``abstention_rate``    ``abstained`` on unanswerable items            ``abstention: refused``
``false_refusal_rate`` ``abstained`` on answerable items              ``abstention: refused``
=====================  =============================================  =====================================

Two corrections sit beside the raw rate:

* **Rogan-Gladen** (``workbench.stats.rogan_gladen_ci``): sensitivity and specificity of the judge
  at the SAME threshold, measured on every unit with a human majority label and a judge verdict
  (from the run's own record when the labelled item is part of this run, else from the store's
  judgments by the run's judge fingerprint); the bootstrap interval resamples both the labelled
  units and the scored set. For both abstention rates the judge's refusal detection is measured
  on all labelled ``abstention`` units (answerable or not): refusal detection reads the answer
  text, not the answerability flag.
* **PPI** (``workbench.stats.ppi_mean``): when items of this run have human labels, the judge's
  rate on the run's other items plus the mean human-minus-judge difference on the labelled
  ones. Valid when the labelled items are a random sample of the run; an order that picks units
  near the threshold (``priority_order``) biases it.

Bounded rule: every reported rate and interval lies in [0, 1]. The unclipped estimates are kept
beside them (``rogan_gladen_unclipped``, ``ppi_unclipped``) and ``clipped`` says whether either
was moved to the boundary; ``unstable`` is true when the judge's sensitivity + specificity - 1
(``youden_j``) is below ``UNSTABLE_YOUDEN`` (0.2), where the correction amplifies every error
at least five times. Both cases add a sentence to ``note``.

Degenerate rule (one rule): a number that cannot be computed is ``None`` and ``note`` says why
(no labels, one human class only, sensitivity + specificity <= 1, nothing scored, fewer than
2 labelled or unlabelled items for PPI). ``note`` is ``None`` when there is nothing to say.

``workbench.stats.active.priority_order`` is the "label where it helps most" queue order used by
the label page (store order ``helps_most``) and ``bench/label_efficiency.py``.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from workbench.stats import UNSTABLE_YOUDEN, ppi_mean, rogan_gladen_ci, rogan_gladen_unclipped
from workbench.types import TASK_VALUES, EvalItem, ItemScore, Thresholds

#: rate key -> (human task, record field holding the judge's score/verdict, answerable filter).
RATES: dict[str, tuple[str, str, bool | None]] = {
    "faithfulness_pass": ("answer_faithfulness", "faithfulness", None),
    "relevance_pass": ("answer_relevance", "answer_relevance", None),
    "abstention_rate": ("abstention", "abstained", False),
    "false_refusal_rate": ("abstention", "abstained", True),
}

#: rate key -> how tables name it (CLI table, HTML report).
RATE_LABELS = {"faithfulness_pass": "faithfulness pass", "relevance_pass": "relevance pass",
               "abstention_rate": "abstention rate", "false_refusal_rate": "false-refusal rate"}


def _threshold(rate: str, thresholds: Thresholds) -> float | None:
    field = RATES[rate][1]
    if field == "faithfulness":
        return thresholds.faithfulness
    if field == "answer_relevance":
        return thresholds.answer_relevance
    return None


def _judge_value(record: ItemScore, field: str) -> float | bool | None:
    """The field of ``record`` that :data:`RATES` names."""
    if field == "faithfulness":
        return record.faithfulness
    if field == "answer_relevance":
        return record.answer_relevance
    return record.abstained


def record_positive(record: ItemScore, rate: str, thresholds: Thresholds) -> bool | None:
    """The judge's verdict on one scored item for ``rate`` (``None`` = not scored / not in population).

    Faithfulness and relevance: score at or above its threshold; abstention rates: ``abstained``,
    restricted to unanswerable (``abstention_rate``) or answerable (``false_refusal_rate``) items.
    """
    _, field, answerable = RATES[rate]
    value = _judge_value(record, field)
    if value is None:
        return None
    if answerable is not None:
        if bool(record.answerable) != answerable:
            return None
        return bool(value)
    threshold = _threshold(rate, thresholds)
    assert threshold is not None  # a score rate (faithfulness, relevance) has a threshold
    return float(value) >= threshold


def stored_positive(value: str | None, score: float | None, rate: str, thresholds: Thresholds) -> bool | None:
    """A stored judgment's verdict at the run's threshold: ``score >= threshold`` for scores,
    ``value == "refused"`` for abstention; ``None`` when the judgment has no usable score."""
    threshold = _threshold(rate, thresholds)
    if threshold is None:
        return None if not value else value == TASK_VALUES["abstention"][0]
    return None if score is None else float(score) >= threshold


def _fmt_note(parts: list[str]) -> str | None:
    return "; ".join(p for p in parts if p) or None


def corrected_block(
    scored: Sequence[bool],
    labelled_pairs: Sequence[tuple[bool, bool]],
    *,
    same_set_pairs: Sequence[tuple[bool, bool]] = (),
    same_set_unlabelled: Sequence[bool] | None = None,
    rng: np.random.Generator,
    n_boot: int = 1000,
    level: float = 0.95,
    task: str = "",
) -> dict[str, Any]:
    """Raw, Rogan-Gladen and PPI estimates of one rate, with their evidence.

    Args:
        scored: the judge's verdict (``True`` = positive) on every item of the scored population;
            its mean is the raw rate.
        labelled_pairs: ``(human_positive, judge_positive)`` on every labelled unit usable for
            sensitivity and specificity (same threshold as ``scored``).
        same_set_pairs: the subset of those pairs whose items belong to the scored population.
        same_set_unlabelled: the judge's verdicts on the scored items without a human label
            (default: all of ``scored`` minus as many as ``same_set_pairs``, which is only right
            when the caller removed them; pass it explicitly).
        rng: random generator for the Rogan-Gladen bootstrap.
        n_boot: bootstrap resamples.
        level: confidence level of both intervals.
        task: the human task name, for notes.

    Returns:
        ``{"raw", "n_scored", "rogan_gladen", "rogan_gladen_ci", "ppi", "ppi_ci", "sensitivity",
        "specificity", "n_labelled", "n_ppi_labelled", "note"}`` (see the module docstring for the
        degenerate rule).
    """
    scored = [bool(x) for x in scored]
    pairs = [(bool(h), bool(j)) for h, j in labelled_pairs]
    notes: list[str] = []
    block: dict[str, Any] = {
        "raw": (sum(scored) / len(scored)) if scored else None,
        "n_scored": len(scored),
        "rogan_gladen": None, "rogan_gladen_ci": [None, None],
        "ppi": None, "ppi_ci": [None, None],
        "sensitivity": None, "specificity": None,
        "n_labelled": len(pairs), "n_ppi_labelled": len(same_set_pairs), "note": None,
        "rogan_gladen_unclipped": None, "ppi_unclipped": None, "clipped": False, "youden_j": None,
        "unstable": False,
    }
    pos = [j for h, j in pairs if h]
    neg = [j for h, j in pairs if not h]
    if pos:
        block["sensitivity"] = sum(pos) / len(pos)
    if neg:
        block["specificity"] = sum(1 for j in neg if not j) / len(neg)
    if pos and neg:
        block["youden_j"] = block["sensitivity"] + block["specificity"] - 1.0
    if not scored:
        notes.append("nothing scored for this rate in the run")
    elif not pairs:
        notes.append(f"no human-labelled {task or 'units'} with a judge verdict at this threshold: "
                     "label some units (workbench app) and run `workbench judge` with the same judge")
    else:
        estimate, interval, note = rogan_gladen_ci(scored, pairs, rng=rng, n_boot=n_boot, level=level)
        block["rogan_gladen"] = estimate
        block["rogan_gladen_ci"] = interval.as_list()
        unclipped = rogan_gladen_unclipped(block["raw"], block["sensitivity"], block["specificity"])
        block["rogan_gladen_unclipped"] = unclipped
        if estimate is not None and unclipped is not None and abs(unclipped - estimate) > 1e-12:
            block["clipped"] = True
            notes.append(f"Rogan-Gladen: the formula gives {100 * unclipped:.1f}%, outside [0, 100%], reported as "
                         f"{100 * estimate:.0f}%: the judge's raw rate {100 * block['raw']:.1f}% lies outside the range "
                         f"its measured sensitivity and specificity allow, so they may not hold on this set")
        if block["youden_j"] is not None and 0 < block["youden_j"] < UNSTABLE_YOUDEN:
            block["unstable"] = True
            notes.append(f"unstable correction: sensitivity + specificity = {1 + block['youden_j']:.2f}, close to 1 "
                         f"(the judge barely beats chance), so every error is amplified "
                         f"{1 / block['youden_j']:.0f} times; read the corrected rate as unknown")
        if estimate is not None and interval.low is None:
            notes.append(f"Rogan-Gladen: no interval, too few labelled units ({note or 'too few valid resamples'})")
        elif note:
            notes.append(f"Rogan-Gladen: {note}")
    if scored:
        unlabelled = list(same_set_unlabelled) if same_set_unlabelled is not None else scored
        if len(same_set_pairs) < 2 or len(unlabelled) < 2:
            notes.append(f"PPI: needs at least 2 human-labelled and 2 unlabelled items of this run "
                         f"(has {len(same_set_pairs)} labelled, {len(unlabelled)} unlabelled)")
        else:
            human = [float(h) for h, _ in same_set_pairs]
            judge = [float(j) for _, j in same_set_pairs]
            theta, interval = ppi_mean(human, judge, [float(x) for x in unlabelled], level=level)
            block["ppi_unclipped"] = theta
            block["ppi"] = None if theta is None else min(1.0, max(0.0, theta))
            block["ppi_ci"] = interval.as_list()
            clipped = None if theta is None else min(1.0, max(0.0, theta))
            if theta is not None and clipped is not None and clipped != theta:
                block["clipped"] = True
                notes.append(f"PPI: the estimate {100 * theta:.1f}% is outside [0, 100%] and reported as "
                             f"{100 * clipped:.0f}%")
    block["note"] = _fmt_note(notes)
    return block


def corrected_rates(
    records: Sequence[ItemScore],
    human: Mapping[str, Mapping[str, bool]],
    stored: Mapping[str, Mapping[str, tuple[str | None, float | None]]],
    *,
    thresholds: Thresholds,
    rng: np.random.Generator,
    same_set: set[str] | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
) -> dict[str, dict[str, Any]]:
    """The ``corrected`` block of ``summary.json`` from records, human majorities and stored verdicts.

    Args:
        records: the run's item scores (``id``, ``faithfulness``, ``answer_relevance``,
            ``abstained``, ``answerable`` are read).
        human: task -> {item id: human majority is the positive value}; ties already left out.
        stored: task -> {item id: (value, score)} of the run's judge from the store (repeat 0,
            error-free), used for labelled items that are not in this run.
        thresholds: the run's thresholds (judge verdicts on labelled units use the same ones).
        rng: random generator (used in ``RATES`` order).
        same_set: item ids of the store that belong to this eval set; ``None`` = every run id.
            A labelled id of the run outside ``same_set`` (same id, other content) is treated
            as not part of the run.
        n_boot, level: bootstrap resamples and confidence level.

    Returns:
        ``{rate: corrected_block(...)}`` for every rate in ``RATES``.
    """
    by_id = {str(r.id): r for r in records}
    out: dict[str, dict[str, Any]] = {}
    for rate, (task, _, _) in RATES.items():
        labels = human.get(task, {})
        verdicts = stored.get(task, {})
        scored, pairs, same_pairs, unlabelled = [], [], [], []
        for item_id, record in by_id.items():
            positive = record_positive(record, rate, thresholds)
            if positive is None:
                continue
            scored.append(positive)
            in_set = same_set is None or item_id in same_set
            if item_id in labels and in_set:
                same_pairs.append((labels[item_id], positive))
            else:
                unlabelled.append(positive)
        for item_id, human_positive in labels.items():
            record = by_id.get(item_id)
            if record is not None and (same_set is None or item_id in same_set):  # in the run
                # the run's own verdict; for the abstention rates an item outside this rate's
                # population (other answerability) still measures refusal detection
                judge_positive = record_positive(record, rate, thresholds)
                if judge_positive is None and RATES[rate][2] is not None and record.abstained is not None:
                    judge_positive = bool(record.abstained)
            else:
                value, score = verdicts.get(item_id, (None, None))
                judge_positive = stored_positive(value, score, rate, thresholds)
            if judge_positive is not None:
                pairs.append((human_positive, judge_positive))
        out[rate] = corrected_block(scored, pairs, same_set_pairs=same_pairs, same_set_unlabelled=unlabelled,
                                    rng=rng, n_boot=n_boot, level=level, task=task)
    return out


def read_store_evidence(db, *, fingerprint: str, annotators: Collection[str] | None = None
                        ) -> tuple[dict[str, dict[str, bool]], dict[str, dict], dict[str, EvalItem]]:
    """Human majorities, the judge's stored verdicts and the items, from an open label store.

    Only answer-level units (``<task>:<item id>``) of the tasks in ``RATES`` are read. Human
    reference = majority of current labels (ties left out; only ``annotators``' labels when
    given); judge verdict = its latest error-free judgment for repeat 0 under ``fingerprint``.

    Returns:
        ``(human, stored, items)``: task -> {item id: human says positive}, task -> {item id:
        (value, score)}, item id -> ``EvalItem``.
    """
    from workbench import store

    human: dict[str, dict[str, bool]] = {}
    stored: dict[str, dict[str, tuple[str | None, float | None]]] = {}
    from workbench.calibration.agreement import human_majority

    for task in sorted({t for t, _, _ in RATES.values()}):
        item_of = {unit.unit_id: unit.item_id for unit in store.list_units(db, task=task) if unit.claim_index is None}
        majority, _ = human_majority(db, task, annotators=annotators)
        positive = TASK_VALUES[task][0]
        human[task] = {item_of[u]: v == positive for u, v in majority.items() if u in item_of}
        stored[task] = {item_of[j.unit_id]: (j.value, j.score)
                        for j in store.list_judgments(db, task=task, judge=fingerprint)
                        if j.repeat == 0 and j.error is None and j.unit_id in item_of}
    items = {item.id: item for item in store.list_items(db)}
    return human, stored, items


def corrected_from_db(
    db_path: str | Path,
    records: Sequence[ItemScore],
    *,
    thresholds: Thresholds,
    fingerprint: str,
    items: Sequence[EvalItem] | None = None,
    rng: np.random.Generator,
    n_boot: int = 1000,
    annotators: Collection[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """I/O edge: open the label store at ``db_path`` and compute ``corrected_rates`` for a run.

    Only the labels of ``annotators`` count when given; every block then records them in
    ``annotators`` (sorted names).

    ``items`` (the scored eval items) guard against id collisions: a store item whose question,
    answer, passages or reference differ from the run's item of the same id is not counted as part of this run
    (its labels still measure sensitivity/specificity through the store's judgments). Without
    ``items`` every matching id counts as the same item.
    """
    from workbench import store

    db = store.open_db(db_path)
    try:
        human, stored, store_items = read_store_evidence(db, fingerprint=fingerprint, annotators=annotators)
    finally:
        db.conn.close()
    same_set = None
    if items is not None:
        same_set = {i.id for i in items  # labels count only on the very text scored (store.item_text_key)
                    if i.id in store_items and store.item_text_key(store_items[i.id]) == store.item_text_key(i)}
    out = corrected_rates(records, human, stored, thresholds=thresholds, rng=rng, same_set=same_set,
                          n_boot=n_boot)
    if annotators is not None:
        for block in out.values():
            block["annotators"] = sorted(annotators)
    return out
