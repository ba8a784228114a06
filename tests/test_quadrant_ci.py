"""Bootstrap intervals on the quadrant shares (workbench.metrics.quadrant.quadrant_share_ci)."""
from __future__ import annotations

import numpy as np
import pytest

from workbench.metrics.quadrant import SHARE_CELLS, quadrant_share_ci
from workbench.scoring.pipeline import summarize
from workbench.types import ItemScore, JudgeUsage, Thresholds

CELLS = ["pass"] * 50 + ["faithful_irrelevant"] * 25 + ["relevant_unfaithful"] * 10 + ["fail"] * 10 \
    + ["abstained"] * 5


def test_intervals_contain_point_shares_and_have_binomial_width():
    ci = quadrant_share_ci(CELLS, rng=np.random.default_rng(1), n_boot=2000)
    assert set(ci) == set(SHARE_CELLS)
    n = len(CELLS)
    for cell in SHARE_CELLS:
        share = CELLS.count(cell) / n
        low, high = ci[cell]
        assert low < share < high
        # percentile bootstrap of a proportion ~ +-1.96 * sqrt(p(1-p)/n)
        assert high - low == pytest.approx(2 * 1.96 * (share * (1 - share) / n) ** 0.5, rel=0.15)


def test_reproducible_with_the_same_rng_and_degenerate_rules():
    a = quadrant_share_ci(CELLS, rng=np.random.default_rng(7))
    b = quadrant_share_ci(CELLS, rng=np.random.default_rng(7))
    assert a == b
    assert quadrant_share_ci([], rng=np.random.default_rng(0)) == {c: [None, None] for c in SHARE_CELLS}
    only_pass = quadrant_share_ci(["pass"] * 8, rng=np.random.default_rng(0))
    assert only_pass["pass"] == [1.0, 1.0] and only_pass["fail"] == [0.0, 0.0]
    with pytest.raises(ValueError, match="unknown quadrant cells"):
        quadrant_share_ci(["nope"], rng=np.random.default_rng(0))


def test_summary_has_quadrant_ci_beside_unchanged_counts():
    records = [ItemScore(str(i), faithfulness=None, answer_relevance=None, quadrant=c, abstained=c == "abstained",
                         answerable=True) for i, c in enumerate(CELLS)]
    summary = summarize(records, thresholds=Thresholds(), usage=JudgeUsage(), fingerprint="x")
    assert summary["quadrant"] == {"pass": 50, "faithful_irrelevant": 25, "relevant_unfaithful": 10, "fail": 10,
                                   "abstained": 5, "unscored": 0}
    assert list(summary["quadrant_ci"]) == list(SHARE_CELLS)
    assert summary["quadrant_ci"]["pass"][0] < 0.5 < summary["quadrant_ci"]["pass"][1]
    assert summary["corrected"] is None
    again = summarize(records, thresholds=Thresholds(), usage=JudgeUsage(), fingerprint="x")
    assert again["quadrant_ci"] == summary["quadrant_ci"]  # default rng is a fixed local generator
