"""Calibrating a judge's continuous score against human binary labels.

* :func:`threshold_sweep` compares ``score >= t`` (judge says positive) with the human label at
  every candidate threshold ``t``;
* :func:`choose_threshold` picks the best threshold by kappa, Youden's J or F1;
* :func:`calibrate_threshold` does both and adds a bootstrap CI (one ``thresholds.json`` entry);
* :func:`reliability_curve` and :func:`logistic_calibration` say how well the score works as a
  probability of the human label.

Undefined quantities are ``None``, never NaN (DataFrames built for charts may show NaN).
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from workbench.stats.bootstrap import Resampler, bootstrap_ci, interval_from_samples

_EPS = 1e-12
CRITERIA = {"kappa": "kappa", "youden": "youden_j", "f1": "f1"}


def _scores_array(scores: Sequence[float], where: str) -> np.ndarray:
    if isinstance(scores, np.ndarray) and scores.dtype.kind == "f" and np.isfinite(scores).all():
        return scores.reshape(-1)
    out = np.empty(len(scores), dtype=float)
    for i, s in enumerate(scores):
        if s is None or isinstance(s, bool):
            raise ValueError(f"{where}: score at position {i} is {s!r}; expected a finite number (filter out unscored units first)")
        v = float(s)
        if not math.isfinite(v):
            raise ValueError(f"{where}: score at position {i} is {s!r}; expected a finite number")
        out[i] = v
    return out


def _bools_array(values: Sequence[Any], n: int, where: str, name: str) -> np.ndarray:
    if len(values) != n:
        raise ValueError(f"{where}: {name} has {len(values)} entries, expected {n} (one per score)")
    if isinstance(values, np.ndarray) and values.dtype == bool:
        return values.reshape(-1)
    out = np.empty(n, dtype=bool)
    for i, v in enumerate(values):
        if v is None or not isinstance(v, bool | np.bool_ | int | np.integer) or int(v) not in (0, 1):
            raise ValueError(f"{where}: {name} at position {i} is {v!r}; expected True/False")
        out[i] = bool(v)
    return out


def default_thresholds(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Candidate thresholds: the distinct scores, midpoints between neighbours, 0 and 1.

    All candidates are clipped to [0, 1] and deduplicated, in increasing order.
    """
    uniq = np.unique(np.asarray(scores, dtype=float))
    mids = (uniq[:-1] + uniq[1:]) / 2.0 if len(uniq) > 1 else np.empty(0)
    cand = np.concatenate([uniq, mids, [0.0, 1.0]])
    return np.unique(np.clip(cand, 0.0, 1.0))


@dataclass(frozen=True)
class SweepPoint:
    """Judge (``score >= threshold``) versus human label at one threshold.

    Counts: ``tp`` judge+ human+, ``fp`` judge+ human-, ``fn`` judge- human+, ``tn`` judge- human-.
    Rules: ``precision`` is ``None`` when nothing is predicted positive; ``recall`` when no
    human positive; ``specificity`` when no human negative; ``youden_j = recall + specificity - 1``
    when both exist; ``f1 = 2tp / (2tp + fp + fn)``, ``None`` when that denominator is 0;
    ``kappa`` is Cohen's kappa of the 2x2 table, ``None`` when ``n < 2`` or chance agreement is 1.
    """

    threshold: float
    kappa: float | None
    accuracy: float | None
    precision: float | None
    recall: float | None
    specificity: float | None
    f1: float | None
    youden_j: float | None
    n_pos_pred: int
    n: int
    tp: int
    fp: int
    fn: int
    tn: int


def _kappa_2x2(tp: int, fp: int, fn: int, tn: int) -> float | None:
    n = tp + fp + fn + tn
    if n < 2:
        return None
    po = (tp + tn) / n
    pe = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / (n * n)
    if 1.0 - pe <= _EPS:
        return None
    return float((po - pe) / (1.0 - pe))


def _counts(s: np.ndarray, y: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, ...]:
    s_all = np.sort(s)
    s_pos = np.sort(s[y])
    n, p = len(s), len(s_pos)
    n_pos_pred = n - np.searchsorted(s_all, thresholds, side="left")
    tp = p - np.searchsorted(s_pos, thresholds, side="left")
    fp = n_pos_pred - tp
    fn = p - tp
    tn = (n - p) - fp
    return n_pos_pred, tp, fp, fn, tn


