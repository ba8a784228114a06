"""Nonparametric bootstrap confidence intervals that resample *units*, or *clusters* of units.

Every function takes an explicit ``rng`` (a :class:`numpy.random.Generator`); nothing here seeds or
reads global random state, so a caller that passes ``np.random.default_rng(0)`` gets the same
interval every time.

Claims are not independent: the claims of one answer share the judge's reading of that answer
and the annotator's. :func:`resample_indices` is the one resampling helper every interval in
``workbench.stats`` uses; given ``clusters`` (one id per unit, e.g. the answer a claim belongs to)
it draws whole clusters with replacement and keeps each cluster's units together, so the interval
reflects the intra-cluster correlation (its width grows by about the design effect
``sqrt(1 + (m - 1) * icc)``, see :func:`design_effect`). Without ``clusters`` every unit is its own
cluster and the draw is the classic unit bootstrap.
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


class Resampler:
    """Draws bootstrap index vectors over ``n`` units, resampling clusters when given.

    Build it once per data set (it groups the units by cluster) and call :meth:`draw` per
    resample. With ``clusters=None`` a draw is ``rng.integers(0, n, size=n)`` (the classic
    bootstrap, bit-for-bit what this module always drew). With clusters, a draw picks ``g``
    cluster ids with replacement (``g`` = number of distinct clusters) and returns the indices
    of all their units, each unit repeated as often as its cluster was drawn (in unit order, so
    statistics must not depend on row order); its length varies around ``n``.
    """

    def __init__(self, n: int, clusters: Sequence[Any] | np.ndarray | None = None) -> None:
        self.n = int(n)
        self.clustered = clusters is not None
        if clusters is None:
            self.n_clusters = self.n
            return
        if len(clusters) != self.n:
            raise ValueError(f"bootstrap: clusters has {len(clusters)} entries, expected one per unit ({self.n})")
        ids: dict[Any, int] = {}
        self._codes = np.fromiter((ids.setdefault(c, len(ids)) for c in clusters), dtype=np.int64, count=self.n)
        self.n_clusters = len(ids)
        self._units = np.arange(self.n)

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """One resample: an index array into the units (with repeats), in unit order."""
        if not self.clustered:
            return rng.integers(0, self.n, size=self.n)
        picked = rng.integers(0, self.n_clusters, size=self.n_clusters)
        # each unit appears as often as its cluster was drawn
        times = np.bincount(picked, minlength=self.n_clusters)[self._codes]
        return np.repeat(self._units, times)


def resample_indices(
    n: int, *, rng: np.random.Generator, clusters: Sequence[Any] | np.ndarray | None = None
) -> np.ndarray:
    """One bootstrap resample of ``n`` units as an index array (see :class:`Resampler`).

    Args:
        n: number of units.
        rng: the random generator.
        clusters: one cluster id per unit (hashable, e.g. the item id of a claim), or ``None``
            for independent units.

    Returns:
        Integer indices into the units; length ``n`` without clusters, else the total size of
        the drawn clusters.
    """
    return Resampler(n, clusters).draw(rng)


def bootstrap_ci(
    statistic: Callable[..., float | None],
    *arrays: Sequence[Any] | np.ndarray,
    rng: np.random.Generator,
    n_boot: int = 1000,
    level: float = 0.95,
    method: str = "percentile",
    clusters: Sequence[Any] | np.ndarray | None = None,
) -> Interval:
    """Bootstrap confidence interval of ``statistic(*arrays)``, resampling units.

    Each array holds one row per unit (first axis); all arrays must have the same length. A
    resample draws ``n`` unit indices with replacement and passes the same rows of every array
    to ``statistic`` (so paired data such as human and judge labels stay paired). Arrays are
    converted with ``np.asarray`` (object arrays are fine, e.g. labels with ``None``). With
    ``clusters`` the resample draws whole clusters instead (:class:`Resampler`), so correlated
    units of one cluster (claims of one answer) stay together.

    Args:
        statistic: function of the arrays returning a float, or ``None`` when undefined.
        *arrays: one or more equally long sequences / arrays (units along axis 0).
        rng: the random generator to draw resamples from.
        n_boot: number of resamples.
        level: two-sided confidence level in (0, 1).
        method: ``"percentile"`` (quantiles of the resampled statistic) or ``"basic"``
            (reverse percentile: ``2*theta - q_hi, 2*theta - q_lo``).
        clusters: one cluster id per unit, or ``None`` (every unit independent).

    Returns:
        ``Interval(low, high, level)``, with ``low <= high``.

    Degenerate-case rule (one rule): a resample whose statistic is ``None`` or NaN is skipped.
    The interval is ``Interval(None, None, level)`` when the statistic is undefined on the
    original data, when there are fewer than 2 units (2 clusters with ``clusters``), or when fewer than
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
    resampler = Resampler(n, clusters)
    if n < 2 or resampler.n_clusters < 2:
        return empty
    theta = statistic(*data)
    if theta is None or not _valid(theta):
        return empty

    values: list[float] = []
    for _ in range(n_boot):
        idx = resampler.draw(rng)
        value = statistic(*(a[idx] for a in data))
        if value is not None and _valid(value):
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


def icc_oneway(values: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray) -> float | None:
    """One-way ANOVA intraclass correlation ICC(1) of ``values`` grouped by ``clusters``.

    ``(MSB - MSW) / (MSB + (k0 - 1) MSW)`` with ``k0 = (N - sum n_i^2 / N) / (g - 1)`` the
    unbalanced-design group size, over clusters with at least 2 values. About 0 = values
    independent within a cluster; towards 1 = a cluster's values all alike (can be slightly
    negative by chance).

    Returns:
        The ICC, or ``None`` with fewer than 2 such clusters, no within-cluster replication, or
        constant values (denominator 0).
    """
    v = np.asarray(values, dtype=float)
    if len(v) != len(clusters):
        raise ValueError(f"icc_oneway: {len(v)} values but {len(clusters)} cluster ids")
    groups: dict[Any, list[float]] = {}
    for x, c in zip(v, clusters):
        groups.setdefault(c, []).append(float(x))
    groups = {k: g for k, g in groups.items() if len(g) >= 2}
    g = len(groups)
    n = sum(len(x) for x in groups.values())
    if g < 2 or n <= g:
        return None
    grand = sum(sum(x) for x in groups.values()) / n
    ssb = sum(len(x) * (sum(x) / len(x) - grand) ** 2 for x in groups.values())
    ssw = sum((y - sum(x) / len(x)) ** 2 for x in groups.values() for y in x)
    msb, msw = ssb / (g - 1), ssw / (n - g)
    k0 = (n - sum(len(x) ** 2 for x in groups.values()) / n) / (g - 1)
    denom = msb + (k0 - 1) * msw
    if denom <= 1e-12:
        return None
    return float((msb - msw) / denom)


def design_effect(mean_cluster_size: float, icc: float) -> float:
    """Kish's design effect ``1 + (m - 1) * icc``: variance of a clustered mean over an iid one.

    A unit-level interval is too narrow by about ``sqrt(design_effect)``; a cluster bootstrap
    widens it by that factor. ``icc`` below 0 is taken as 0 (no deflation claimed).
    """
    return 1.0 + (float(mean_cluster_size) - 1.0) * max(0.0, float(icc))
