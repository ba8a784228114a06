"""Pure statistics: agreement, bootstrap CIs, threshold calibration, rate correction.

Imports numpy, scipy, statsmodels, pandas and krippendorff only (never judges/ or store/).
"""
from workbench.stats.agreement import (
    Confusion,
    accuracy,
    agreement_with_ci,
    cohen_kappa,
    confusion,
    gwet_ac1,
    gwet_ac1_raters,
    human_agreement,
    krippendorff_alpha,
    majority_label,
)
from workbench.stats.bootstrap import bootstrap_ci, interval_from_samples
from workbench.stats.calibration import (
    ChosenThreshold,
    LogisticCalibration,
    SweepPoint,
    calibrate_threshold,
    score_auc,
    choose_threshold,
    default_thresholds,
    logistic_calibration,
    reliability_curve,
    sweep_frame,
    threshold_sweep,
)
from workbench.stats.correction import ppi_mean, rogan_gladen, rogan_gladen_ci

__all__ = [
    "ChosenThreshold",
    "Confusion",
    "LogisticCalibration",
    "SweepPoint",
    "accuracy",
    "agreement_with_ci",
    "bootstrap_ci",
    "calibrate_threshold",
    "score_auc",
    "choose_threshold",
    "cohen_kappa",
    "confusion",
    "default_thresholds",
    "gwet_ac1",
    "gwet_ac1_raters",
    "human_agreement",
    "interval_from_samples",
    "krippendorff_alpha",
    "logistic_calibration",
    "majority_label",
    "ppi_mean",
    "reliability_curve",
    "rogan_gladen",
    "rogan_gladen_ci",
    "sweep_frame",
    "threshold_sweep",
]
