"""Which unit to label next: "label where it helps most" order (pure, no I/O)."""
from __future__ import annotations

import math
from collections.abc import Sequence


def priority_order(
    scores: Sequence[float | None],
    *,
    threshold: float,
    second_scores: Sequence[float | None] | None = None,
) -> list[int]:
    """Indices of units in "label where it helps most" order.

    Units whose human label would most change the estimates come first:

    1. units where two judges disagree (one at or above ``threshold``, the other below), when
       ``second_scores`` is given;
    2. then by distance of the judge's score to ``threshold``, smallest first (near the
       threshold = where a calibrated judge is least confident and where the threshold choice
       is decided); with two judges the distance of their mean score;
    3. ties keep index order; units without any score come last, in index order.

    Args:
        scores: the judge's continuous score in [0, 1] per unit (``None`` = not judged).
        threshold: the current decision threshold.
        second_scores: a second judge's scores on the same units (``None`` entries allowed).

    Returns:
        A permutation of ``range(len(scores))``.

    Raises:
        ValueError: ``second_scores`` of another length.
    """
    if second_scores is not None and len(second_scores) != len(scores):
        raise ValueError(f"priority_order: second_scores has {len(second_scores)} values, scores {len(scores)}")

    def key(i: int) -> tuple:
        a = scores[i]
        b = second_scores[i] if second_scores is not None else None
        present = [float(x) for x in (a, b) if x is not None and math.isfinite(float(x))]
        if not present:
            return (2, 0, 0.0, i)
        disagree = len(present) == 2 and (present[0] >= threshold) != (present[1] >= threshold)
        return (0, 0 if disagree else 1, abs(sum(present) / len(present) - threshold), i)

    return sorted(range(len(scores)), key=key)
