"""Judges against people: agreement, calibration, disagreements and test-retest, read from the store.

Glue between ``workbench.store`` (labels, judgments) and ``workbench.stats`` (the statistics);
nothing here prints. Shared rules:

* A human's label is their current one (latest non-retracted row); the human reference for a
  unit is the **majority** of its current labels. Units whose top labels tie are left out of
  every judge comparison and counted in ``ties``.
* A judge's verdict is its latest judgment for repeat 0 (``repeat`` > 0 only serves
  test-retest); judgments with ``error`` are left out.
* Category order (confusion rows/columns, positive class) is ``types.TASK_VALUES[task]``.
* Randomness (bootstrap CIs) comes from the ``rng`` the caller passes, used in a fixed order.
* Claims are not independent: for a claim-level task (``claim_support``) every interval
  resamples answers (items) and keeps each answer's claims together (``unit_clusters``);
  answer-level tasks resample units as before.
* Who counts as a rater: ``annotators`` (a set of names, ``None`` = everyone, see
  :func:`choose_annotators`) filters the human labels before any majority or statistic.
* Small samples: a human block or judge row over fewer than ``stats.agreement.MIN_UNITS`` (30)
  units, or fewer than ``MIN_MINORITY`` (5) of the rarer class, carries ``too_small: true`` and
  ``too_small_reason``.
"""
from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from workbench import store
from workbench.formatting import fixed
from workbench.stats import (
    agreement_with_ci,
    calibrate_threshold,
    cohen_kappa,
    human_agreement,
    icc_oneway,
    krippendorff_alpha,
    logistic_calibration,
    majority_label,
    pairwise_summary,
    reliability_curve,
    score_auc,
    small_sample_reason,
    sweep_frame,
    threshold_sweep,
)
from workbench.tasks import REPORT_TASKS, by_threshold_key
from workbench.types import TASK_VALUES, Judgment, Thresholds

#: ``thresholds.json`` key -> label-store task whose continuous judge score it thresholds, in the
#: order of the ``Thresholds`` fields (the order ``thresholds.json`` is written in).
CALIBRATED = {key: by_threshold_key()[key] for key in (f.name for f in dataclasses.fields(Thresholds))
              if key in by_threshold_key()}
#: A threshold is only tuned on at least this many units with a human majority and a score.
MIN_CALIBRATION_UNITS = 10


# ------------------------------------------------------------------------------------------
# reading the store


class AnnotatorChoiceError(ValueError):
    """``--annotators`` / ``--exclude-annotators`` name someone the store does not know."""


def store_annotators(db, *, task: str | None = None) -> list[str]:
    """Sorted names of everyone with a current label (for ``task``, or any task)."""
    return sorted({label.annotator for label in store.current_labels(db, task=task)})


def split_names(values: Iterable[str] | None) -> list[str]:
    """Names from repeatable, comma-separated options (``-a x,y -a z`` -> ``[x, y, z]``), blanks dropped."""
    return [n.strip() for v in (values or ()) for n in str(v).split(",") if n.strip()]


def choose_annotators(known: Collection[str], *, include: Iterable[str] | None = None,
                      exclude: Iterable[str] | None = None) -> set[str] | None:
    """The annotators whose labels count: ``include`` (default everyone) minus ``exclude``.

    Returns:
        ``None`` when neither is given (everyone counts, nothing to record), else the set.

    Raises:
        AnnotatorChoiceError: a name in ``include`` or ``exclude`` is not in ``known`` (a typo
            would otherwise silently change the human reference), or the choice leaves nobody.
    """
    inc, exc = split_names(include), split_names(exclude)
    if not inc and not exc:
        return None
    unknown = sorted({n for n in inc + exc if n not in known})
    if unknown:
        raise AnnotatorChoiceError(f"unknown annotator(s) {', '.join(map(repr, unknown))}; "
                                   f"the store knows: {', '.join(sorted(known)) or 'nobody'}")
    chosen = (set(inc) if inc else set(known)) - set(exc)
    if not chosen:
        raise AnnotatorChoiceError("the annotator choice leaves nobody whose labels count")
    return chosen