def _sweep_arrays(s: np.ndarray, y: np.ndarray, t: np.ndarray) -> dict[str, np.ndarray]:
    """Vectorised sweep: integer counts and float metrics (NaN where undefined) per threshold."""
    n_pos_pred, tp, fp, fn, tn = _counts(s, y, t)
    n, p = len(s), int(y.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        tpf, fpf, fnf, tnf = (v.astype(float) for v in (tp, fp, fn, tn))
        recall = tpf / p if p else np.full(len(t), np.nan)
        spec = tnf / (n - p) if n - p else np.full(len(t), np.nan)
        prec = np.where(n_pos_pred > 0, tpf / np.maximum(n_pos_pred, 1), np.nan)
        f1_den = 2 * tpf + fpf + fnf
        f1 = np.where(f1_den > 0, 2 * tpf / np.where(f1_den > 0, f1_den, 1), np.nan)
        acc = (tpf + tnf) / n if n else np.full(len(t), np.nan)
        if n >= 2:
            po = (tpf + tnf) / n
            pe = ((tpf + fpf) * (tpf + fnf) + (fnf + tnf) * (fpf + tnf)) / (n * n)
            kappa = np.where(1.0 - pe > _EPS, (po - pe) / np.where(1.0 - pe > _EPS, 1.0 - pe, 1.0), np.nan)
        else:
            kappa = np.full(len(t), np.nan)
    return {
        "threshold": t, "kappa": kappa, "accuracy": acc, "precision": prec, "recall": recall,
        "specificity": spec, "f1": f1, "youden_j": recall + spec - 1.0, "n_pos_pred": n_pos_pred,
        "tp": tp, "fp": fp, "fn": fn, "tn": tn,
    }


def _opt(v: float) -> float | None:
    return None if math.isnan(v) else float(v)


def threshold_sweep(
    scores: Sequence[float],
    human_positive: Sequence[bool],
    *,
    thresholds: Sequence[float] | None = None,
) -> list[SweepPoint]:
    """Agreement of the thresholded judge score with the human label at each threshold.

    Args:
        scores: the judge's continuous score per unit (finite numbers, normally in [0, 1]).
        human_positive: the human (majority) label per unit, ``True`` = positive class.
        thresholds: candidates; default :func:`default_thresholds` of ``scores``.

    Returns:
        One :class:`SweepPoint` per threshold, in increasing threshold order. The judge predicts
        positive when ``score >= threshold``.

    Raises:
        ValueError: a score that is ``None``/NaN, a label that is not a bool, length mismatch.
    """
    s = _scores_array(scores, "threshold_sweep")
    y = _bools_array(human_positive, len(s), "threshold_sweep", "human_positive")
    t = default_thresholds(s) if thresholds is None else np.sort(np.asarray(list(thresholds), dtype=float))
    m = _sweep_arrays(s, y, t)
    floats = ("kappa", "accuracy", "precision", "recall", "specificity", "f1", "youden_j")
    ints = ("n_pos_pred", "tp", "fp", "fn", "tn")
    return [
        SweepPoint(
            threshold=float(t[i]),
            n=len(s),
            **{k: _opt(m[k][i]) for k in floats},
            **{k: int(m[k][i]) for k in ints},
        )
        for i in range(len(t))
    ]


def _best_index(t: np.ndarray, values: np.ndarray, y: np.ndarray) -> int | None:
    """Index of the best finite value; ties -> threshold closest to 0.5, then the lower one.

    ``None`` when ``y`` is one class (same rule as :func:`choose_threshold`)."""
    if y.all() or not y.any():
        return None
    ok = ~np.isnan(values)
    if not ok.any():
        return None
    best = values[ok].max()
    cand = np.flatnonzero(ok & (values >= best - _EPS))
    return int(min(cand, key=lambda i: (abs(t[i] - 0.5), t[i])))


def sweep_frame(sweep: Sequence[SweepPoint]) -> pd.DataFrame:
    """The sweep as a DataFrame (one row per threshold) for tables and charts; ``None`` -> NaN."""
    cols = list(SweepPoint.__dataclass_fields__)
    frame = pd.DataFrame([asdict(p) for p in sweep], columns=cols)
    for col in ("kappa", "accuracy", "precision", "recall", "specificity", "f1", "youden_j"):
        frame[col] = pd.Series(pd.to_numeric(frame[col], errors="coerce"), index=frame.index).astype(float)
    return frame


@dataclass(frozen=True)
class ChosenThreshold:
    """The threshold picked by a criterion, its value and the full sweep point."""

    threshold: float
    value: float
    criterion: str
    point: SweepPoint


def choose_threshold(sweep: Sequence[SweepPoint], *, criterion: str = "kappa") -> ChosenThreshold | None:
    """Pick the threshold that maximises ``criterion`` over a sweep.

    Args:
        sweep: output of :func:`threshold_sweep`.
        criterion: ``"kappa"`` (Cohen's kappa with the human labels), ``"youden"`` (Youden's J =
            recall + specificity - 1) or ``"f1"``.

    Returns:
        The best :class:`ChosenThreshold`, or ``None`` when the human labels are one class only
        (then no criterion is informative: kappa is 0 or undefined, Youden's J undefined, F1
        trivially maximised) or the criterion is undefined at every threshold.

    Tie rule: among thresholds whose value is within 1e-12 of the best, the one closest to 0.5
    wins; if two are equally close, the lower one.
    """
    if criterion not in CRITERIA:
        raise ValueError(f"choose_threshold: criterion must be one of {tuple(CRITERIA)}, got {criterion!r}")
    field = CRITERIA[criterion]
    if not sweep or sweep[0].tp + sweep[0].fn in (0, sweep[0].n):
        return None
    valued = [(getattr(p, field), p) for p in sweep if getattr(p, field) is not None]
    if not valued:
        return None
    best = max(v for v, _ in valued)
    tied = [p for v, p in valued if v >= best - _EPS]
    pick = min(tied, key=lambda p: (abs(p.threshold - 0.5), p.threshold))
    return ChosenThreshold(threshold=pick.threshold, value=float(getattr(pick, field)), criterion=criterion, point=pick)


def calibrate_threshold(
    scores: Sequence[float],
    human_positive: Sequence[bool],
    *,
    criterion: str = "kappa",
    rng: np.random.Generator,
    n_boot: int = 1000,
    level: float = 0.95,
    thresholds: Sequence[float] | None = None,
    clusters: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """Choose a threshold on human labels and report it as one ``thresholds.json`` entry.

    ``kappa_ci`` is a bootstrap CI (resampling units, or whole clusters when ``clusters`` gives
    one id per unit, e.g. the answer of each claim) of kappa *at the chosen threshold*; it does
    not include the optimism of choosing that threshold on the same data. ``threshold_ci``
    shows how stable the choice is: the threshold is re-chosen (same criterion, same tie rule)
    on every resample (same resampling).

    Returns:
        ``{"threshold", "criterion", "value", "kappa", "kappa_ci", "threshold_ci", "n",
        "n_positive", "accuracy", "precision", "recall", "f1", "youden_j", "note"}``. When no
        threshold can be chosen (criterion undefined everywhere) ``threshold`` and the metrics
        are ``None`` and ``note`` says why; otherwise ``note`` is ``""``.
    """
    s = _scores_array(scores, "calibrate_threshold")
    y = _bools_array(human_positive, len(s), "calibrate_threshold", "human_positive")
    sweep = threshold_sweep(s.tolist(), y.tolist(), thresholds=thresholds)
    chosen = choose_threshold(sweep, criterion=criterion)
    out: dict[str, Any] = {
        "threshold": None, "criterion": criterion, "value": None, "kappa": None, "kappa_ci": [None, None],
        "threshold_ci": [None, None], "n": int(len(s)), "n_positive": int(y.sum()), "accuracy": None,
        "precision": None, "recall": None, "f1": None, "youden_j": None, "note": "",
    }
    if chosen is None:
        out["note"] = (
            f"no threshold chosen: the human labels need both classes and a defined {criterion} "
            f"(n={len(s)}, human positives={int(y.sum())})"
        )
        return out
    thr = chosen.threshold
    point = chosen.point

    def kappa_at(ss: np.ndarray, yy: np.ndarray) -> float | None:
        pred = ss >= thr
        tp = int((pred & yy).sum())
        fp = int((pred & ~yy).sum())
        fn = int((~pred & yy).sum())
        return _kappa_2x2(tp, fp, fn, len(ss) - tp - fp - fn)

    kappa_ci = bootstrap_ci(kappa_at, s, y, rng=rng, n_boot=n_boot, level=level, clusters=clusters)
    field = CRITERIA[criterion]
    fixed = None if thresholds is None else np.sort(np.asarray(list(thresholds), dtype=float))
    chosen_thr = []
    resampler = Resampler(len(s), clusters)
    for _ in range(n_boot):
        idx = resampler.draw(rng)
        ss, yy = s[idx], y[idx]
        t = default_thresholds(ss) if fixed is None else fixed
        best = _best_index(t, _sweep_arrays(ss, yy, t)[field], yy)
        if best is not None:
            chosen_thr.append(float(t[best]))
    threshold_ci = interval_from_samples(chosen_thr, n_boot=n_boot, level=level)
    out.update(
        threshold=thr, value=chosen.value, kappa=point.kappa, kappa_ci=kappa_ci.as_list(),
        threshold_ci=threshold_ci.as_list(), accuracy=point.accuracy, precision=point.precision,
        recall=point.recall, f1=point.f1, youden_j=point.youden_j,
    )
    return out


def reliability_curve(scores: Sequence[float], outcomes: Sequence[bool], *, n_bins: int = 10,
                      rng: np.random.Generator | None = None, clusters: Sequence[Any] | None = None,
                      n_boot: int = 500, level: float = 0.95) -> pd.DataFrame:
    """Reliability (calibration) table: mean judge score versus observed human-positive rate.

    Scores in [0, 1] are put in ``n_bins`` equal-width bins ``[low, high)`` (the last bin includes
    1.0). Bins with no scores are left out, so no row has NaN.

    With ``rng`` each bin's observed rate also gets a bootstrap interval (``observed_low``,
    ``observed_high``; ``None`` when the bin has fewer than 2 units or clusters), resampling the
    bin's units, or its whole clusters when ``clusters`` gives one id per unit (claims of one
    answer stay together).

    Returns:
        DataFrame with columns ``bin_low, bin_high, mean_score, observed_rate, n`` (plus
        ``observed_low, observed_high`` with ``rng``).

    Raises:
        ValueError: a score outside [0, 1] or not finite, ``n_bins < 1``.
    """
    if n_bins < 1:
        raise ValueError(f"reliability_curve: n_bins must be >= 1, got {n_bins!r}")
    s = _scores_array(scores, "reliability_curve")
    y = _bools_array(outcomes, len(s), "reliability_curve", "outcomes")
    bad = np.flatnonzero((s < 0) | (s > 1))
    if len(bad):
        raise ValueError(
            f"reliability_curve: score at position {int(bad[0])} is {float(s[bad[0]])!r}; expected a number in [0, 1]"
        )
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.minimum((s * n_bins).astype(int), n_bins - 1)
    if clusters is not None and len(clusters) != len(s):
        raise ValueError(f"reliability_curve: clusters has {len(clusters)} entries, expected {len(s)}")
    rows = []
    for b in range(n_bins):
        mask = idx == b
        if mask.any():
            row = {
                "bin_low": float(edges[b]), "bin_high": float(edges[b + 1]),
                "mean_score": float(s[mask].mean()), "observed_rate": float(y[mask].mean()),
                "n": int(mask.sum()),
            }
            if rng is not None:
                bin_clusters = None if clusters is None else [clusters[int(i)] for i in np.flatnonzero(mask)]
                iv = bootstrap_ci(lambda v: float(v.mean()), y[mask].astype(float), rng=rng, n_boot=n_boot,
                                  level=level, clusters=bin_clusters)
                row.update(observed_low=iv.low, observed_high=iv.high)
            rows.append(row)
    columns = ["bin_low", "bin_high", "mean_score", "observed_rate", "n"]
    if rng is not None:
        columns += ["observed_low", "observed_high"]
    return pd.DataFrame(rows, columns=columns)


@dataclass(frozen=True)
class LogisticCalibration:
    """``P(human positive | score) = 1 / (1 + exp(-(intercept + slope * score)))``.

    ``method`` is ``"mle"`` (plain logistic regression), ``"smoothed"`` (see
    :func:`logistic_calibration`) or ``"constant"`` (all scores equal: slope 0). ``note`` says
    why a fallback was used.
    """

    intercept: float
    slope: float
    n: int
    method: str
    note: str = ""

    def predict(self, scores: Sequence[float] | np.ndarray) -> np.ndarray:
        """Calibrated probabilities for ``scores``."""
        z = self.intercept + self.slope * np.asarray(scores, dtype=float)
        return 1.0 / (1.0 + np.exp(-z))


def _logit_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float] | None:
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", PerfectSeparationWarning)
        warnings.simplefilter("error", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            res = sm.Logit(y.astype(float), sm.add_constant(x, has_constant="add")).fit(disp=0, maxiter=100)
        except (PerfectSeparationWarning, ConvergenceWarning, np.linalg.LinAlgError, ValueError):
            return None
        except Exception as exc:  # statsmodels raises PerfectSeparationError in some versions
            if "separation" in type(exc).__name__.lower():
                return None
            raise
    if not res.mle_retvals.get("converged", True):
        return None
    a, b = (float(v) for v in res.params)
    if not (math.isfinite(a) and math.isfinite(b)):
        return None
    return a, b


def logistic_calibration(scores: Sequence[float], outcomes: Sequence[bool]) -> LogisticCalibration | None:
    """Fit a logistic map from judge score to the probability that the human says positive.

    Rules (one per case):

    * fewer than 2 units -> ``None``;
    * all scores equal -> ``method="constant"``: slope 0 and intercept ``logit((k + 0.5) / (n + 1))``
      (``k`` positives; the add-half rate keeps it finite when there is one class);
    * one class only, or the classes perfectly (or quasi-) separated by the score, or the MLE does
      not converge -> ``method="smoothed"``: the fit is done on the data plus four
      pseudo-observations, one positive and one negative at the lowest and at the highest score,
      which makes the maximum-likelihood estimate exist (it shrinks the slope towards 0);
    * otherwise -> ``method="mle"``: plain logistic regression (statsmodels ``Logit``).
    """
    s = _scores_array(scores, "logistic_calibration")
    y = _bools_array(outcomes, len(s), "logistic_calibration", "outcomes")
    n = len(s)
    if n < 2:
        return None
    k = int(y.sum())
    if np.ptp(s) == 0:
        rate = (k + 0.5) / (n + 1.0)
        return LogisticCalibration(
            math.log(rate / (1 - rate)), 0.0, n, "constant", "all scores are equal, so the slope is not identified"
        )
    one_class = k in (0, n)
    separated = not one_class and (s[~y].max() <= s[y].min() or s[y].max() <= s[~y].min())
    fit = None if (one_class or separated) else _logit_fit(s, y)
    if fit is not None:
        return LogisticCalibration(fit[0], fit[1], n, "mle")
    reason = "one class only" if one_class else ("classes separated by the score" if separated else "MLE did not converge")
    lo, hi = float(s.min()), float(s.max())
    xs = np.concatenate([s, [lo, lo, hi, hi]])
    ys = np.concatenate([y, [True, False, True, False]])
    fit = _logit_fit(xs, ys)
    if fit is None:  # pragma: no cover - pseudo-observations rule out separation
        rate = (k + 0.5) / (n + 1.0)
        return LogisticCalibration(math.log(rate / (1 - rate)), 0.0, n, "constant", reason + "; smoothed fit failed")
    return LogisticCalibration(fit[0], fit[1], n, "smoothed", reason + "; fitted with 4 pseudo-observations")


def score_auc(scores: Sequence[float], positive: Sequence[bool]) -> tuple[float | None, float | None]:
    """Threshold-free check that a continuous judge score separates the human classes.

    Compares the scores of human-positive units against those of human-negative units: returns
    ``(auc, p_value)`` where ``auc`` = P(score of a random positive > score of a random negative)
    (ties count half; 0.5 = no signal) and ``p_value`` is the two-sided Mann-Whitney U test of
    no difference. Unlike the kappa at the best threshold, it involves no choice fitted to the
    same labels, so it is not optimistic. Degenerate rule: ``(None, None)`` when either class is
    empty.
    """
    from scipy.stats import mannwhitneyu

    values = np.asarray(scores, dtype=float)
    flags = np.asarray(positive, dtype=bool)
    pos, neg = values[flags], values[~flags]
    if len(pos) == 0 or len(neg) == 0:
        return None, None
    result = mannwhitneyu(pos, neg, alternative="two-sided")
    return float(result.statistic / (len(pos) * len(neg))), float(result.pvalue)
