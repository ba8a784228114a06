"""Data page: load an eval set into the label store, see counts, download the label export."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from workbench.calibration.judging import JUDGED_TASKS, run_judges
from workbench.calibration.label_files import EXPORT_COLUMNS, export_rows, format_rows
from workbench.calibration.labelling import store_eval_set
from workbench.config import JudgeConfig
from workbench.scoring.dataset import DatasetError, load_eval_set
from workbench.store import StoreError, current_labels, progress
from workbench.tasks import DEFAULT_TASKS, TASK_NAMES
from workbench_app.common import db_path, db_session

st.title("Data")
st.caption(f"Label store: {db_path()}")


def _load(path: Path, tasks: list[str], *, name: str | None = None) -> None:
    """Load the eval set at ``path``; messages call it ``name`` (an upload's own file name) when given."""
    shown = name or str(path)
    try:
        items = load_eval_set(path)
    except DatasetError as exc:
        st.error(f"{shown}: the eval set has problems; nothing was stored.")
        st.text(str(exc).replace(str(path), shown) if name else str(exc))
        return
    try:
        with st.spinner(f"Storing {len(items)} items and making units..."):
            with db_session() as db:
                result = store_eval_set(db, items, tasks=tasks, progress=False)
    except StoreError as exc:
        st.error(f"{shown}: the store refused the units; nothing was stored.")
        st.text(str(exc).replace(str(path), shown) if name else str(exc))
        return
    st.success(
        f"Stored {result['items']} items ({result['new_items']} new); "
        f"{result['new_units']} new units; judge: {result['judge'] or 'none needed'}."
        + (f" {result['changed_units']} units had changed text: their old versions and {result['stale_labels']} "
           "labels are kept as stale and never count for the new text." if result.get("changed_units") else "")
    )
    for line in result["failures"][:20]:
        st.warning(f"Not decomposed: {line}")


def judged_counts(db) -> dict[str, int]:
    """Units with at least one error-free judgment, per task (any judge)."""
    rows = db.query("SELECT task, COUNT(DISTINCT unit_id) AS n FROM judgments WHERE error IS NULL GROUP BY task")
    return {row["task"]: int(row["n"]) for row in rows}


def _run_judge() -> None:
    """Run the environment's judge over every unit not judged yet (``workbench judge``), then rerun the page."""
    try:
        with st.spinner("Judging the units (the offline judge takes seconds; a remote one longer)..."):
            with db_session() as db:
                result = run_judges(db, JudgeConfig.from_env(), progress=False)
    except Exception as exc:  # noqa: BLE001 - shown to the user, nothing stored for a failed call
        st.error("The judge failed; verdicts written before the failure are kept.")
        st.text(f"{type(exc).__name__}: {exc}")
        return
    judged = ", ".join(f"{task} {n}" for task, n in (result.get("judged") or {}).items()) or "nothing new"
    errors = sum((result.get("errors") or {}).values())
    st.session_state["data_judge_flash"] = f"Judge {result.get('judge')}: judged {judged}; {errors} error(s)."
    st.rerun()


with db_session() as db:
    store_empty = not any(v["units"] for v in progress(db)["per_task"].values())
with st.expander("Load an eval set (upload or path)", expanded=store_empty):
    tasks = st.multiselect("Tasks to make units for", list(TASK_NAMES),
                           default=list(DEFAULT_TASKS), key="data_tasks")
    upload_tab, path_tab = st.tabs(["Upload a file", "Path on this machine"])
    with upload_tab:
        uploaded = st.file_uploader("Eval set (JSONL or CSV)", type=["jsonl", "csv", "json", "ndjson"], key="data_upload")
        clicked = st.button("Load the uploaded file", key="data_load_upload", disabled=uploaded is None or not tasks)
        if clicked and uploaded is not None:  # the button is disabled without a file; the check narrows ``uploaded``
            own_name = Path(uploaded.name).name  # the browser's file name, never a path on this machine
            suffix = Path(own_name).suffix.lower() or ".jsonl"
            with tempfile.TemporaryDirectory() as folder:
                target = Path(folder) / f"upload{suffix}"
                target.write_bytes(uploaded.getvalue())
                _load(target, tasks, name=own_name)
    with path_tab:
        path_text = st.text_input("Eval set path", value="data/demo_rag.jsonl", key="data_path")
        if st.button("Load from path", key="data_load_path", disabled=not tasks):
            path = Path(path_text).expanduser()
            if not path.is_file():
                st.error("No such file.")
                st.text(str(path))
            else:
                _load(path, tasks)

st.subheader("Counts per task")
with db_session() as db:
    overall = progress(db)
    labels = current_labels(db)
    export_text = format_rows(export_rows(db), "csv", EXPORT_COLUMNS)
    judged = judged_counts(db)
per_task = pd.DataFrame(
    [{"task": task, "units": v["units"], "labelled (any annotator)": v["labelled_any"],
      "judged": judged.get(task, 0)}
     for task, v in overall["per_task"].items()],
    columns=["task", "units", "labelled (any annotator)", "judged"],
)
st.dataframe(per_task, hide_index=True, key="data_per_task", column_config={
    "judged": st.column_config.NumberColumn(help="Units with at least one judge verdict (any judge, no error)")})
unjudged = sum(max(0, int(row["units"]) - int(row["judged"])) for row in per_task.to_dict("records")
               if row["task"] in JUDGED_TASKS)
(st.info if unjudged else st.caption)("The judge's verdicts feed the Agreement and Calibration pages, order the queue near the threshold, and "
           "give the quotes the Label page highlights in the passages: until the judge has run, no quote is "
           f"highlighted. Same as `workbench judge --db {db_path()}`. Judge: {JudgeConfig.from_env().backend} "
           "(set WORKBENCH_JUDGE to change it).")
if st.button(f"Run the judge on the store ({unjudged} unit(s) not judged yet)", key="data_run_judge",
             disabled=unjudged == 0 or not len(per_task)):
    _run_judge()
if "data_judge_flash" in st.session_state:
    st.success(st.session_state.pop("data_judge_flash"))
st.subheader("Per annotator (current labels)")
if labels:
    frame = pd.DataFrame([{"annotator": l.annotator, "task": l.task} for l in labels])
    table = frame.pivot_table(index="annotator", columns="task", aggfunc="size", fill_value=0)
    table["total"] = table.sum(axis=1)
    st.dataframe(table, key="data_per_annotator")
else:
    st.text("No labels yet.")

st.subheader("Export")
st.download_button(
    "Download labels (CSV)", export_text.encode("utf-8"), file_name="labels.csv", mime="text/csv",
    key="data_download", help="One row per current label per annotator; same as `workbench labels export`.",
)