def _human_labels(db, task: str, annotators: Collection[str] | None = None) -> dict[str, dict[str, str]]:
    """annotator -> {unit_id: current value} for one task (only ``annotators`` when given)."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for label in store.current_labels(db, task=task):
        if annotators is None or label.annotator in annotators:
            out[label.annotator][label.unit_id] = label.value
    return dict(out)


def human_majority(db, task: str, *, annotators: Collection[str] | None = None) -> tuple[dict[str, str], list[str]]:
    """unit_id -> majority of the current human labels for ``task``, and the tied units left out.

    Only the labels of ``annotators`` count when given (``None`` = everyone)."""
    return _majority(_human_labels(db, task, annotators))


def unit_clusters(db, task: str) -> dict[str, str] | None:
    """unit_id -> item id for a claim-level task (claims of one answer resampled together), else ``None``."""
    units = store.list_units(db, task=task)
    if not any(u.claim_index is not None for u in units):
        return None
    return {u.unit_id: u.item_id for u in units}


def _majority(by_annotator: dict[str, dict[str, str]]) -> tuple[dict[str, str], list[str]]:
    per_unit: dict[str, list[str]] = defaultdict(list)
    for ratings in by_annotator.values():
        for unit_id, value in ratings.items():
            per_unit[unit_id].append(value)
    return majority_label(per_unit)


def _judge_verdicts(db, task: str, judge: str, *, repeat: int = 0) -> dict[str, Judgment]:
    """unit_id -> the judge's latest error-free judgment for ``repeat``."""
    return {j.unit_id: j for j in store.list_judgments(db, task=task, judge=judge)
            if j.repeat == repeat and j.error is None}


def _verdicts_by_judge(db, task: str, *, repeat: int = 0) -> dict[str, dict[str, Judgment]]:
    """judge -> {unit_id: latest error-free judgment for ``repeat``}, judges in first-stored
    order, from one read of the task's judgments."""
    out: dict[str, dict[str, Judgment]] = {}
    for j in store.list_judgments(db, task=task):
        if j.error is None:
            verdicts = out.setdefault(j.judge, {})
            if j.repeat == repeat:
                verdicts[j.unit_id] = j
    return out


def quote_hallucination_rate(judgments: list[Judgment]) -> float | None:
    """Share of the judge's verdicts that give a quote which is not found in the passages.

    Over the judge's error-free judgments that carry a quote (all units, labelled or not);
    ``None`` when none carries a quote (e.g. answer-level tasks).
    """
    quoted = [j for j in judgments if j.quote]
    if not quoted:
        return None
    return sum(1 for j in quoted if j.quote_found is False) / len(quoted)


# ------------------------------------------------------------------------------------------
# agreement


def _small(reason: str | None) -> dict[str, Any]:
    return {"too_small": reason is not None, "too_small_reason": reason}


def _judge_auc(common: list[str], majority: dict[str, str], verdicts: dict[str, Judgment],
               positive: str) -> tuple[float | None, float | None]:
    scored = {u: score for u in common if (score := verdicts[u].score) is not None}
    if not scored:
        return None, None
    return score_auc(list(scored.values()), [majority[u] == positive for u in scored])


def _task_block(db, task: str, *, rng: np.random.Generator, n_boot: int,
                annotators: Collection[str] | None = None) -> dict[str, Any]:
    labels = TASK_VALUES[task]
    units = store.list_units(db, task=task)
    clusters = unit_clusters(db, task)
    by_annotator = _human_labels(db, task, annotators)
    majority, ties = _majority(by_annotator)
    labelled = {u for ratings in by_annotator.values() for u in ratings}
    if by_annotator:
        human = human_agreement(by_annotator, labels=labels, rng=rng, n_boot=n_boot, clusters=clusters)
    else:
        human = {"alpha": None, "alpha_ci": [None, None], "pairwise_kappa": {}, "pairwise_n": {}, "n": 0,
                 "class_counts": {}}
    human["pairwise_summary"] = pairwise_summary(human["pairwise_kappa"], human["pairwise_n"])
    if len(by_annotator) < 2:
        human.update(_small("fewer than 2 annotators: no human-human agreement to read"))
    else:
        human.update(_small(small_sample_reason(human["n"], [human["class_counts"].get(v, 0) for v in labels],
                                                counted="rating(s)")))
    judges: dict[str, Any] = {}
    for fp, verdicts in _verdicts_by_judge(db, task).items():
        common = [u for u in majority if u in verdicts]
        stats = agreement_with_ci([majority[u] for u in common], [verdicts[u].value for u in common],
                                  labels=labels, rng=rng, n_boot=n_boot,
                                  clusters=None if clusters is None else [clusters.get(u, u) for u in common])
        raters: dict[Any, dict[str, str]] = {("human", a): r for a, r in by_annotator.items()}
        raters[("judge", fp)] = {u: verdicts[u].value for u in labelled if u in verdicts}
        alpha_with = krippendorff_alpha(raters, labels=labels) if by_annotator else None
        auc, auc_p = _judge_auc(common, majority, verdicts, labels[0])
        judges[fp] = {
            "n": stats["n"],
            "kappa": stats["kappa"],
            "kappa_ci": stats["kappa_ci"],
            "ac1": stats["ac1"],
            "ac1_ci": stats["ac1_ci"],
            "auc": auc,
            "auc_p": auc_p,
            "alpha_with_humans": alpha_with,
            "accuracy": stats["accuracy"],
            "confusion": stats["confusion"],
            "quote_hallucination_rate": quote_hallucination_rate(list(verdicts.values())),
            **_small(small_sample_reason(stats["n"], [sum(row) for row in stats["confusion"]["matrix"]])),
        }
    return {
        "units": len(units),
        "labelled_units": len(labelled),
        "annotators": sorted(by_annotator),
        "clustered_by": None if clusters is None else "item",
        "human": human,
        "judges": judges,
        "ties": len(ties),
    }


