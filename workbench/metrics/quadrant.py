"""The faithfulness x relevance quadrant: one cell per item, routing work to a backlog.

pass: faithful and relevant. faithful_irrelevant: grounded but off the question (retrieval
backlog: the right passage was likely not found). relevant_unfaithful: on topic but not grounded
(generation backlog). fail: neither. abstained: the answer refused. unscored: a score is missing.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from workbench.types import QUADRANT_CELLS, QUADRANTS, Thresholds


def quadrant(faithfulness: float | None, relevance: float | None, *, abstained: bool,
             thresholds: Thresholds) -> str:
    """The cell of one item; a score passes when it is at or above its threshold."""
    if abstained:
        return "abstained"
    if faithfulness is None or relevance is None:
        return "unscored"
    faithful = faithfulness >= thresholds.faithfulness
    relevant = relevance >= thresholds.answer_relevance
    if faithful and relevant:
        return "pass"
    if faithful:
        return "faithful_irrelevant"
    if relevant:
        return "relevant_unfaithful"
    return "fail"


def quadrant_counts(cells: Iterable[str]) -> dict[str, int]:
    """Counts for every cell (zeros included), in the contract's order; they add up to the items."""
    counts = Counter(cells)
    unknown = set(counts) - set(QUADRANTS)
    if unknown:
        raise ValueError(f"unknown quadrant cells: {sorted(unknown)}")
    return {cell: counts.get(cell, 0) for cell in QUADRANTS}


#: The four cells of the faithfulness x relevance plot that get a share interval.
SHARE_CELLS: tuple[str, ...] = tuple(cell.name for cell in QUADRANT_CELLS if cell.share)


def quadrant_share_ci(cells, *, rng, n_boot: int = 1000, level: float = 0.95) -> dict[str, list[float | None]]:
    """Bootstrap intervals on the share of items in each of the four quadrant cells.

    The share of a cell is its count over **all** items (``n_items``, abstained and unscored
    included), so it reads directly against the ``quadrant`` counts of ``summary.json``. Each
    resample draws ``n_items`` items with replacement (done as one multinomial draw over the
    cell counts, which is the same distribution); the interval is the percentile interval of
    the resampled shares.

    Args:
        cells: the quadrant cell of every item (values of ``QUADRANTS``).
        rng: a ``numpy.random.Generator`` (explicit randomness; nothing is seeded globally).
        n_boot: number of resamples.
        level: two-sided confidence level.

    Returns:
        ``{cell: [low, high]}`` for ``SHARE_CELLS``. Degenerate rules: no items -> ``[None, None]``
        for every cell; a cell with 0 (or all) of the items gets ``[0.0, 0.0]`` (or
        ``[1.0, 1.0]``): resampling cannot produce what the sample lacks, so read such an
        interval as "no evidence of spread", not as certainty.
    """
    import numpy as np

    counts = quadrant_counts(cells)
    n = sum(counts.values())
    if n == 0:
        return {cell: [None, None] for cell in SHARE_CELLS}
    probs = np.array([counts[c] / n for c in QUADRANTS])
    draws = rng.multinomial(n, probs, size=n_boot) / n
    alpha = (1.0 - level) / 2.0
    out: dict[str, list[float | None]] = {}
    for cell in SHARE_CELLS:
        low, high = np.quantile(draws[:, QUADRANTS.index(cell)], [alpha, 1.0 - alpha])
        out[cell] = [float(low), float(high)]
    return out
