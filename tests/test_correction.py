"""Rate correction: Rogan-Gladen and prediction-powered inference, hand values and a coverage
simulation against a known truth."""
from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.stats import ppi_mean, rogan_gladen, rogan_gladen_ci
from workbench.stats.correction import NOT_BETTER_THAN_CHANCE
from workbench.types import Interval


def test_rogan_gladen_hand_values_and_rules():
    # (0.3 + 0.9 - 1) / (0.8 + 0.9 - 1) = 0.2 / 0.7
    assert rogan_gladen(0.3, 0.8, 0.9) == pytest.approx(0.2 / 0.7)
    # a perfect judge needs no correction
    assert rogan_gladen(0.42, 1.0, 1.0) == pytest.approx(0.42)
    # (0.05 + 0.9 - 1) / 0.7 < 0 -> clipped to 0; (0.99 + 0.9 - 1) / 0.7 > 1 -> clipped to 1
    assert rogan_gladen(0.05, 0.8, 0.9) == 0.0
    assert rogan_gladen(0.99, 0.8, 0.9) == 1.0
    # no better than chance -> None
    assert rogan_gladen(0.3, 0.5, 0.5) is None
    assert rogan_gladen(0.3, 0.4, 0.5) is None
    assert rogan_gladen(None, 0.8, 0.9) is None
    with pytest.raises(ValueError, match="sensitivity must be in"):
        rogan_gladen(0.3, 1.2, 0.9)


def test_rogan_gladen_ci_point_and_notes():
    # labelled: 8 human+ of which the judge finds 6 (sens 0.75); 12 human- of which judge says - for 9 (spec 0.75)
    pairs = [(True, True)] * 6 + [(True, False)] * 2 + [(False, False)] * 9 + [(False, True)] * 3
    scored = [True] * 40 + [False] * 60  # judge rate 0.4
    est, iv, note = rogan_gladen_ci(scored, pairs, rng=np.random.default_rng(0), n_boot=500)
    # (0.4 + 0.75 - 1) / (0.75 + 0.75 - 1) = 0.15 / 0.5
    assert est == pytest.approx(0.3)
    assert iv.low < 0.3 < iv.high
    assert isinstance(note, str)
    again = rogan_gladen_ci(scored, pairs, rng=np.random.default_rng(0), n_boot=500)
    assert again == (est, iv, note)
    # same thing from a boolean array of shape (n, 2)
    assert rogan_gladen_ci(np.array(scored), np.array(pairs), rng=np.random.default_rng(0), n_boot=500) == again

    chance = [(True, True), (True, False), (False, True), (False, False)]
    assert rogan_gladen_ci(scored, chance, rng=np.random.default_rng(0)) == (
        None, Interval(None, None, 0.95), NOT_BETTER_THAN_CHANCE,
    )
    est, iv, note = rogan_gladen_ci(scored, [(True, True)] * 5, rng=np.random.default_rng(0))
    assert est is None and iv.low is None and "human positives and negatives" in note
    assert rogan_gladen_ci([], pairs, rng=np.random.default_rng(0))[2] == "the scored set is empty"


def test_ppi_mean_hand_values():
    human = [1, 0, 1, 1]
    judge = [1, 0, 0, 1]
    unlabelled = [1, 0, 1, 0, 1, 1, 0, 1]
    est, iv = ppi_mean(human, judge, unlabelled, level=0.95)
    # theta = mean(unlabelled) + mean(human - judge) = 5/8 + 1/4
    assert est == pytest.approx(0.875)
    # var(unlabelled, ddof=1) = 1.875/7; var(rectifier [0,0,1,0], ddof=1) = 0.25
    se = math.sqrt((1.875 / 7) / 8 + 0.25 / 4)
    assert iv.low == pytest.approx(0.875 - 1.959963984540054 * se)
    assert iv.high == 1.0  # 0.875 + 0.607 clipped to [0, 1]
    # scores outside [0, 1] are not clipped
    est2, iv2 = ppi_mean([2.0, 4.0], [1.0, 3.0], [10.0, 12.0])
    assert est2 == pytest.approx(12.0) and iv2.low == pytest.approx(12.0 - 1.959963984540054 * 1.0)
    assert ppi_mean([1], [1], [1, 0]) == (None, Interval(None, None, 0.95))
    with pytest.raises(ValueError, match="labelled_judge has 1"):
        ppi_mean([1, 0], [1], [1, 0])
    with pytest.raises(ValueError, match="unlabelled_judge at position 1"):
        ppi_mean([1, 0], [1, 0], [1.0, float("nan")])


def test_corrected_intervals_cover_true_rate_naive_does_not():
    """500 simulated datasets; judge sensitivity 0.85, specificity 0.90, true pass rate 0.30.

    The judge's raw rate is 0.3*0.85 + 0.7*0.10 = 0.325, so its naive binomial 95 % interval
    (N = 3000 scored units) misses 0.30 most of the time; both corrected 95 % intervals, using
    n = 300 human-labelled units, must cover it 90-97 % of the time.
    """
    rng = np.random.default_rng(2024)
    reps, n_lab, n_scored, truth, sens, spec = 500, 300, 3000, 0.30, 0.85, 0.90

    def judge_of(y):
        u = rng.random(y.shape)
        return np.where(y, u < sens, u >= spec)

    y_lab = rng.random((reps, n_lab)) < truth
    f_lab = judge_of(y_lab)
    f_unl = judge_of(rng.random((reps, n_scored)) < truth)

    raw = f_unl.mean(axis=1)
    half = 1.959963984540054 * np.sqrt(raw * (1 - raw) / n_scored)
    naive_cover = np.mean((raw - half <= truth) & (truth <= raw + half))

    rg_cover = ppi_cover = 0
    for r in range(reps):
        _, iv, _ = rogan_gladen_ci(f_unl[r], np.column_stack([y_lab[r], f_lab[r]]), rng=rng, n_boot=1000)
        rg_cover += iv.low <= truth <= iv.high
        _, iv = ppi_mean(y_lab[r], f_lab[r], f_unl[r])
        ppi_cover += iv.low <= truth <= iv.high
    assert 0.90 <= rg_cover / reps <= 0.97
    assert 0.90 <= ppi_cover / reps <= 0.97
    assert naive_cover < 0.6