def agreement_report(db, *, rng: np.random.Generator, n_boot: int = 1000,
                     annotators: Collection[str] | None = None) -> dict[str, Any]:
    """Per task: the human ceiling and each judge against the human majority (``agreement --json``).

    Per task block (the DESIGN.md contract): ``units`` (units in the store), ``labelled_units``
    (units with at least one current human label), ``annotators`` (sorted names), ``human``
    (``alpha`` = nominal Krippendorff's alpha over all annotators with a bootstrap ``alpha_ci``,
    ``pairwise_kappa`` = Cohen's kappa per annotator pair ``"a|b"`` on the units both labelled),
    ``judges`` (per fingerprint: ``n`` units with both a human majority and a verdict, Cohen's
    ``kappa`` of the judge against the human majority with a bootstrap ``kappa_ci``, Gwet's
    ``ac1``, ``alpha_with_humans`` = alpha with the judge as one more rater, ``accuracy``,
    ``confusion`` (rows human, columns judge, in ``TASK_VALUES`` order) and
    ``quote_hallucination_rate``), plus ``ties`` = labelled units left out because their
    majority is tied.

    Added fields (the contract only grows): ``clustered_by`` (``"item"`` when the task's units
    are claims and every interval resamples answers, else ``None``); in ``human``:
    ``pairwise_n`` (units per pair), ``pairwise_summary`` (mean/min/max kappa over the pairs
    sharing at least ``MIN_UNITS`` units), ``n`` (units with 2+ labels), ``class_counts``
    (ratings per class on them); per judge: ``ac1_ci``, ``auc`` and ``auc_p`` (the judge's
    continuous score against the human majority: AUC and two-sided Mann-Whitney p, ``None``
    without scores or with one human class); on ``human`` and on every judge row ``too_small``
    and ``too_small_reason`` (fewer than 30 units or 5 of the rarer class, see
    ``stats.small_sample_reason``: the figures are shown but must not be read as results).

    Args:
        db: an open label store.
        rng: random generator for every bootstrap.
        n_boot: resamples per interval.
        annotators: names whose labels count (``None`` = everyone; see :func:`choose_annotators`).

    Degenerate rules: a task with neither units nor labels is ``{}``; a statistic that is
    undefined (one class only, fewer than 2 units, a single annotator) is ``None``.
    """
    report: dict[str, Any] = {}
    present = {u.task for u in store.list_units(db)}
    tasks = list(REPORT_TASKS) + [t for t in TASK_VALUES if t not in REPORT_TASKS and t in present]
    for task in tasks:
        if task not in present and not store.current_labels(db, task=task):
            report[task] = {}
            continue
        report[task] = _task_block(db, task, rng=rng, n_boot=n_boot, annotators=annotators)
    return report


# ------------------------------------------------------------------------------------------
# calibration


def pick_judge(db) -> tuple[str | None, int]:
    """The fingerprint with the most error-free judgments (first stored wins a tie), and that count."""
    counts = Counter(j.judge for j in store.list_judgments(db) if j.error is None)
    if not counts:
        return None, 0
    order = store.judge_fingerprints(db)
    best = max(order, key=lambda fp: (counts.get(fp, 0), -order.index(fp)))
    return best, counts[best]


