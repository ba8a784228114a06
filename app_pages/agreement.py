"""Agreement page: the human ceiling beside each judge's agreement with the human majority."""
from __future__ import annotations

import numpy as np
import streamlit as st

from app_pages.annotators import choose_annotators
from app_pages.common import db_path, db_session, db_version
from workbench.agreement_report import agreement_report, disagreements
from workbench.report import ceiling_chart, confusion_heatmap, human_table, judges_table


@st.cache_data(show_spinner="Computing agreement (bootstrap)...", max_entries=8)
def _report(path: str, version: tuple, n_boot: int, annotators: tuple | None = None) -> dict:
    """``agreement_report`` for the store at ``path``; ``version`` (mtimes) keys the cache."""
    with db_session(path) as db:
        return agreement_report(db, rng=np.random.default_rng(0), n_boot=n_boot, annotators=annotators)


st.title("Agreement")
path = str(db_path())
n_boot = st.select_slider("Bootstrap resamples", options=[200, 500, 1000, 2000], value=1000, key="agree_n_boot")
chosen = choose_annotators(path, key="agree_annotators")
report = _report(path, db_version(path), int(n_boot), chosen)
if not any(report.values()):
    st.info("No units or labels yet: load data and label some units first.")
    st.stop()

st.subheader("Human ceiling (human-human)")
st.dataframe(human_table(report), hide_index=True, key="agree_human_table")
st.subheader("Judges against the human majority")
judges = judges_table(report)
if judges.empty:
    st.info("No judge verdicts yet: run `workbench judge`.")
else:
    st.dataframe(judges, hide_index=True, key="agree_judges_table")
    st.altair_chart(ceiling_chart(report), key="agree_ceiling")

    st.subheader("Confusion matrices (rows: human majority, columns: judge)")
    for task, block in report.items():
        for judge, entry in (block.get("judges") or {}).items() if block else ():
            confusion = entry.get("confusion") or {}
            if confusion.get("labels") and confusion.get("matrix"):
                st.altair_chart(
                    confusion_heatmap(confusion["labels"], confusion["matrix"], title=f"{task} · {judge[:16]}"),
                    key=f"agree_confusion_{task}_{judge}",
                )
        if block and block.get("ties"):
            st.caption(f"{task}: {int(block['ties'])} labelled unit(s) left out because the human majority is tied.")

    st.subheader("Disagreements to review")
    pairs = [(t, j) for t, b in report.items() if b for j in (b.get("judges") or {})]
    choice = st.selectbox("Task and judge", pairs, format_func=lambda p: f"{p[0]} · {p[1]}", key="agree_pair")
    if choice:
        with db_session(path) as db:
            frame = disagreements(db, task=choice[0], judge=choice[1])
        st.text(f"{len(frame)} unit(s) where the judge differs from the human majority")
        st.dataframe(frame, hide_index=True, key="agree_disagreements")  # cells render as text
