"""Pure statistics: agreement, bootstrap CIs, threshold calibration, rate correction.

Imports numpy, scipy, statsmodels, pandas and krippendorff only (never judges/ or store/).

Names are loaded on first use (PEP 562), so importing one submodule (``stats.agreement``)
does not import the others (``stats.correction`` pulls in scipy.stats, about a second).
"""
from __future__ import annotations

import importlib
from typing import Any

#: public name -> the submodule that defines it
_WHERE = {
    "Confusion": "workbench.stats.agreement",
    "accuracy": "workbench.stats.agreement",
    "agreement_with_ci": "workbench.stats.agreement",
    "cohen_kappa": "workbench.stats.agreement",
    "confusion": "workbench.stats.agreement",
    "gwet_ac1": "workbench.stats.agreement",
    "gwet_ac1_raters": "workbench.stats.agreement",
    "human_agreement": "workbench.stats.agreement",
    "krippendorff_alpha": "workbench.stats.agreement",
    "majority_label": "workbench.stats.agreement",
    "pairwise_summary": "workbench.stats.agreement",
    "small_sample_reason": "workbench.stats.agreement",
    "Resampler": "workbench.stats.bootstrap",
    "bootstrap_ci": "workbench.stats.bootstrap",
    "design_effect": "workbench.stats.bootstrap",
    "icc_oneway": "workbench.stats.bootstrap",
    "interval_from_samples": "workbench.stats.bootstrap",
    "resample_indices": "workbench.stats.bootstrap",
    "ChosenThreshold": "workbench.stats.calibration",
    "LogisticCalibration": "workbench.stats.calibration",
    "SweepPoint": "workbench.stats.calibration",
    "calibrate_threshold": "workbench.stats.calibration",
    "score_auc": "workbench.stats.calibration",
    "choose_threshold": "workbench.stats.calibration",
    "default_thresholds": "workbench.stats.calibration",
    "logistic_calibration": "workbench.stats.calibration",
    "reliability_curve": "workbench.stats.calibration",
    "sweep_frame": "workbench.stats.calibration",
    "threshold_sweep": "workbench.stats.calibration",
    "UNSTABLE_YOUDEN": "workbench.stats.correction",
    "ppi_mean": "workbench.stats.correction",
    "rogan_gladen": "workbench.stats.correction",
    "rogan_gladen_ci": "workbench.stats.correction",
    "rogan_gladen_unclipped": "workbench.stats.correction",
}

__all__ = sorted(_WHERE)  # pyright: ignore[reportUnsupportedDunderAll]  # the lazy names, listed once


def __getattr__(name: str) -> Any:
    """Import the submodule defining ``name`` on first access (module-level ``__getattr__``)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