def _scored_pairs(db, task: str, judge: str, *, annotators: Collection[str] | None = None
                  ) -> tuple[list[str], list[float], list[bool]]:
    """Units with a human majority and a judge score: (unit ids, scores, human says positive)."""
    majority, _ = human_majority(db, task, annotators=annotators)
    verdicts = _judge_verdicts(db, task, judge)
    positive = TASK_VALUES[task][0]
    scores = {u: score for u in majority if u in verdicts and (score := verdicts[u].score) is not None}
    return list(scores), list(scores.values()), [majority[u] == positive for u in scores]


def _clusters_of(db, task: str, units: list[str]) -> list[str] | None:
    clusters = unit_clusters(db, task)
    return None if clusters is None else [clusters.get(u, u) for u in units]


def _not_enough(task: str, n: int, positives: int) -> str | None:
    if n < MIN_CALIBRATION_UNITS:
        return (f"{task}: only {n} unit(s) with both a human majority label and a judge score; "
                f"at least {MIN_CALIBRATION_UNITS} are needed")
    if positives in (0, n):
        return f"{task}: the human majority uses one class only ({positives} of {n} positive); both are needed"
    return None


def _resolve_judge(db, judge: str | None) -> tuple[str | None, str | None]:
    if judge is not None:
        return judge, None
    picked, count = pick_judge(db)
    if picked is None:
        return None, "no judgments in the store: run `workbench judge` first"
    return picked, f"judge not given: picked {picked}, the fingerprint with the most judgments ({count})"


def _round(x: float | None) -> str:
    return fixed(x, 2)


def calibration_report(db, *, judge: str | None = None, criterion: str = "kappa",
                       rng: np.random.Generator, n_boot: int = 1000,
                       annotators: Collection[str] | None = None) -> dict[str, Any]:
    """The ``thresholds.json`` payload: per continuous judge score, the threshold best matching people.

    For ``faithfulness`` (task ``answer_faithfulness``), ``answer_relevance`` and ``claim_support``
    the judge's score is swept against the human majority label (positive = first value of
    ``TASK_VALUES``) and the threshold maximising ``criterion`` (``kappa``, ``youden``, ``f1``) is
    kept, with Cohen's kappa at that threshold and its bootstrap CI
    (``workbench.stats.calibrate_threshold``; claim support resamples answers, keeping each
    answer's claims together). Only the labels of ``annotators`` count when given.

    Returns:
        ``{"judge", "criterion", "annotators": [names whose labels counted], "excluded_annotators":
        [names in the store left out], <key>: {"threshold", "kappa", "kappa_ci", "n",
        "criterion_value", "threshold_ci", "auc", "auc_p_value", "too_small", "too_small_reason"},
        ..., "notes": {...}}``. A key is left out when its task has fewer than
        ``MIN_CALIBRATION_UNITS`` scored, majority-labelled units, only one human class, or no
        threshold could be chosen; ``notes[<key>]`` then says why. ``notes["judge"]`` says how the
        judge was picked when ``judge`` is ``None`` (the fingerprint with the most judgments).
    """
    fp, how = _resolve_judge(db, judge)
    known = store_annotators(db)
    used = [a for a in known if annotators is None or a in annotators]
    payload: dict[str, Any] = {"judge": fp, "criterion": criterion, "annotators": used,
                               "excluded_annotators": [a for a in known if a not in used]}
    notes: dict[str, str] = {}
    if how:
        notes["judge"] = how
    if fp is None:
        payload["notes"] = notes
        return payload
    for key, task in CALIBRATED.items():
        entry, note = calibrate_task(db, task, fp, criterion=criterion, rng=rng, n_boot=n_boot, annotators=annotators)
        if entry is not None:
            payload[key] = entry
        if note:
            notes[key] = note
    payload["notes"] = notes
    return payload


