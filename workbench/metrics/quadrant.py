"""The faithfulness x relevance quadrant: one cell per item, routing work to a backlog.

pass: faithful and relevant. faithful_irrelevant: grounded but off the question (retrieval
backlog: the right passage was likely not found). relevant_unfaithful: on topic but not grounded
(generation backlog). fail: neither. abstained: the answer refused. unscored: a score is missing.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from workbench.types import QUADRANTS, Thresholds


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
