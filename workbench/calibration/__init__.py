"""The calibration loop: items into the label store, judges over the same units, agreement, corrected rates, thresholds."""