def calibrate_task(db, task: str, judge: str, *, criterion: str = "kappa", rng: np.random.Generator,
                   n_boot: int = 1000, annotators: Collection[str] | None = None
                   ) -> tuple[dict[str, Any] | None, str | None]:
    """The threshold on ``judge``'s score for ``task`` that best reproduces the human majority.

    Compares the judge's continuous score on each unit with a human majority label against that
    label (positive = the task's first value); any registry task with scores can be calibrated,
    ``calibration_report`` does it for the ``thresholds.json`` keys.

    Returns:
        ``(entry, note)``: ``entry`` is ``{"threshold", "kappa", "kappa_ci", "n", "criterion_value",
        "threshold_ci", "auc", "auc_p_value", "too_small", "too_small_reason"}`` or ``None`` when
        there are fewer than ``MIN_CALIBRATION_UNITS`` units, one human class, or no threshold
        could be chosen; ``note`` says why (or warns that the score does not beat chance), else ``None``.
    """
    units, scores, positive = _scored_pairs(db, task, judge, annotators=annotators)
    reason = _not_enough(task, len(scores), sum(positive))
    if reason:
        return None, reason
    result = calibrate_threshold(scores, positive, criterion=criterion, rng=rng, n_boot=n_boot,
                                 clusters=_clusters_of(db, task, units))
    if result["threshold"] is None:
        return None, f"{task}: {result['note']}"
    entry: dict[str, Any] = {
        "threshold": result["threshold"],
        "kappa": result["kappa"],
        "kappa_ci": result["kappa_ci"],
        "n": result["n"],
        "criterion_value": result["value"],
        "threshold_ci": result["threshold_ci"],
    }
    auc, p_value = score_auc(scores, positive)
    entry.update(auc=auc, auc_p_value=p_value)
    entry.update(_small(small_sample_reason(len(scores), [sum(positive), len(scores) - sum(positive)])))
    note = None
    low = (result["kappa_ci"] or [None])[0]
    if low is None or low <= 0 or p_value is None or p_value >= 0.05:
        note = (f"{task}: this judge's score does not separate the human classes better than chance "
                f"(AUC {auc:.2f}, Mann-Whitney p = {p_value:.2g}; kappa interval at the chosen threshold "
                f"[{_round(result['kappa_ci'][0])}, {_round(result['kappa_ci'][1])}]); treat this threshold, and "
                "pass rates built on it, as untrustworthy"
                if auc is not None else f"{task}: only one human class; threshold untrustworthy")
    return entry, note


def calibration_curves(db, *, judge: str | None = None, criterion: str = "kappa",
                       n_bins: int = 10, annotators: Collection[str] | None = None,
                       rng: np.random.Generator | None = None) -> dict[str, dict[str, Any]]:
    """Chart data per calibrated score (keys as in ``thresholds.json``), for the app and reports.

    Each value is ``{"task", "judge", "sweep": DataFrame (one row per threshold: kappa,
    accuracy, precision, recall, specificity, f1, youden_j, counts), "chosen": float | None (the
    threshold maximising ``criterion``, no CI), "reliability": DataFrame (bin_low, bin_high,
    mean_score, observed_rate, n), "logistic": dict | None (intercept, slope, n, method, note)}``.
    Scores whose task has fewer than 2 scored, majority-labelled units are left out. Only the
    labels of ``annotators`` count when given. With ``rng`` the reliability table also has
    ``observed_low``/``observed_high`` bootstrap intervals per bin (claims resampled by answer).
    """
    from dataclasses import asdict

    from workbench.stats import choose_threshold

    fp, _ = _resolve_judge(db, judge)
    out: dict[str, dict[str, Any]] = {}
    if fp is None:
        return out
    for key, task in CALIBRATED.items():
        units, scores, positive = _scored_pairs(db, task, fp, annotators=annotators)
        if len(scores) < 2:
            continue
        sweep = threshold_sweep(scores, positive)
        chosen = choose_threshold(sweep, criterion=criterion)
        fit = logistic_calibration(scores, positive)
        out[key] = {
            "task": task,
            "judge": fp,
            "sweep": sweep_frame(sweep),
            "chosen": None if chosen is None else chosen.threshold,
            "reliability": reliability_curve(scores, positive, n_bins=n_bins, rng=rng,
                                             clusters=_clusters_of(db, task, units) if rng is not None else None),
            "logistic": None if fit is None else asdict(fit),
        }
    return out


# ------------------------------------------------------------------------------------------
# review and consistency


