"""Threshold sweep / choice / calibration, reliability curve and logistic calibration."""
from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score, precision_score, recall_score

from workbench.stats import (
    calibrate_threshold,
    choose_threshold,
    default_thresholds,
    logistic_calibration,
    reliability_curve,
    sweep_frame,
    threshold_sweep,
)

# Six units; the judge predicts positive when score >= threshold.
SCORES = [0.1, 0.4, 0.35, 0.8, 0.9, 0.6]
HUMAN = [False, False, True, True, True, False]


def test_default_thresholds_are_scores_midpoints_and_bounds():
    got = default_thresholds(SCORES)
    expected = [0.0, 0.1, 0.225, 0.35, 0.375, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 1.0]
    assert got == pytest.approx(expected)
    assert default_thresholds([-0.5, 1.5]).tolist() == [0.0, 0.5, 1.0]  # clipped to [0, 1]


def test_sweep_at_hand_checked_threshold():
    point = next(p for p in threshold_sweep(SCORES, HUMAN) if p.threshold == 0.5)
    # at t=0.5 the judge says positive for 0.6, 0.8, 0.9:
    # tp = 2 (0.8, 0.9), fp = 1 (0.6), fn = 1 (0.35), tn = 2 (0.1, 0.4)
    assert (point.tp, point.fp, point.fn, point.tn, point.n_pos_pred, point.n) == (2, 1, 1, 2, 3, 6)
    assert point.accuracy == pytest.approx(4 / 6)
    assert point.precision == pytest.approx(2 / 3)
    assert point.recall == pytest.approx(2 / 3)
    assert point.specificity == pytest.approx(2 / 3)
    assert point.f1 == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))
    assert point.youden_j == pytest.approx(2 / 3 + 2 / 3 - 1)
    # po = 4/6; pe = (3*3 + 3*3)/36 = 0.5; kappa = (2/3 - 1/2) / (1/2) = 1/3
    assert point.kappa == pytest.approx(1 / 3)


def test_sweep_matches_sklearn_everywhere():
    rng = np.random.default_rng(2)
    y = rng.random(60) < 0.4
    s = np.clip(0.5 + 0.3 * (y - 0.5) + rng.normal(0, 0.2, 60), 0, 1).round(1)
    for p in threshold_sweep(s.tolist(), y.tolist()):
        pred = s >= p.threshold
        if 0 < pred.sum() < len(pred):
            assert p.kappa == pytest.approx(cohen_kappa_score(y, pred), abs=1e-12)
            assert p.precision == pytest.approx(precision_score(y, pred))
        assert p.recall == pytest.approx(recall_score(y, pred))
        assert p.f1 == pytest.approx(f1_score(y, pred, zero_division=0.0))
        assert p.n_pos_pred == int(pred.sum())


def test_sweep_degenerate_rules():
    sweep = threshold_sweep([0.2, 0.7, 0.9], [True, True, True])
    top = sweep[-1]  # t = 1.0: nothing predicted positive
    assert top.n_pos_pred == 0 and top.precision is None and top.f1 == 0.0
    assert all(p.specificity is None and p.youden_j is None for p in sweep)  # no human negatives
    assert sweep[0].kappa is None  # t = 0: everything positive on both sides -> pe = 1
    assert next(p for p in sweep if p.threshold == 0.7).kappa == 0.0
    frame = sweep_frame(sweep)
    assert list(frame.columns[:3]) == ["threshold", "kappa", "accuracy"]
    assert frame["precision"].isna().iloc[-1]
    with pytest.raises(ValueError, match="position 1 is None"):
        threshold_sweep([0.2, None], [True, False])
    with pytest.raises(ValueError, match="human_positive at position 0"):
        threshold_sweep([0.2], ["yes"])


def test_choose_threshold_best_and_tie_rule():
    sweep = threshold_sweep(SCORES, HUMAN)
    best = choose_threshold(sweep, criterion="kappa")
    # kappa = 2/3 for every t in (0.6, 0.8] (judge+ = 0.8, 0.9): candidates 0.7 and 0.8 tie;
    # the one closest to 0.5 wins
    assert best.threshold == 0.7
    assert best.value == pytest.approx(2 / 3)
    assert best.point.kappa == pytest.approx(2 / 3)
    assert choose_threshold(sweep, criterion="youden").threshold == 0.7  # J = 2/3 + 1 - 1
    # equally close to 0.5 -> the lower threshold
    tie = threshold_sweep([0.2, 0.8], [False, True], thresholds=[0.6, 0.4])
    assert choose_threshold(tie, criterion="f1").threshold == 0.4
    # human labels of one class only -> None for every criterion (kappa would be 0 or undefined)
    for criterion in ("kappa", "youden", "f1"):
        assert choose_threshold(threshold_sweep([0.2, 0.9], [True, True]), criterion=criterion) is None
        assert choose_threshold(threshold_sweep([0.2, 0.9], [False, False]), criterion=criterion) is None
    with pytest.raises(ValueError, match="criterion"):
        choose_threshold(sweep, criterion="auc")


