"""Calibration page: threshold curves with the chosen point, each score's trust warning beside its
charts, and writing thresholds.json only with an explicit acknowledgement for a flagged threshold."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from workbench.calibration.agreement import CALIBRATED, calibration_curves, calibration_report
from workbench.config import home, save_thresholds
from workbench.formatting import interval, num
from workbench.reports.charts import reliability_chart, threshold_curve
from workbench.reports.tables import GLOSSARY_ANCHOR, threshold_rows
from workbench.stats.agreement import MIN_UNITS
from workbench.store import judge_fingerprints
from workbench_app.annotators import choose_annotators
from workbench_app.common import db_path, db_session, db_version

CRITERIA = ("kappa", "youden", "f1")
CRITERION_NAMES = {"kappa": "Cohen's kappa", "youden": "Youden's J", "f1": "F1"}
# below this many units a threshold is flagged, whatever its kappa: the same minimum as every agreement row
MIN_TRUSTED_UNITS = MIN_UNITS
SCORE_KEYS = tuple(CALIBRATED)


@st.cache_data(show_spinner="Sweeping thresholds...", max_entries=8)
def _curves(path: str, version: tuple, judge: str, criterion: str, annotators: tuple | None = None) -> dict:
    with db_session(path) as db:
        return calibration_curves(db, judge=judge, criterion=criterion, annotators=annotators)


@st.cache_data(show_spinner="Choosing thresholds (bootstrap)...", max_entries=8)
def _payload(path: str, version: tuple, judge: str, criterion: str, annotators: tuple | None = None) -> dict:
    with db_session(path) as db:
        return calibration_report(db, judge=judge, criterion=criterion, rng=np.random.default_rng(0),
                                  annotators=annotators)


def flags(payload: dict, *, min_units: int = MIN_TRUSTED_UNITS) -> dict[str, str]:
    """Why each calibrated score's threshold should not be trusted: ``{key: reason}``, only flagged keys.

    A key is flagged when the calibration left a note on it (e.g. the score does not separate the
    human classes better than chance), when it rests on fewer than ``min_units`` units, or when the
    entry says ``too_small``.
    """
    notes = payload.get("notes") or {}
    out: dict[str, str] = {}
    for key in SCORE_KEYS:
        entry = payload.get(key)
        if not isinstance(entry, dict):
            continue
        reasons = []
        if notes.get(key):
            reasons.append(str(notes[key]))
        n = entry.get("n")
        if entry.get("too_small"):
            reasons.append(str(entry.get("too_small_reason") or "sample too small"))
        elif n is not None and int(n) < min_units:
            reasons.append(f"only {int(n)} units with both a human majority and a judge score "
                           f"(fewer than {min_units}): the threshold and its kappa are not reliable")
        if reasons:
            out[key] = "; ".join(reasons)
    return out


def _included(key: str, flagged: dict[str, str]) -> bool:
    """Whether ``key`` goes into the written file: trusted keys always, flagged ones only when acknowledged."""
    return key not in flagged or bool(st.session_state.get(f"calib_ack_{key}"))


def _apply(payload: dict, flagged: dict[str, str]) -> None:
    """Button callback: write thresholds.json with its notes, leaving out flagged, unacknowledged scores.

    The target path and the acknowledgements are read from the widgets at click time.
    """
    out = Path(st.session_state.get("calib_out") or "thresholds.json").expanduser()
    if not out.is_absolute():
        out = home() / out
    notes = dict(payload.get("notes") or {})
    written, left_out = {k: v for k, v in payload.items() if k not in SCORE_KEYS and k != "notes"}, []
    for key in SCORE_KEYS:
        if key not in payload:
            continue
        if _included(key, flagged):
            written[key] = payload[key]
            if key in flagged:
                notes[key] = f"{flagged[key]} (applied from the app after the user acknowledged this warning)"
        else:
            left_out.append(key)
            notes[key] = f"{flagged[key]} (left out: not acknowledged in the app)"
    if not any(k in written for k in SCORE_KEYS):
        st.session_state["calib_flash"] = ("warning", "Nothing written: every threshold is flagged and none was "
                                           "acknowledged.")
        return
    written["notes"] = notes
    save_thresholds(written, out)
    extra = f" (left out, flagged and not acknowledged: {', '.join(left_out)})" if left_out else ""
    st.session_state["calib_flash"] = ("success", f"Wrote {out}{extra}")


st.title("Calibration")
st.caption("For each judge score: where to cut it so its labels agree best with people, and whether that cut "
           f"can be trusted. Definitions: the glossary in `{GLOSSARY_ANCHOR}`.")
path = str(db_path())
with db_session(path) as db:
    fingerprints = judge_fingerprints(db)
if not fingerprints:
    st.info("No judge verdicts in the store yet: run the judge (Data page, or `workbench judge`), then come back.")
    st.stop()
pick_left, pick_right = st.columns([3, 1])
judge = pick_left.selectbox("Judge", fingerprints, key="calib_judge")
criterion = pick_right.selectbox("Criterion", CRITERIA, key="calib_criterion",
                                 format_func=lambda name: CRITERION_NAMES[name])
version = db_version(path)
chosen = choose_annotators(path, key="calib_annotators")
curves = _curves(path, version, judge, criterion, chosen)
payload = _payload(path, version, judge, criterion, chosen)
flagged = flags(payload)
notes = payload.get("notes") or {}

if not curves:
    st.info("Not enough units with both a human majority label and a judge score to draw curves.")
for key, entry in curves.items():
    st.subheader(f"{key} (task {entry['task']})")
    row = payload.get(key) or {}
    chosen = row.get("threshold", entry.get("chosen"))
    chart_col, side_col = st.columns([3, 2])
    with chart_col:
        st.altair_chart(threshold_curve(entry["sweep"], chosen, title=f"{key}: agreement vs threshold",
                                        chosen_ci=row.get("threshold_ci")),
                        key=f"calib_curve_{key}", width="content")
    with side_col:
        if key in flagged:
            st.warning(f"**Untrustworthy threshold.** {flagged[key]}", icon=":material/warning:")
        elif key in payload:
            st.success("This score separates the human classes better than chance.", icon=":material/check:")
        elif notes.get(key):
            st.warning(f"**Not calibrated.** {notes[key]}", icon=":material/warning:")
        if row:
            auc = row.get("auc")
            st.markdown(
                f"**Threshold {num(row.get('threshold'), 3)}** {interval(row.get('threshold_ci'), 3)}  \n"
                f"kappa at it {num(row.get('kappa'))} {interval(row.get('kappa_ci'))} · {row.get('n')} units"
                + (f"  \nAUC {num(auc)} (p {row.get('auc_p_value', row.get('auc_p')):.2g})"
                   if auc is not None and row.get("auc_p_value", row.get("auc_p")) is not None else "")
            )
            st.caption("The interval after the threshold is the range of thresholds chosen again on bootstrap "
                       "resamples (the grey band on the chart).")
        if key in flagged:
            st.checkbox("Write it anyway (I read the warning)", value=False,
                        key=f"calib_ack_{key}")
    with st.expander(f"{key}: reliability and logistic calibration"):
        rel_col, fit_col = st.columns([3, 2])
        with rel_col:
            if len(entry["reliability"]):
                st.altair_chart(reliability_chart(entry["reliability"], title=f"{key}: reliability"),
                                key=f"calib_reliability_{key}", width="content")
        with fit_col:
            if entry.get("logistic"):
                st.caption("Logistic calibration: P(positive | score) = 1 / (1 + exp(-(a + b · score)))")
                st.dataframe(pd.DataFrame([entry["logistic"]]).round(3), hide_index=True,
                             key=f"calib_logistic_{key}")

st.subheader("Thresholds to write")
# what "Apply" will do with each key (nothing is written before it is pressed)
status = {k: ("flagged: will be written (acknowledged)" if _included(k, flagged)
              else "flagged: left out until acknowledged")
          if k in flagged else "trusted: will be written" for k in SCORE_KEYS if k in payload}
rows = threshold_rows(payload, SCORE_KEYS, status=status)
if len(rows):
    st.dataframe(rows, hide_index=True, key="calib_rows")
for key in SCORE_KEYS:
    if key not in payload and notes.get(key):
        st.caption(f"{key}: not calibrated — {notes[key]}")
if notes.get("judge"):
    st.caption(notes["judge"])
st.caption("The file keeps the calibration's notes; a score left out keeps the default threshold when scoring.")
st.text_input("Write to", value="thresholds.json", key="calib_out")
st.button("Apply: write thresholds.json", key="calib_apply", type="primary", on_click=_apply,
          args=(payload, flagged), disabled=not any(_included(k, flagged) for k in SCORE_KEYS if k in payload))
if "calib_flash" in st.session_state:
    kind, message = st.session_state.pop("calib_flash")
    (st.success if kind == "success" else st.warning)(message)