def disagreements(db, *, task: str, judge: str) -> pd.DataFrame:
    """Units where the judge's value differs from the human majority, for review.

    Columns: ``unit_id, item_id, text, human`` (majority), ``judge`` (value), ``score``,
    ``quote``, ``n_labels``; in store order (item, then claim). Tied and unjudged units are not
    listed. An empty DataFrame (same columns) when there is nothing to show.
    """
    by_annotator = _human_labels(db, task)
    majority, _ = _majority(by_annotator)
    n_labels = Counter(u for ratings in by_annotator.values() for u in ratings)
    verdicts = _judge_verdicts(db, task, judge)
    rows = []
    for unit in store.list_units(db, task=task):
        u = unit.unit_id
        if u in majority and u in verdicts and verdicts[u].value != majority[u]:
            rows.append({"unit_id": u, "item_id": unit.item_id, "text": unit.text, "human": majority[u],
                         "judge": verdicts[u].value, "score": verdicts[u].score, "quote": verdicts[u].quote,
                         "n_labels": n_labels[u]})
    columns = ["unit_id", "item_id", "text", "human", "judge", "score", "quote", "n_labels"]
    return pd.DataFrame(rows, columns=columns)


def retest_agreement(db, *, task: str, judge: str) -> dict[str, Any]:
    """How consistently one judge answers the same units when asked again (its repeats).

    Compares the judge's values between repeats on the units every compared repeat answered
    without error. Returns ``{"repeats": number of repeats stored, "n": units judged in every
    repeat, "kappa": Cohen's kappa between repeats 0 and 1 (mean over all pairs of repeats when
    there are more), "pairwise": {"0|1": kappa, ...}, "agreement": share of those units on which
    every repeat gave the same value}``. ``kappa`` is ``None`` with fewer than 2 repeats or 2
    units, or when every answer is one and the same value (then ``agreement`` still says 1.0);
    a pair whose kappa is undefined is ``None`` and left out of the mean.
    """
    by_repeat: dict[int, dict[str, str]] = defaultdict(dict)
    for j in store.list_judgments(db, task=task, judge=judge):
        if j.error is None:
            by_repeat[j.repeat][j.unit_id] = j.value
    repeats = sorted(by_repeat)
    result: dict[str, Any] = {"repeats": len(repeats), "n": 0, "kappa": None, "pairwise": {}, "agreement": None}
    if len(repeats) < 2:
        return result
    common = sorted(set.intersection(*(set(by_repeat[r]) for r in repeats)))
    result["n"] = len(common)
    if common:
        result["agreement"] = sum(1 for u in common if len({by_repeat[r][u] for r in repeats}) == 1) / len(common)
    labels = TASK_VALUES[task]
    for a, b in combinations(repeats, 2):
        result["pairwise"][f"{a}|{b}"] = cohen_kappa([by_repeat[a][u] for u in common],
                                                      [by_repeat[b][u] for u in common], labels=labels)
    defined = [k for k in result["pairwise"].values() if k is not None]
    result["kappa"] = float(np.mean(defined)) if defined else None
    return result


def intra_answer_error_correlation(db, *, judge: str, annotators: Collection[str] | None = None) -> dict[str, Any]:
    """Do a judge's claim errors cluster within answers? (batched vs per-claim verification).

    A claim's error indicator is 1 when the judge's ``claim_support`` value differs from the
    human majority (ties and unjudged claims left out). The correlation is the one-way ANOVA
    intraclass correlation ICC(1) of those indicators grouped by answer (item), over items with
    at least 2 such claims: ``(MSB - MSW) / (MSB + (k0 - 1) MSW)`` with ``k0`` the unbalanced-design
    group size ``(N - sum n_i^2 / N) / (g - 1)`` (``workbench.stats.icc_oneway``). About 0 =
    errors independent within an answer; towards 1 = an answer's claims are all right or all
    wrong together.

    Returns:
        ``{"items": g, "claims": N, "error_rate", "icc"}``; ``icc`` is ``None`` with fewer than 2
        items, or when the indicators do not vary (denominator 0).
    """
    majority, _ = human_majority(db, "claim_support", annotators=annotators)
    verdicts = _judge_verdicts(db, "claim_support", judge)
    groups: dict[str, list[float]] = defaultdict(list)
    for unit in store.list_units(db, task="claim_support"):
        u = unit.unit_id
        if u in majority and u in verdicts:
            groups[unit.item_id].append(float(verdicts[u].value != majority[u]))
    groups = {k: v for k, v in groups.items() if len(v) >= 2}
    values = [x for v in groups.values() for x in v]
    g, n = len(groups), len(values)
    out: dict[str, Any] = {"items": g, "claims": n, "error_rate": (sum(values) / n) if n else None, "icc": None}
    out["icc"] = icc_oneway(values, [k for k, v in groups.items() for _ in v])
    return out
