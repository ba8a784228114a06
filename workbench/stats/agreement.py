"""Agreement between raters: Cohen's kappa, Krippendorff's alpha, Gwet's AC1, confusion matrices.

Conventions shared by every function here:

* Data first, options keyword-only; ``labels=`` pins the category order (as in scikit-learn's
  ``cohen_kappa_score(y1, y2, *, labels=None)``). Without ``labels`` the categories are the sorted
  distinct observed values.
* A value outside ``labels`` raises ``ValueError`` (it is never silently dropped).
* Missing ratings are ``None`` or NaN. For two-rater statistics a unit missing either rating is
  left out (``n`` counts complete pairs only).
* A quantity that is undefined is ``None``, never NaN. The rules:

  - fewer than 2 complete units (pairable units for alpha) -> ``None``;
  - Cohen's kappa and Krippendorff's alpha are ``None`` when the *expected* (chance)
    disagreement is zero, i.e. every rating is one and the same category (for unweighted kappa
    this is chance agreement ``pe == 1``; the formula is then 0/0; scikit-learn returns NaN).
    Use :func:`gwet_ac1` or raw accuracy for such data;
  - Gwet's AC1 is ``None`` only when fewer than 2 categories are possible (``labels`` has one
    entry, or without ``labels`` only one category was observed). Its chance agreement is at
    most ``1/K``, so it stays defined when one class dominates or is the only one used.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import krippendorff
import numpy as np

from workbench.stats.bootstrap import bootstrap_ci

_EPS = 1e-12
#: Small-sample rule: an agreement figure over fewer than this many units is "too small to read".
MIN_UNITS = 30
#: ... or over fewer than this many units of the rarer class (kappa and alpha hinge on it).
MIN_MINORITY = 5
WEIGHTS = (None, "linear", "quadratic")
LEVELS = ("nominal", "ordinal", "interval")


# --------------------------------------------------------------------------------------------
# encoding helpers


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return isinstance(value, float | np.floating) and math.isnan(value)
    except TypeError:  # pragma: no cover - exotic types
        return False


def _sorted_categories(values: Sequence[Any]) -> tuple[Any, ...]:
    distinct = set(values)
    try:
        return tuple(sorted(distinct))
    except TypeError:  # mixed types: a stable, documented order
        return tuple(sorted(distinct, key=repr))


def _label_index(labels: Sequence[Any], where: str) -> dict[Any, int]:
    index: dict[Any, int] = {}
    for i, lab in enumerate(labels):
        if lab in index:
            raise ValueError(f"{where}: labels has a duplicate entry {lab!r}")
        index[lab] = i
    return index


def _encode_pairs(
    a: Sequence[Any], b: Sequence[Any], labels: Sequence[Any] | None, where: str
) -> tuple[np.ndarray, np.ndarray, tuple[Any, ...]]:
    """Integer codes of the complete pairs of ``a`` and ``b`` plus the category tuple."""
    a = list(a)
    b = list(b)
    if len(a) != len(b):
        raise ValueError(f"{where}: the two raters must rate the same units, got {len(a)} and {len(b)} ratings")
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if not _is_missing(x) and not _is_missing(y)]
    if labels is None:
        cats = _sorted_categories([v for p in pairs for v in p])
    else:
        cats = tuple(labels)
    index = _label_index(cats, where)
    ca = np.empty(len(pairs), dtype=np.int64)
    cb = np.empty(len(pairs), dtype=np.int64)
    for i, (x, y) in enumerate(pairs):
        for value, out, rater in ((x, ca, "first"), (y, cb, "second")):
            try:
                out[i] = index[value]
            except (KeyError, TypeError):
                raise ValueError(
                    f"{where}: {rater} rater's value {value!r} is not one of labels {list(cats)!r}"
                ) from None
    return ca, cb, cats


def _table(ca: np.ndarray, cb: np.ndarray, k: int) -> np.ndarray:
    """k x k count table, rows = first rater's codes, columns = second rater's."""
    return np.bincount(ca * k + cb, minlength=k * k).reshape(k, k)


def _weight_matrix(k: int, weights: str | None) -> np.ndarray:
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    i, j = np.indices((k, k))
    if weights is None:
        return (i != j).astype(float)
    if k < 2:
        return np.zeros((k, k))
    d = np.abs(i - j) / (k - 1)
    return d if weights == "linear" else d**2


def _kappa_from_table(table: np.ndarray, w: np.ndarray) -> float | None:
    n = table.sum()
    if n < 2:
        return None
    p = table / n
    expected = np.outer(p.sum(axis=1), p.sum(axis=0))
    d_e = float((w * expected).sum())
    if d_e <= _EPS:
        return None
    return float(1.0 - (w * p).sum() / d_e)


def _ac1_from_table(table: np.ndarray) -> float | None:
    k = table.shape[0]
    n = table.sum()
    if n < 2 or k < 2:
        return None
    p = table / n
    pa = float(np.trace(p))
    pi = (p.sum(axis=1) + p.sum(axis=0)) / 2.0
    pe = float((pi * (1.0 - pi)).sum() / (k - 1))
    return float((pa - pe) / (1.0 - pe))


# --------------------------------------------------------------------------------------------
# two raters


def cohen_kappa(
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    labels: Sequence[Any] | None = None,
    weights: str | None = None,
) -> float | None:
    """Cohen's kappa between rater ``a`` and rater ``b`` over the same units.

    ``kappa = 1 - D_o / D_e`` where ``D_o`` is the weighted observed disagreement and ``D_e`` the
    weighted disagreement expected from the two raters' marginals. With ``weights=None`` this is
    the nominal ``(p_o - p_e) / (1 - p_e)``; ``"linear"``/``"quadratic"`` weight a disagreement by
    ``|i-j|/(K-1)`` or its square, where ``i, j`` are positions in ``labels`` (ordinal data:
    pass ``labels`` in their natural order).

    Args:
        a: first rater's labels, one per unit (``None``/NaN = missing).
        b: second rater's labels for the same units.
        labels: category order; defaults to the sorted observed categories.
        weights: ``None``, ``"linear"`` or ``"quadratic"``.

    Returns:
        Kappa in [-1, 1]; ``None`` when fewer than 2 complete pairs or when ``D_e == 0`` (both
        raters used one and the same single category, so chance agreement is 1).

    Raises:
        ValueError: different lengths, a value outside ``labels``, unknown ``weights``.
    """
    ca, cb, cats = _encode_pairs(a, b, labels, "cohen_kappa")
    k = len(cats)
    return _kappa_from_table(_table(ca, cb, k), _weight_matrix(k, weights))


def gwet_ac1(a: Sequence[Any], b: Sequence[Any], *, labels: Sequence[Any] | None = None) -> float | None:
    """Gwet's AC1 between rater ``a`` and rater ``b`` (nominal categories).

    ``AC1 = (p_a - p_e) / (1 - p_e)`` with ``p_a`` the observed agreement and
    ``p_e = sum_k pi_k (1 - pi_k) / (K - 1)``, ``pi_k`` the mean of the two raters' shares of
    category ``k`` and ``K`` the number of categories (``len(labels)``, or the observed ones).

    Returns:
        AC1 in [-1, 1]; ``None`` when fewer than 2 complete pairs or ``K < 2``. Because
        ``p_e <= 1/K`` it remains defined when all ratings are one class (then AC1 = 1 with K >= 2).
        Pass ``labels`` so ``K`` does not depend on which classes happen to occur.
    """
    ca, cb, cats = _encode_pairs(a, b, labels, "gwet_ac1")
    return _ac1_from_table(_table(ca, cb, len(cats)))


def accuracy(a: Sequence[Any], b: Sequence[Any]) -> float | None:
    """Share of complete pairs on which ``a`` and ``b`` give the same label; ``None`` if no pairs."""
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if not _is_missing(x) and not _is_missing(y)]
    if not pairs:
        return None
    return sum(x == y for x, y in pairs) / len(pairs)


@dataclass(frozen=True)
class Confusion:
    """Confusion matrix: ``matrix[i][j]`` = units the first rater put in ``labels[i]`` and the
    second in ``labels[j]`` (rows = humans, columns = judge by the workbench convention)."""

    labels: tuple[Any, ...]
    matrix: tuple[tuple[int, ...], ...]

    @property
    def n(self) -> int:
        return sum(sum(row) for row in self.matrix)

    def to_array(self) -> np.ndarray:
        return np.asarray(self.matrix, dtype=np.int64).reshape(len(self.labels), len(self.labels))

    def to_dict(self) -> dict[str, list]:
        """JSON shape used by ``agreement --json``: ``{"labels": [...], "matrix": [[...]]}``."""
        return {"labels": list(self.labels), "matrix": [list(r) for r in self.matrix]}


def confusion(a_true: Sequence[Any], b_pred: Sequence[Any], *, labels: Sequence[Any]) -> Confusion:
    """Confusion matrix of ``a_true`` (rows, e.g. human majority) against ``b_pred`` (columns, judge).

    Units missing either label are left out. Every label must be in ``labels`` (else
    ``ValueError``); an empty input gives an all-zero matrix.
    """
    ca, cb, cats = _encode_pairs(a_true, b_pred, labels, "confusion")
    t = _table(ca, cb, len(cats))
    return Confusion(cats, tuple(tuple(int(v) for v in row) for row in t))


def majority_label(
    labels_per_unit: Mapping[Hashable, Sequence[Any]],
) -> tuple[dict[Hashable, Any], list[Hashable]]:
    """Majority label per unit, with ties left out and listed.

    Args:
        labels_per_unit: unit -> the labels it received (``None`` entries are ignored).

    Returns:
        ``(majority, ties)``: ``majority`` maps each unit with a unique most frequent label to
        it; ``ties`` lists (in input order) the units where two or more labels share the top
        count. A unit with no labels is in neither.
    """
    majority: dict[Hashable, Any] = {}
    ties: list[Hashable] = []
    for unit, values in labels_per_unit.items():
        counts = Counter(v for v in values if not _is_missing(v)).most_common()
        if not counts:
            continue
        if len(counts) > 1 and counts[0][1] == counts[1][1]:
            ties.append(unit)
        else:
            majority[unit] = counts[0][0]
    return majority, ties


# --------------------------------------------------------------------------------------------
# many raters


def _reliability_matrix(
    matrix_or_rows: Any, labels: Sequence[Any] | None, level: str, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """Float matrix raters x units (NaN = missing) and the value domain."""
    if isinstance(matrix_or_rows, Mapping):
        units: dict[Hashable, None] = {}
        for ratings in matrix_or_rows.values():
            for u in ratings:
                units.setdefault(u, None)
        rows = [[ratings.get(u) for u in units] for ratings in matrix_or_rows.values()]
    else:
        rows = [list(r) for r in matrix_or_rows]
    if rows and len({len(r) for r in rows}) != 1:
        raise ValueError(f"{where}: every rater row must have one entry per unit")
    flat = [v for r in rows for v in r if not _is_missing(v)]
    numeric = all(isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool) for v in flat)
    if labels is None:
        if not numeric and level != "nominal":
            raise ValueError(f"{where}: level={level!r} with non-numeric values needs labels= in their order")
        cats = _sorted_categories(flat)
    else:
        cats = tuple(labels)
    index = _label_index(cats, where)
    use_values = all(isinstance(c, int | float | np.integer | np.floating) and not isinstance(c, bool) for c in cats)
    domain = np.asarray(cats, dtype=float) if use_values else np.arange(len(cats), dtype=float)
    out = np.full((len(rows), len(rows[0]) if rows else 0), np.nan)
    for i, r in enumerate(rows):
        for j, v in enumerate(r):
            if _is_missing(v):
                continue
            try:
                out[i, j] = domain[index[v]]
            except (KeyError, TypeError):
                raise ValueError(
                    f"{where}: rater {i}, unit {j}: value {v!r} is not one of labels {list(cats)!r}"
                ) from None
    return out, domain


def _value_counts(data: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """units x values count matrix."""
    if data.size == 0:
        return np.zeros((0, len(domain)), dtype=np.int64)
    return (data.T[..., None] == domain[None, None, :]).sum(axis=1)


def _alpha_from_counts(vc: np.ndarray, domain: np.ndarray, level: str) -> float | None:
    pairable = vc[vc.sum(axis=1) >= 2]
    if len(pairable) < 2:
        return None
    if int((pairable.sum(axis=0) > 0).sum()) < 2:  # every pairable value is one category
        return None
    value = krippendorff.alpha(value_counts=pairable, value_domain=domain, level_of_measurement=level)  # pyright: ignore[reportArgumentType]  # LEVELS checked by the callers
    return float(value) if math.isfinite(value) else None


def krippendorff_alpha(
    matrix_or_rows: Any,
    *,
    level: str = "nominal",
    labels: Sequence[Any] | None = None,
) -> float | None:
    """Krippendorff's alpha over raters x units reliability data (via the ``krippendorff`` package).

    Args:
        matrix_or_rows: either a 2-D sequence, one row per rater and one column per unit, or a
            mapping ``rater -> {unit: value}`` (units missing from a rater's mapping count as
            missing). Missing ratings are ``None`` or NaN.
        level: ``"nominal"``, ``"ordinal"`` or ``"interval"``.
        labels: category order. String categories are coded by their position in ``labels``;
            numeric ``labels`` are used as the values themselves (so interval distances are real).
            Required for ordinal/interval strings.

    Returns:
        Alpha (1 = perfect agreement, 0 = chance, can be negative); ``None`` when fewer than 2
        units have at least two ratings, or when all pairable ratings are one category (expected
        disagreement 0).
    """
    if level not in LEVELS:
        raise ValueError(f"krippendorff_alpha: level must be one of {LEVELS}, got {level!r}")
    data, domain = _reliability_matrix(matrix_or_rows, labels, level, "krippendorff_alpha")
    return _alpha_from_counts(_value_counts(data, domain), domain, level)


def gwet_ac1_raters(matrix_or_rows: Any, *, labels: Sequence[Any] | None = None) -> float | None:
    """Gwet's AC1 for any number of raters (nominal), missing ratings allowed.

    Same input shapes as :func:`krippendorff_alpha`. With ``r_ik`` the raters putting unit ``i``
    in category ``k`` and ``r_i`` its ratings: ``p_a`` is the mean over units with ``r_i >= 2`` of
    ``sum_k r_ik (r_ik - 1) / (r_i (r_i - 1))``; ``pi_k`` the mean over rated units of
    ``r_ik / r_i``; ``p_e = sum_k pi_k (1 - pi_k) / (K - 1)``. With two raters and no missing
    ratings it equals :func:`gwet_ac1`.

    Returns:
        AC1, or ``None`` when fewer than 2 units have two ratings or ``K < 2``.
    """
    data, domain = _reliability_matrix(matrix_or_rows, labels, "nominal", "gwet_ac1_raters")
    k = len(domain)
    vc = _value_counts(data, domain).astype(float)
    r = vc.sum(axis=1)
    if k < 2 or int((r >= 2).sum()) < 2:
        return None
    two = vc[r >= 2]
    r2 = two.sum(axis=1)
    pa = float(np.mean((two * (two - 1)).sum(axis=1) / (r2 * (r2 - 1))))
    rated = vc[r >= 1]
    pi = (rated / rated.sum(axis=1, keepdims=True)).mean(axis=0)
    pe = float((pi * (1.0 - pi)).sum() / (k - 1))
    return float((pa - pe) / (1.0 - pe))


# --------------------------------------------------------------------------------------------
# summaries with confidence intervals


def _ci_list(interval: Any) -> list[float | None]:
    return [interval.low, interval.high]


def agreement_with_ci(
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    labels: Sequence[Any],
    rng: np.random.Generator,
    n_boot: int = 1000,
    level: float = 0.95,
    clusters: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """Agreement of ``b`` (e.g. a judge) with ``a`` (e.g. the human majority) with bootstrap CIs.

    Units missing either label are left out. CIs resample units, or whole clusters when
    ``clusters`` gives one cluster id per unit (e.g. the answer a claim belongs to; see
    :func:`workbench.stats.bootstrap.bootstrap_ci` for the rule when they are ``[None, None]``).

    Returns:
        ``{"n", "kappa", "kappa_ci": [lo, hi], "ac1", "ac1_ci", "accuracy", "confusion"}`` where
        ``confusion`` is ``{"labels", "matrix"}`` with rows = ``a`` and columns = ``b``. Undefined
        values are ``None`` (e.g. kappa when everything is one class, accuracy when ``n == 0``).
    """
    ca, cb, cats = _encode_pairs(a, b, labels, "agreement_with_ci")
    if clusters is not None:
        if len(clusters) != len(a):
            raise ValueError(f"agreement_with_ci: clusters has {len(clusters)} entries, expected {len(a)}")
        clusters = [c for x, y, c in zip(a, b, clusters, strict=True) if not _is_missing(x) and not _is_missing(y)]
    k = len(cats)
    w = _weight_matrix(k, None)
    table = _table(ca, cb, k)
    n = int(len(ca))

    def kappa_stat(x: np.ndarray, y: np.ndarray) -> float | None:
        return _kappa_from_table(_table(x, y, k), w)

    def ac1_stat(x: np.ndarray, y: np.ndarray) -> float | None:
        return _ac1_from_table(_table(x, y, k))

    return {
        "n": n,
        "kappa": _kappa_from_table(table, w),
        "kappa_ci": _ci_list(bootstrap_ci(kappa_stat, ca, cb, rng=rng, n_boot=n_boot, level=level,
                                          clusters=clusters)),
        "ac1": _ac1_from_table(table),
        "ac1_ci": _ci_list(bootstrap_ci(ac1_stat, ca, cb, rng=rng, n_boot=n_boot, level=level,
                                        clusters=clusters)),
        "accuracy": float(np.trace(table) / n) if n else None,
        "confusion": Confusion(cats, tuple(tuple(int(v) for v in row) for row in table)).to_dict(),
    }


def human_agreement(
    labels_by_annotator: Mapping[str, Mapping[Hashable, Any]],
    *,
    labels: Sequence[Any],
    rng: np.random.Generator,
    n_boot: int = 1000,
    level: float = 0.95,
    clusters: Mapping[Hashable, Any] | None = None,
) -> dict[str, Any]:
    """Inter-annotator agreement among humans.

    Args:
        labels_by_annotator: annotator -> {unit: label}; an annotator need not label every unit.
        labels: category order (nominal).
        rng: random generator for the bootstrap over units.
        clusters: unit -> cluster id (e.g. a claim's answer); the alpha CI then resamples whole
            clusters. ``None`` = units independent. A unit missing from the mapping is its own
            cluster.

    Returns:
        ``{"alpha", "alpha_ci": [lo, hi], "pairwise_kappa": {"a|b": kappa}, "pairwise_n":
        {"a|b": units both labelled}, "n": units with at least two labels, "class_counts":
        {label: ratings}}``: nominal Krippendorff's alpha over all annotators (CI by resampling
        units or clusters), and Cohen's kappa for each pair of annotators (names sorted, joined
        by ``|``) on the units both labelled. Undefined values are ``None`` (e.g. a single
        annotator gives alpha ``None`` and no pairs).
    """
    data, domain = _reliability_matrix(labels_by_annotator, labels, "nominal", "human_agreement")
    vc = _value_counts(data, domain)
    unit_clusters = None
    if clusters is not None:
        order: dict[Hashable, None] = {}
        for ratings in labels_by_annotator.values():
            for u in ratings:
                order.setdefault(u, None)
        unit_clusters = [clusters.get(u, ("unit", u)) for u in order]

    def alpha_stat(counts: np.ndarray) -> float | None:
        return _alpha_from_counts(counts, domain, "nominal")

    alpha = _alpha_from_counts(vc, domain, "nominal")
    alpha_ci = bootstrap_ci(alpha_stat, vc, rng=rng, n_boot=n_boot, level=level, clusters=unit_clusters)

    pairwise: dict[str, float | None] = {}
    overlap: dict[str, int] = {}
    for x, y in combinations(sorted(labels_by_annotator), 2):
        lx, ly = labels_by_annotator[x], labels_by_annotator[y]
        common = [u for u in lx if u in ly and not _is_missing(lx[u]) and not _is_missing(ly[u])]
        pairwise[f"{x}|{y}"] = cohen_kappa([lx[u] for u in common], [ly[u] for u in common], labels=labels)
        overlap[f"{x}|{y}"] = len(common)
    cats = tuple(labels)
    class_counts = {cats[i]: int(c) for i, c in enumerate(vc[vc.sum(axis=1) >= 2].sum(axis=0))} if len(vc) else {}
    return {"alpha": alpha, "alpha_ci": _ci_list(alpha_ci), "pairwise_kappa": pairwise, "pairwise_n": overlap,
            "n": int((vc.sum(axis=1) >= 2).sum()) if len(vc) else 0, "class_counts": class_counts}


def small_sample_reason(n: int, class_counts: Sequence[int], *, min_units: int = MIN_UNITS,
                        min_minority: int = MIN_MINORITY, counted: str = "unit(s)") -> str | None:
    """Why an agreement figure over ``n`` units is too small to read, or ``None`` when it is not.

    The rule (documented in ``docs/DESIGN.md``): fewer than ``min_units`` (30) units, or fewer
    than ``min_minority`` (5) units of the rarer class (``class_counts`` = units per class of the
    reference labels; two or more classes). Kappa and alpha on such samples swing between
    extremes, and their bootstrap interval can collapse to a point (``[1, 1]``) that looks certain.
    ``counted`` names what ``class_counts`` counts (units, or ratings for a multi-rater block).
    """
    if n < min_units:
        return f"only {n} unit(s); at least {min_units} are needed to read agreement"
    counts = sorted(int(c) for c in class_counts)
    rarer = counts[0] if len(counts) >= 2 else 0
    if rarer < min_minority:
        return (f"only {rarer} {counted} of the rarer class; at least {min_minority} are needed "
                "(kappa and alpha hinge on the rarer class)")
    return None


def pairwise_summary(pairwise_kappa: Mapping[str, float | None], pairwise_n: Mapping[str, int], *,
                     min_overlap: int = MIN_UNITS) -> dict[str, Any]:
    """Summary of annotator-pair kappas over the pairs that labelled enough units in common.

    Args:
        pairwise_kappa: ``"a|b" -> kappa`` (``None`` = undefined).
        pairwise_n: ``"a|b" -> units both labelled``.
        min_overlap: a pair counts when it shares at least this many units and its kappa is defined.

    Returns:
        ``{"pairs": all pairs, "pairs_read": pairs counted, "min_overlap", "mean", "min", "max",
        "min_pair", "max_pair", "read": [pairs counted, sorted by kappa]}``; ``mean``/``min``/``max``
        are ``None`` when no pair counts.
    """
    read = [(p, k) for p, k in pairwise_kappa.items() if k is not None and pairwise_n.get(p, 0) >= min_overlap]
    read.sort(key=lambda pk: pk[1])
    values = [k for _, k in read]
    return {"pairs": len(pairwise_kappa), "pairs_read": len(read), "min_overlap": min_overlap,
            "mean": float(np.mean(values)) if values else None,
            "min": values[0] if values else None, "max": values[-1] if values else None,
            "min_pair": read[0][0] if read else None, "max_pair": read[-1][0] if read else None,
            "read": [p for p, _ in read]}
