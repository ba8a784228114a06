"""Correcting a judge's pass/fail rate for the judge's own errors, using a human-labelled sample.

Two estimators of the *true* (human) rate on a large set that only the judge scored:

* :func:`rogan_gladen` / :func:`rogan_gladen_ci`: the classic prevalence correction
  ``(judge_rate + specificity - 1) / (sensitivity + specificity - 1)``, with sensitivity and
  specificity of the judge measured against humans on a labelled sample; the CI is a bootstrap
  that resamples both the labelled sample and the scored set.
* :func:`ppi_mean`: prediction-powered inference (Angelopoulos et al. 2023, "classical PPI"):
  the judge's mean on the scored set plus the mean human-minus-judge correction on the labelled
  set, with a normal-approximation CI. Works for any bounded score, not only 0/1.

Undefined quantities are ``None``, never NaN.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import norm

from workbench.stats.bootstrap import interval_from_samples
from workbench.types import Interval

#: Below this Youden's J (sensitivity + specificity - 1) the Rogan-Gladen correction is unstable:
#: it divides by J, so every error in the judge's rate or in sensitivity/specificity is
#: amplified at least 1/J = 5 times.
UNSTABLE_YOUDEN = 0.2

NOT_BETTER_THAN_CHANCE = (
    "sensitivity + specificity <= 1: the judge is no better than chance against the humans, "
    "so its rate cannot be corrected"
)


def rogan_gladen_unclipped(judge_rate: float | None, sensitivity: float | None,
                           specificity: float | None) -> float | None:
    """The Rogan-Gladen formula before clipping: ``(judge_rate + spec - 1) / (sens + spec - 1)``.

    It falls outside [0, 1] when the judge's rate lies outside ``[1 - spec, sens]`` (the range
    its errors allow), a sign that sensitivity/specificity measured on the labelled sample do
    not hold on the scored set, or of sampling noise. ``None`` under the same rules as
    :func:`rogan_gladen` (no input validation here: call that first).
    """
    if judge_rate is None or sensitivity is None or specificity is None:
        return None
    youden = sensitivity + specificity - 1.0
    if youden <= 0.0:
        return None
    return float((judge_rate + specificity - 1.0) / youden)


def rogan_gladen(judge_rate: float | None, sensitivity: float | None, specificity: float | None) -> float | None:
    """Rogan-Gladen estimate of the true positive rate from the judge's positive rate.

    ``true = (judge_rate + specificity - 1) / (sensitivity + specificity - 1)``, clipped to [0, 1].
    Sensitivity is P(judge positive | human positive), specificity P(judge negative | human
    negative), both measured on a human-labelled sample.

    Returns:
        The corrected rate in [0, 1]; ``None`` when an input is ``None`` or when
        ``sensitivity + specificity <= 1`` (the judge is no better than chance: the correction
        divides by zero or flips sign; see ``NOT_BETTER_THAN_CHANCE``).

    Raises:
        ValueError: an input outside [0, 1].
    """
    if judge_rate is None or sensitivity is None or specificity is None:
        return None
    for name, v in (("judge_rate", judge_rate), ("sensitivity", sensitivity), ("specificity", specificity)):
        if not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"rogan_gladen: {name} must be in [0, 1], got {v!r}")
    youden = sensitivity + specificity - 1.0
    if youden <= 0.0:
        return None
    return float(min(1.0, max(0.0, (judge_rate + specificity - 1.0) / youden)))


def _bools(values: Sequence[Any], where: str, name: str) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype == bool:
        return values.reshape(-1)
    out = np.empty(len(values), dtype=bool)
    for i, v in enumerate(values):
        if v is None or not isinstance(v, bool | np.bool_ | int | np.integer) or int(v) not in (0, 1):
            raise ValueError(f"{where}: {name} at position {i} is {v!r}; expected True/False")
        out[i] = bool(v)
    return out


def rogan_gladen_ci(
    judge_pos_scored: Sequence[bool],
    human_labelled_pairs: Sequence[tuple[bool, bool]],
    *,
    rng: np.random.Generator,
    n_boot: int = 1000,
    level: float = 0.95,
) -> tuple[float | None, Interval, str]:
    """Rogan-Gladen corrected rate with a bootstrap CI over both samples.

    Args:
        judge_pos_scored: the judge's verdict (``True`` = positive) on every unit of the large
            scored set (its positive share is the raw judge rate).
        human_labelled_pairs: ``(human_positive, judge_positive)`` for each unit of the labelled
            sample (or a boolean array of shape ``(n, 2)``); it gives the judge's sensitivity and
            specificity.
        rng: random generator.
        n_boot: resamples; each one resamples the scored set *and* the labelled sample with
            replacement (drawn as the equivalent binomial / multinomial counts, vectorised).
        level: two-sided confidence level.

    Returns:
        ``(estimate, interval, note)``. ``estimate`` is ``None`` when the scored set is empty, the
        labelled sample lacks human positives or negatives, or ``sensitivity + specificity <= 1``;
        ``note`` then says which. Resamples where the correction is undefined are skipped, with the
        interval rule of :func:`workbench.stats.bootstrap.interval_from_samples`.
    """
    scored = _bools(judge_pos_scored, "rogan_gladen_ci", "judge_pos_scored")
    if isinstance(human_labelled_pairs, np.ndarray) and human_labelled_pairs.dtype == bool:
        pairs = human_labelled_pairs.reshape(-1, 2)
        human, judge = pairs[:, 0], pairs[:, 1]
    else:
        pairs = list(human_labelled_pairs)
        human = _bools([p[0] for p in pairs], "rogan_gladen_ci", "human label")
        judge = _bools([p[1] for p in pairs], "rogan_gladen_ci", "judge label")
    empty = Interval(None, None, level)
    n_scored = len(scored)
    if n_scored == 0:
        return None, empty, "the scored set is empty"
    cells = np.array([(human & judge).sum(), (human & ~judge).sum(), (~human & judge).sum(), (~human & ~judge).sum()])
    tp, fn, fp, tn = (int(c) for c in cells)
    if tp + fn == 0 or fp + tn == 0:
        return None, empty, (
            f"the labelled sample needs human positives and negatives (has {tp + fn} positive, {fp + tn} negative)"
        )
    rate = float(scored.mean())
    estimate = rogan_gladen(rate, tp / (tp + fn), tn / (tn + fp))
    if estimate is None:
        return None, empty, NOT_BETTER_THAN_CHANCE

    k = rng.binomial(n_scored, rate, size=n_boot)
    draws = rng.multinomial(len(pairs), cells / cells.sum(), size=n_boot)
    with np.errstate(divide="ignore", invalid="ignore"):
        sens = draws[:, 0] / (draws[:, 0] + draws[:, 1])
        spec = draws[:, 3] / (draws[:, 3] + draws[:, 2])
        youden = sens + spec - 1.0
        corrected = np.clip((k / n_scored + spec - 1.0) / youden, 0.0, 1.0)
    valid = np.isfinite(sens) & np.isfinite(spec) & (youden > 0)
    interval = interval_from_samples(corrected[valid], n_boot=n_boot, level=level)
    skipped = n_boot - int(valid.sum())
    note = f"{skipped} of {n_boot} resamples had an undefined correction and were skipped" if skipped else ""
    return estimate, interval, note


def ppi_mean(
    labelled_human: Sequence[float],
    labelled_judge: Sequence[float],
    unlabelled_judge: Sequence[float],
    *,
    level: float = 0.95,
) -> tuple[float | None, Interval]:
    """Prediction-powered estimate of the human mean (e.g. a pass rate) with a normal CI.

    ``theta = mean(judge on unlabelled) + mean(human - judge on labelled)``; its variance is
    ``var(judge_unlabelled)/N + var(human - judge)/n`` (sample variances, ddof=1), and the CI is
    ``theta +- z * sqrt(variance)``: classical PPI for a mean (Angelopoulos et al. 2023, as in
    ppi-python's ``ppi_mean_ci``). Values may be booleans (a rate) or scores.

    Args:
        labelled_human: human values on the labelled units.
        labelled_judge: the judge's values on the same labelled units.
        unlabelled_judge: the judge's values on the units only it scored.
        level: two-sided confidence level.

    Returns:
        ``(estimate, interval)``. When every value lies in [0, 1] the interval is clipped to
        [0, 1] (the true mean lies there, so coverage does not drop); the estimate is not.
        ``(None, Interval(None, None))`` when fewer than 2 labelled or 2 unlabelled units.

    Raises:
        ValueError: labelled lists of different lengths, a missing or non-finite value.
    """
    y = np.asarray(labelled_human, dtype=float)
    f = np.asarray(labelled_judge, dtype=float)
    fu = np.asarray(unlabelled_judge, dtype=float)
    if len(y) != len(f):
        raise ValueError(f"ppi_mean: labelled_human has {len(y)} values but labelled_judge has {len(f)}")
    for name, arr in (("labelled_human", y), ("labelled_judge", f), ("unlabelled_judge", fu)):
        if not np.isfinite(arr).all():
            raise ValueError(f"ppi_mean: {name} at position {int(np.flatnonzero(~np.isfinite(arr))[0])} is not a finite number")
    if len(y) < 2 or len(fu) < 2:
        return None, Interval(None, None, level)
    rectifier = y - f
    theta = float(fu.mean() + rectifier.mean())
    se = math.sqrt(fu.var(ddof=1) / len(fu) + rectifier.var(ddof=1) / len(y))
    z = float(norm.ppf(1.0 - (1.0 - level) / 2.0))
    low, high = theta - z * se, theta + z * se
    if all(((a >= 0) & (a <= 1)).all() for a in (y, f, fu)):
        low, high = max(0.0, low), min(1.0, high)
    return theta, Interval(float(low), float(high), level)
