"""Nonparametric bootstrap confidence intervals that resample *units*.

Every function takes an explicit ``rng`` (a :class:`numpy.random.Generator`); nothing here seeds or
reads global random state, so a caller that passes ``np.random.default_rng(0)`` gets the same
interval every time.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from workbench.types import Interval

#: A bootstrap interval is only reported when at least this share of the resamples gave a value.
MIN_VALID_SHARE = 0.5
#: ... and at least this many resamples in absolute terms.
MIN_VALID_COUNT = 20

METHODS = ("percentile", "basic")


def _valid(value: Any) -> bool:
    return value is not None and math.isfinite(float(value))


def bootstrap_ci(
    statistic: Callable[..., float | None],
    *arrays: Sequence[Any] | np.ndarray,
    rng: np.random.Generator,
    n_boot: int = 1000,
    level: float = 0.95,
    method: str = "percentile",
) -> Interval:
    """Bootstrap confidence interval of ``statistic(*arrays)``, resampling units.

    Each array holds one row per unit (first axis); all arrays must have the same length. A
    resample draws ``n`` unit indices with replacement and passes the same rows of every array
    to ``statistic`` (so paired data such as human and judge labels stay paired). Arrays are
    converted with ``np.asarray`` (object arrays are fine, e.g. labels with ``None``).

    Args:
        statistic: function of the arrays returning a float, or ``None`` when undefined.
        *arrays: one or more equally long sequences / arrays (units along axis 0).
        rng: the random generator to draw resamples from.
        n_boot: number of resamples.
        level: two-sided confidence level in (0, 1).
        method: ``"percentile"`` (quantiles of the resampled statistic) or ``"basic"``
            (reverse percentile: ``2*theta - q_hi, 2*theta - q_lo``).

    Returns:
        ``Interval(low, high, level)``, with ``low <= high``.

    Degenerate-case rule (one rule): a resample whose statistic is ``None`` or NaN is skipped.
    The interval is ``Interval(None, None, level)`` when the statistic is undefined on the
    original data, when there are fewer than 2 units, or when fewer than
    ``max(MIN_VALID_COUNT, MIN_VALID_SHARE * n_boot)`` resamples gave a value.

    Raises:
        ValueError: no arrays, arrays of different lengths, bad ``level``/``n_boot``/``method``.
    """
    if not arrays:
        raise ValueError("bootstrap_ci: expected at least one data array")
    if not 0.0 < level < 1.0:
        raise ValueError(f"bootstrap_ci: level must be in (0, 1), got {level!r}")
    if n_boot < 1:
        raise ValueError(f"bootstrap_ci: n_boot must be >= 1, got {n_boot!r}")
    if method not in METHODS:
        raise ValueError(f"bootstrap_ci: method must be one of {METHODS}, got {method!r}")
    data = [np.asarray(a) if not isinstance(a, np.ndarray) else a for a in arrays]
    lengths = {len(a) for a in data}
    if len(lengths) != 1:
        raise ValueError(f"bootstrap_ci: arrays must have the same number of units, got {sorted(lengths)}")
    n = lengths.pop()
    empty = Interval(None, None, level)
    if n < 2:
        return empty
    theta = statistic(*data)
    if not _valid(theta):
        return empty

    values: list[float] = []
    for _ in range(n_boot):
        idx = rng.integers(0, n, size=n)
        value = statistic(*(a[idx] for a in data))
        if _valid(value):
            values.append(float(value))
    return interval_from_samples(values, n_boot=n_boot, level=level, method=method, estimate=float(theta))


def interval_from_samples(
    values: Sequence[float] | np.ndarray,
    *,
    n_boot: int,
    level: float = 0.95,
    method: str = "percentile",
    estimate: float | None = None,
) -> Interval:
    """Turn already computed bootstrap replicates into an interval (same rule as ``bootstrap_ci``).

    Args:
        values: the valid (finite, non-``None``) replicates.
        n_boot: how many resamples were drawn in total (valid or not).
        level: two-sided confidence level.
        method: ``"percentile"`` or ``"basic"`` (the latter needs ``estimate``).
        estimate: the statistic on the original data.

    Returns:
        ``Interval(None, None, level)`` when fewer than
        ``max(MIN_VALID_COUNT, MIN_VALID_SHARE * n_boot)`` replicates are valid.
    """
    arr = np.asarray([v for v in values if _valid(v)], dtype=float)
    if len(arr) < max(MIN_VALID_COUNT, MIN_VALID_SHARE * n_boot):
        return Interval(None, None, level)
    alpha = (1.0 - level) / 2.0
    q_lo, q_hi = np.quantile(arr, [alpha, 1.0 - alpha])
    if method == "basic":
        if estimate is None:
            raise ValueError("interval_from_samples: method='basic' needs the point estimate")
        q_lo, q_hi = 2.0 * estimate - q_hi, 2.0 * estimate - q_lo
    elif method != "percentile":
        raise ValueError(f"interval_from_samples: method must be one of {METHODS}, got {method!r}")
    return Interval(float(q_lo), float(q_hi), level)
