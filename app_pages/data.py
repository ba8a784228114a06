"""Data page: load an eval set into the label store, see counts, download the label export."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from app_pages.common import db_path, db_session
from workbench.cli_labels import EXPORT_COLUMNS, export_rows, format_rows
from workbench.dataset import DatasetError, load_eval_set
from workbench.labelling import DEFAULT_TASKS, store_eval_set
from workbench.store import StoreError, current_labels, progress

st.title("Data")
st.text(f"Label store: {db_path()}")


def _load(path: Path, tasks: list[str]) -> None:
    try:
        items = load_eval_set(path)
    except DatasetError as exc:
        st.error("The eval set has problems; nothing was stored.")
        st.text(str(exc))
        return
    try:
        with st.spinner(f"Storing {len(items)} items and making units..."):
            with db_session() as db:
                result = store_eval_set(db, items, tasks=tasks, progress=False)
    except StoreError as exc:
        st.error("The store refused the units; nothing was stored.")
        st.text(str(exc))
        return
    st.success(
        f"Stored {result['items']} items ({result['new_items']} new); "
        f"{result['new_units']} new units; judge: {result['judge'] or 'none needed'}."
        + (f" {result['changed_units']} units had changed text: their old versions and {result['stale_labels']} "
           "labels are kept as stale and never count for the new text." if result.get("changed_units") else "")
    )
    for line in result["failures"][:20]:
        st.warning(f"Not decomposed: {line}")


st.header("Load an eval set")
tasks = st.multiselect("Tasks to make units for", list(DEFAULT_TASKS) + ["answer_correctness"],
                       default=list(DEFAULT_TASKS), key="data_tasks")
upload_tab, path_tab = st.tabs(["Upload a file", "Path on this machine"])
with upload_tab:
    uploaded = st.file_uploader("Eval set (JSONL or CSV)", type=["jsonl", "csv", "json", "ndjson"], key="data_upload")
    if st.button("Load the uploaded file", key="data_load_upload", disabled=uploaded is None or not tasks):
        suffix = Path(uploaded.name).suffix.lower() or ".jsonl"
        with tempfile.TemporaryDirectory() as folder:
            target = Path(folder) / f"upload{suffix}"
            target.write_bytes(uploaded.getvalue())
            _load(target, tasks)
with path_tab:
    path_text = st.text_input("Eval set path", value="data/demo_rag.jsonl", key="data_path")
    if st.button("Load from path", key="data_load_path", disabled=not tasks):
        path = Path(path_text).expanduser()
        if not path.is_file():
            st.error("No such file.")
            st.text(str(path))
        else:
            _load(path, tasks)

st.header("Counts")
with db_session() as db:
    overall = progress(db)
    labels = current_labels(db)
    export_text = format_rows(export_rows(db), "csv", EXPORT_COLUMNS)
per_task = pd.DataFrame(
    [{"task": task, "units": v["units"], "labelled (any annotator)": v["labelled_any"]}
     for task, v in overall["per_task"].items()],
    columns=["task", "units", "labelled (any annotator)"],
)
st.subheader("Per task")
st.dataframe(per_task, hide_index=True, key="data_per_task")
st.subheader("Per annotator (current labels)")
if labels:
    frame = pd.DataFrame([{"annotator": l.annotator, "task": l.task} for l in labels])
    table = frame.pivot_table(index="annotator", columns="task", aggfunc="size", fill_value=0)
    table["total"] = table.sum(axis=1)
    st.dataframe(table, key="data_per_annotator")
else:
    st.text("No labels yet.")

st.header("Export")
st.download_button(
    "Download labels (CSV)", export_text.encode("utf-8"), file_name="labels.csv", mime="text/csv",
    key="data_download", help="One row per current label per annotator; same as `workbench labels export`.",
)