def test_calibrate_threshold_entry():
    rng = np.random.default_rng(4)
    y = rng.random(300) < 0.5
    s = np.clip(np.where(y, rng.normal(0.7, 0.15, 300), rng.normal(0.35, 0.15, 300)), 0, 1)
    out = calibrate_threshold(s.tolist(), y.tolist(), criterion="kappa", rng=np.random.default_rng(0), n_boot=300)
    json.dumps(out)
    assert out["n"] == 300 and out["n_positive"] == int(y.sum())
    # the optimum lies between the two class means
    assert 0.4 < out["threshold"] < 0.65
    pred = s >= out["threshold"]
    assert out["kappa"] == pytest.approx(cohen_kappa_score(y, pred))
    lo, hi = out["kappa_ci"]
    assert lo < out["kappa"] < hi
    tlo, thi = out["threshold_ci"]
    assert tlo <= out["threshold"] <= thi
    assert out["note"] == ""
    again = calibrate_threshold(s.tolist(), y.tolist(), criterion="kappa", rng=np.random.default_rng(0), n_boot=300)
    assert again == out


def test_calibrate_threshold_one_class_has_note():
    out = calibrate_threshold([0.1, 0.5, 0.9], [True, True, True], rng=np.random.default_rng(0), n_boot=50)
    assert out["threshold"] is None and out["kappa"] is None and out["kappa_ci"] == [None, None]
    assert "need both classes" in out["note"] and "human positives=3" in out["note"]


def test_reliability_curve_hand_values():
    frame = reliability_curve([0.05, 0.15, 0.12, 0.95, 1.0], [False, True, False, True, True], n_bins=10)
    assert frame["bin_low"].tolist() == pytest.approx([0.0, 0.1, 0.9])  # empty bins left out
    assert frame["bin_high"].tolist() == pytest.approx([0.1, 0.2, 1.0])
    assert frame["mean_score"].tolist() == pytest.approx([0.05, 0.135, 0.975])
    assert frame["observed_rate"].tolist() == pytest.approx([0.0, 0.5, 1.0])
    assert frame["n"].tolist() == [1, 2, 2]
    assert not frame.isna().any().any()
    with pytest.raises(ValueError, match=r"position 0 is 1.2"):
        reliability_curve([1.2], [True])


def test_logistic_calibration_recovers_parameters():
    rng = np.random.default_rng(11)
    s = rng.random(4000)
    y = rng.random(4000) < 1 / (1 + np.exp(-(-3.0 + 6.0 * s)))
    fit = logistic_calibration(s.tolist(), y.tolist())
    assert fit.method == "mle"
    assert fit.intercept == pytest.approx(-3.0, abs=0.4)
    assert fit.slope == pytest.approx(6.0, abs=0.7)
    assert fit.predict([0.5])[0] == pytest.approx(0.5, abs=0.05)


def test_logistic_calibration_fallbacks():
    sep = logistic_calibration([0.1, 0.2, 0.8, 0.9], [False, False, True, True])
    assert sep.method == "smoothed" and "separated" in sep.note
    assert 0 < sep.slope < 50  # finite, increasing
    p = sep.predict([0.1, 0.9])
    assert p[0] < 0.5 < p[1]
    one = logistic_calibration([0.1, 0.5, 0.9], [True, True, True])
    assert one.method == "smoothed" and "one class" in one.note
    assert np.all(one.predict([0.1, 0.9]) > 0.5)
    const = logistic_calibration([0.5, 0.5, 0.5], [True, False, True])
    # logit((2 + 0.5) / (3 + 1)) = log(0.625 / 0.375)
    assert const.method == "constant" and const.slope == 0.0
    assert const.intercept == pytest.approx(np.log(0.625 / 0.375))
    assert logistic_calibration([0.5], [True]) is None


def test_score_auc_hand_derived_and_degenerate():
    from workbench.stats import score_auc

    # positives 0.9, 0.4; negatives 0.5, 0.1: pairs (0.9>0.5, 0.9>0.1, 0.4<0.5, 0.4>0.1) -> 3/4
    auc, p = score_auc([0.9, 0.4, 0.5, 0.1], [True, True, False, False])
    assert auc == 0.75 and 0 < p <= 1
    assert score_auc([0.2, 0.3], [True, True]) == (None, None)
