"""Agreement page: the human ceiling beside each judge's agreement with the human majority."""
from __future__ import annotations

import numpy as np
import streamlit as st

from workbench.calibration.agreement import agreement_report, disagreements
from workbench.reports.charts import ceiling_chart, confusion_heatmap
from workbench.reports.tables import GLOSSARY_ANCHOR, STAT_HELP, human_summary, judge_summary, markdown_section
from workbench_app.annotators import choose_annotators
from workbench_app.common import db_path, db_session, db_version, guidelines_text

MATRICES_PER_ROW = 3


@st.cache_data(show_spinner="Computing agreement (bootstrap)...", max_entries=8)
def _report(path: str, version: tuple, n_boot: int, annotators: tuple | None = None) -> dict:
    """``agreement_report`` for the store at ``path``; ``version`` (mtimes) keys the cache."""
    with db_session(path) as db:
        return agreement_report(db, rng=np.random.default_rng(0), n_boot=n_boot, annotators=annotators)


def _explain(*names: tuple[str, str]) -> None:
    """One line per statistic, in a small caption block: each name is (shown name, ``STAT_HELP`` key)."""
    st.caption("  \n".join(f"**{name}** — {STAT_HELP[key]}" for name, key in names))


st.title("Agreement")
st.caption("Do people agree with each other, and how close does each judge come to them? "
           f"Definitions: the glossary in `{GLOSSARY_ANCHOR}` (open it at the bottom of this page).")
path = str(db_path())
n_boot = st.sidebar.select_slider("Bootstrap resamples (intervals)", options=[200, 500, 1000, 2000], value=1000,
                                  key="agree_n_boot")
chosen = choose_annotators(path, key="agree_annotators")
report = _report(path, db_version(path), int(n_boot), chosen)
if not any(report.values()):
    st.info("No units or labels yet: load data and label some units first.")
    st.stop()

judges = judge_summary(report)
if not judges.empty:
    chart_col, text_col = st.columns([3, 2])
    with chart_col:
        st.altair_chart(ceiling_chart(report), key="agree_ceiling", width="content")
    with text_col:
        st.markdown("**Reading the chart**")
        st.caption("Each row is a task. The **humans** dot is their agreement with each other (alpha): the "
                   "ceiling. Each **judge** dot is its kappa against the human majority. Lines are 95% intervals; "
                   "a judge whose interval overlaps the humans' is as consistent as a second person.")
        _explain(("alpha", "alpha"), ("kappa", "kappa"), ("interval", "interval"))

st.subheader("People with each other (the ceiling)")
humans = human_summary(report)
if not bool(humans["Sample note"].astype(bool).any()):
    humans = humans.drop(columns=["Sample note"])
st.dataframe(humans, hide_index=True, key="agree_human_table",
             column_config={"Human agreement (alpha)": st.column_config.TextColumn(help=STAT_HELP["alpha"]),
                            "alpha 95% interval": st.column_config.TextColumn(help=STAT_HELP["interval"])})

st.subheader("Judges against the human majority")
if judges.empty:
    st.info("No judge verdicts yet: run the judge (Data page, or `workbench judge`).")
else:
    shown = judges
    if bool(judges["Judge"].nunique() == 1):  # one judge: name it once, keep the numbers in view at 1400 px
        st.caption(f"Judge: `{judges['Judge'].iloc[0]}`")
        shown = shown.drop(columns=["Judge"])
    for optional in ("AUC", "Sample note"):
        if not bool(shown[optional].astype(str).replace("n/a", "").astype(bool).any()):
            shown = shown.drop(columns=[optional])
    st.dataframe(shown, hide_index=True, key="agree_judges_table", column_config={
        "Kappa vs humans": st.column_config.TextColumn(help=STAT_HELP["kappa"]),
        "kappa 95% interval": st.column_config.TextColumn(help=STAT_HELP["interval"]),
        "AC1": st.column_config.TextColumn(help=STAT_HELP["ac1"]),
        "Alpha with humans": st.column_config.TextColumn(help=STAT_HELP["alpha_with_humans"]),
        "Accuracy": st.column_config.TextColumn(help=STAT_HELP["accuracy"]),
        "Quote hallucination": st.column_config.TextColumn(help=STAT_HELP["quote_hallucination"]),
        "AUC": st.column_config.TextColumn(help=STAT_HELP["auc"]),
    })
    _explain(("Kappa vs humans", "kappa"), ("AC1", "ac1"), ("Alpha with humans", "alpha_with_humans"),
             ("Accuracy", "accuracy"), ("Quote hallucination", "quote_hallucination"))

    st.subheader("Confusion matrices")
    st.caption("Rows: what the human majority said; columns: what the judge said. Each cell: the count, then its "
               "share of the row (of the units humans gave that label) and of the column (of the units the judge "
               "gave that label). A good judge has a dark diagonal.")
    matrices = [(task, judge, entry["confusion"]) for task, block in report.items() if block
                for judge, entry in (block.get("judges") or {}).items()
                if (entry.get("confusion") or {}).get("labels") and (entry.get("confusion") or {}).get("matrix")]
    for start in range(0, len(matrices), MATRICES_PER_ROW):
        columns = st.columns(MATRICES_PER_ROW)
        for column, (task, judge, confusion) in zip(columns, matrices[start:start + MATRICES_PER_ROW]):
            with column:
                st.altair_chart(
                    confusion_heatmap(confusion["labels"], confusion["matrix"], title=task, subtitle=f"judge {judge}",
                                      cell=95),
                    key=f"agree_confusion_{task}_{judge}", width="content",
                )
    ties = [f"{task}: {int(block['ties'])}" for task, block in report.items() if block and block.get("ties")]
    if ties:
        st.caption("Labelled units left out because the human majority is tied — " + ", ".join(ties) + ".")

    st.subheader("Disagreements to review")
    pairs = [(t, j) for t, b in report.items() if b for j in (b.get("judges") or {})]
    choice = st.selectbox("Task and judge", pairs, format_func=lambda p: f"{p[0]} · {p[1]}", key="agree_pair")
    if choice:
        with db_session(path) as db:
            frame = disagreements(db, task=choice[0], judge=choice[1])
        st.text(f"{len(frame)} unit(s) where the judge differs from the human majority")
        st.dataframe(frame.round(3), hide_index=True, key="agree_disagreements")  # cells render as text

glossary = markdown_section(guidelines_text(), "Glossary")
with st.expander(f"Glossary ({GLOSSARY_ANCHOR})"):
    if glossary:
        st.markdown(glossary)  # the project's own guidelines file, not eval-set text
    else:
        st.caption("No glossary section in the guidelines file.")
