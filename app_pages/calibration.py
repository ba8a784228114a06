"""Calibration page: threshold curves with the chosen point, reliability, and writing thresholds.json."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from app_pages.annotators import choose_annotators
from app_pages.common import db_path, db_session, db_version
from workbench.agreement_report import calibration_curves, calibration_report
from workbench.config import home, save_thresholds
from workbench.report import reliability_chart, threshold_curve
from workbench.store import judge_fingerprints

CRITERIA = ("kappa", "youden", "f1")


@st.cache_data(show_spinner="Sweeping thresholds...", max_entries=8)
def _curves(path: str, version: tuple, judge: str, criterion: str, annotators: tuple | None = None) -> dict:
    with db_session(path) as db:
        return calibration_curves(db, judge=judge, criterion=criterion, annotators=annotators)


@st.cache_data(show_spinner="Choosing thresholds (bootstrap)...", max_entries=8)
def _payload(path: str, version: tuple, judge: str, criterion: str, annotators: tuple | None = None) -> dict:
    with db_session(path) as db:
        return calibration_report(db, judge=judge, criterion=criterion, rng=np.random.default_rng(0),
                                  annotators=annotators)


def _apply(payload: dict) -> None:
    """Button callback: write the thresholds payload (``notes`` dropped; contract keys only).

    The target path is read from the text box at click time, not from the previous run.
    """
    out = Path(st.session_state.get("calib_out") or "thresholds.json").expanduser()
    if not out.is_absolute():
        out = home() / out
    contract = {k: v for k, v in payload.items() if k != "notes"}
    save_thresholds(contract, out)
    st.session_state["calib_flash"] = f"Wrote {out}"


def _num(value) -> str:
    return "n/a" if value is None else f"{float(value):.3f}"


st.title("Calibration")
path = str(db_path())
with db_session(path) as db:
    fingerprints = judge_fingerprints(db)
if not fingerprints:
    st.info("No judge verdicts in the store yet: run `workbench judge`, then come back.")
    st.stop()
judge = st.selectbox("Judge", fingerprints, key="calib_judge")
criterion = st.selectbox("Criterion", CRITERIA, key="calib_criterion",
                         format_func={"kappa": "Cohen's kappa", "youden": "Youden's J", "f1": "F1"}.get)
version = db_version(path)
chosen = choose_annotators(path, key="calib_annotators")
curves = _curves(path, version, judge, criterion, chosen)
payload = _payload(path, version, judge, criterion, chosen)

if not curves:
    st.info("Not enough units with both a human majority label and a judge score to draw curves.")
for key, entry in curves.items():
    st.subheader(f"{key} (task {entry['task']})")
    chosen = payload.get(key, {}).get("threshold", entry.get("chosen"))
    left, right = st.columns(2)
    with left:
        st.altair_chart(threshold_curve(entry["sweep"], chosen, title=f"{key}: metrics vs threshold"),
                        key=f"calib_curve_{key}")
    with right:
        if len(entry["reliability"]):
            st.altair_chart(reliability_chart(entry["reliability"], title=f"{key}: reliability"),
                            key=f"calib_reliability_{key}")
    if key in payload:
        chosen_row = payload[key]
        st.text(
            f"chosen threshold {_num(chosen_row.get('threshold'))} · kappa {_num(chosen_row.get('kappa'))} "
            f"(95% CI {', '.join(_num(v) for v in chosen_row.get('kappa_ci') or [None, None])}) · n {chosen_row.get('n')}"
        )
    if entry.get("logistic"):
        st.caption("Logistic calibration: P(positive | score) = 1 / (1 + exp(-(a + b * score)))")
        st.dataframe(pd.DataFrame([entry["logistic"]]), hide_index=True, key=f"calib_logistic_{key}")

st.subheader("Thresholds to write")
st.json({k: v for k, v in payload.items()}, expanded=False)
for key, note in (payload.get("notes") or {}).items():
    st.caption(f"{key}: {note}")
st.text_input("Write to", value="thresholds.json", key="calib_out")
st.button("Apply: write thresholds.json", key="calib_apply", type="primary", on_click=_apply, args=(payload,),
          disabled=not any(k in payload for k in ("faithfulness", "answer_relevance", "claim_support")))
if "calib_flash" in st.session_state:
    st.success(st.session_state.pop("calib_flash"))
