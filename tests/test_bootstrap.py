"""Bootstrap CIs: units resampled jointly, explicit rng, the None rule, width shrinking with n."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.stats import bootstrap_ci, cohen_kappa, interval_from_samples
from workbench.stats.bootstrap import MIN_VALID_COUNT
from workbench.types import Interval


def mean(x):
    return float(np.mean(x))


def test_reproducible_with_explicit_rng_and_no_global_seed():
    x = np.arange(30, dtype=float)
    state = np.random.get_state()
    one = bootstrap_ci(mean, x, rng=np.random.default_rng(42), n_boot=300)
    two = bootstrap_ci(mean, x, rng=np.random.default_rng(42), n_boot=300)
    assert one == two
    assert one.level == 0.95
    assert np.all(np.random.get_state()[1] == state[1])  # global state untouched


def test_mean_interval_close_to_normal_theory():
    rng = np.random.default_rng(0)
    x = rng.normal(10.0, 2.0, size=400)
    ci = bootstrap_ci(mean, x, rng=rng, n_boot=2000)
    se = x.std(ddof=1) / np.sqrt(len(x))
    # percentile bootstrap of a mean ~ mean +- 1.96 se (within 15 % of the half-width)
    assert ci.low == pytest.approx(x.mean() - 1.96 * se, abs=0.3 * se)
    assert ci.high == pytest.approx(x.mean() + 1.96 * se, abs=0.3 * se)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.lists(st.floats(-100, 100, allow_nan=False), min_size=5, max_size=60), st.integers(0, 2**32 - 1))
def test_interval_contains_point_estimate(values, seed):
    ci = bootstrap_ci(mean, np.array(values), rng=np.random.default_rng(seed), n_boot=200)
    assert ci.low <= np.mean(values) + 1e-9
    assert ci.high >= np.mean(values) - 1e-9


def test_narrower_with_more_units():
    rng = np.random.default_rng(5)
    truth = rng.random(2000) < 0.5
    judge = np.where(rng.random(2000) < 0.8, truth, ~truth)

    def kappa(a, b):
        return cohen_kappa(list(a), list(b), labels=[True, False])

    widths = []
    for n in (50, 200, 800):
        ci = bootstrap_ci(kappa, truth[:n], judge[:n], rng=np.random.default_rng(1), n_boot=300)
        assert ci.low < kappa(truth[:n], judge[:n]) < ci.high
        widths.append(ci.high - ci.low)
    assert widths[0] > widths[1] > widths[2]
    # width ~ 1/sqrt(n): quadrupling n about halves it
    assert widths[1] / widths[2] == pytest.approx(2.0, rel=0.3)


def test_rows_are_resampled_jointly():
    a = np.arange(20)
    b = np.arange(20) * 10

    def stat(x, y):
        assert np.all(y == x * 10)  # pairs stay paired
        return float(np.mean(x))

    ci = bootstrap_ci(stat, a, b, rng=np.random.default_rng(0), n_boot=100)
    assert ci.low < 9.5 < ci.high
    # 2-D arrays are resampled along axis 0 (units = rows)
    m = np.column_stack([a, b])
    ci2 = bootstrap_ci(lambda rows: stat(rows[:, 0], rows[:, 1]), m, rng=np.random.default_rng(0), n_boot=100)
    assert ci2 == ci


def test_none_resamples_skipped_and_too_few_gives_none():
    x = np.array([0.0] * 18 + [1.0] * 2)

    def needs_a_one(v):
        return float(v.mean()) if v.max() == 1.0 else None

    ci = bootstrap_ci(needs_a_one, x, rng=np.random.default_rng(0), n_boot=500)
    # P(no 1 in a resample) = 0.9**20 ~ 12 %: most resamples valid, interval reported
    assert ci.low is not None and ci.low >= 0.05 - 1e-12
    rare = np.array([0.0] * 199 + [1.0])
    # P(the single 1 drawn) = 1 - (199/200)**200 ~ 63 %: above half, so still reported
    assert bootstrap_ci(needs_a_one, rare, rng=np.random.default_rng(0), n_boot=500).low is not None
    # a statistic that is None in 70 % of resamples (deterministic counter) -> Interval(None, None)
    calls = iter(range(10**6))

    def mostly_none(v):
        return 1.0 if next(calls) % 10 < 3 else None  # call 0 (the original data) is valid

    assert bootstrap_ci(mostly_none, x, rng=np.random.default_rng(0), n_boot=500) == Interval(None, None, 0.95)
    always_none_after_first = iter([1.0] + [None] * 1000)
    assert bootstrap_ci(lambda v: next(always_none_after_first), x, rng=np.random.default_rng(0), n_boot=100) == Interval(
        None, None, 0.95
    )


def test_degenerate_inputs():
    rng = np.random.default_rng(0)
    assert bootstrap_ci(mean, [1.0], rng=rng) == Interval(None, None, 0.95)  # fewer than 2 units
    assert bootstrap_ci(lambda v: None, [1.0, 2.0, 3.0], rng=rng) == Interval(None, None, 0.95)  # undefined on data
    assert bootstrap_ci(lambda v: float("nan"), [1.0, 2.0], rng=rng, level=0.9) == Interval(None, None, 0.9)
    with pytest.raises(ValueError, match="same number of units"):
        bootstrap_ci(mean, [1, 2, 3], [1, 2], rng=rng)
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci(mean, [1, 2, 3], rng=rng, level=95)
    with pytest.raises(ValueError, match="method"):
        bootstrap_ci(mean, [1, 2, 3], rng=rng, method="bca")


def test_interval_from_samples_rule_and_basic_method():
    vals = np.linspace(0.0, 1.0, 101)
    iv = interval_from_samples(vals, n_boot=101, level=0.9)
    assert iv == Interval(pytest.approx(0.05), pytest.approx(0.95), 0.9)
    basic = interval_from_samples(vals, n_boot=101, level=0.9, method="basic", estimate=0.7)
    # basic: 2*theta - q_hi, 2*theta - q_lo
    assert basic.low == pytest.approx(1.4 - 0.95) and basic.high == pytest.approx(1.4 - 0.05)
    # fewer than half of n_boot valid -> no interval
    assert interval_from_samples(vals[:40], n_boot=100) == Interval(None, None, 0.95)
    # never fewer than MIN_VALID_COUNT valid replicates
    assert interval_from_samples([0.5] * (MIN_VALID_COUNT - 1), n_boot=MIN_VALID_COUNT - 1) == Interval(None, None, 0.95)
    assert interval_from_samples([0.5] * MIN_VALID_COUNT, n_boot=MIN_VALID_COUNT) == Interval(0.5, 0.5, 0.95)
