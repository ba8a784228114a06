"""Label page: one unit at a time, buttons and keyboard shortcuts, committed before the next shows.

Keys: 1 / 2 = the task's two values (in ``TASK_VALUES`` order), S = skip, U = undo.
All eval-set text is untrusted: it is shown with ``st.text`` or as escaped HTML (quote highlight).
"""
from __future__ import annotations

import streamlit as st

from app_pages.common import db_session, guidelines_text, keep, pick_unit, remember
from workbench.report import highlight_quote_html
from workbench.store import (
    ORDERS,
    LabelError,
    append_labels,
    get_item,
    get_unit,
    list_judgments,
    progress,
    undo_last_label,
)
from workbench.types import TASK_VALUES, Label

ALL_TASKS = "(all tasks)"
ORDER_NAMES = {"sequential": "sequential", "near_threshold": "near the threshold first",
               "helps_most": "helps most (judges disagree, then near the threshold)", "random": "random"}
SHORTCUTS = ("1", "2")


def _annotator() -> str:
    return (st.session_state.get("annotator") or st.session_state.get("_keep_annotator") or "").strip()


def _commit(unit_id: str, task: str, value: str) -> None:
    """Button callback: append the label (committed before the script reruns to the next unit)."""
    note = (st.session_state.get("label_note") or "").strip() or None
    try:
        with db_session() as db:
            append_labels(db, [Label(unit_id, task, _annotator(), value, note)])
    except LabelError as exc:
        st.session_state["label_flash"] = ("error", str(exc))
        return
    st.session_state["label_note"] = ""
    st.session_state.pop("label_pinned", None)
    st.session_state["label_flash"] = ("ok", f"Saved {value} for {unit_id}.")


def _skip(unit_id: str) -> None:
    st.session_state.setdefault("label_skipped", set()).add(unit_id)
    st.session_state.pop("label_pinned", None)
    st.session_state["label_note"] = ""
    st.session_state["label_flash"] = ("ok", f"Skipped {unit_id} for this session.")


def _undo() -> None:
    with db_session() as db:
        undone = undo_last_label(db, _annotator())
    if undone is None:
        st.session_state["label_flash"] = ("info", "Nothing to undo.")
        return
    st.session_state["label_pinned"] = undone.unit_id
    st.session_state.get("label_skipped", set()).discard(undone.unit_id)
    st.session_state["label_flash"] = ("ok", f"Undid {undone.value} on {undone.unit_id}; it is shown again.")


def _unskip() -> None:
    st.session_state["label_skipped"] = set()


st.title("Label")

# --- who is labelling -------------------------------------------------------------------------
if "annotator" not in st.session_state and "_keep_annotator" not in st.session_state:
    st.session_state["_keep_annotator"] = st.query_params.get("annotator", "")  # survives a reload
remember("annotator", "")
st.text_input("Your name (recorded with each label; not a password)", key="annotator", placeholder="e.g. alice")
keep("annotator")
annotator = _annotator()
if annotator and st.query_params.get("annotator") != annotator:
    st.query_params["annotator"] = annotator

# --- queue options ----------------------------------------------------------------------------
with db_session() as db:
    overall = progress(db)
task_options = [t for t in TASK_VALUES if t in overall["per_task"]]
with st.sidebar:
    st.header("Queue")
    remember("label_task", task_options[0] if task_options else ALL_TASKS)
    if st.session_state["label_task"] not in [*task_options, ALL_TASKS]:
        st.session_state["label_task"] = task_options[0] if task_options else ALL_TASKS
    st.selectbox("Task", [*task_options, ALL_TASKS], key="label_task")
    remember("label_overlap", 1)
    st.number_input("Annotators per unit (overlap)", min_value=1, max_value=20, step=1, key="label_overlap",
                    help="Units are handed out until this many people have labelled them, so agreement can be measured.")
    remember("label_order", "sequential")
    st.selectbox("Order", ORDERS, key="label_order", format_func=ORDER_NAMES.get)
    remember("label_threshold", 0.5)
    st.slider("Threshold (for 'near the threshold first')", 0.0, 1.0, step=0.01, key="label_threshold",
              disabled=st.session_state["label_order"] not in ("near_threshold", "helps_most"))
    remember("label_show_quote", True)
    st.toggle("Highlight the judge's quote", key="label_show_quote")
    for key in ("label_task", "label_overlap", "label_order", "label_threshold", "label_show_quote"):
        keep(key)
    with st.expander("Guidelines", expanded=False):
        text = guidelines_text()
        if text is None:
            st.text("No guidelines found (labels/guidelines.md).")
        else:
            st.markdown(text)  # project file, not eval-set data

task = None if st.session_state["label_task"] == ALL_TASKS else st.session_state["label_task"]

if not task_options:
    st.info("The label store has no units yet. Load an eval set on the Data page.")
    st.page_link("app_pages/data.py", label="Go to Data", icon=":material/database:")
    st.stop()
if not annotator:
    st.info("Enter your name to start labelling.")
    st.stop()

flash = st.session_state.pop("label_flash", None)
if flash:
    kind, message = flash
    {"ok": st.success, "error": st.error, "info": st.info}[kind](message)

# --- the unit ---------------------------------------------------------------------------------
skipped = st.session_state.setdefault("label_skipped", set())
with db_session() as db:
    unit = None
    pinned = st.session_state.get("label_pinned")
    if pinned:
        unit = get_unit(db, pinned)
        if unit is not None and task is not None and unit.task != task:
            unit = None
    if unit is None:
        unit = pick_unit(
            db, annotator, task=task, overlap=int(st.session_state["label_overlap"]),
            order=st.session_state["label_order"], threshold=float(st.session_state["label_threshold"]),
            skipped=skipped,
        )
    mine = progress(db, annotator, task=task)
    item = get_item(db, unit.item_id) if unit is not None else None
    quotes = (
        [j.quote for j in list_judgments(db, task=unit.task) if j.unit_id == unit.unit_id and j.quote]
        if unit is not None and unit.task == "claim_support"
        else []
    )

done, total = mine["labelled_by_annotator"] or 0, mine["units"]
st.progress(done / total if total else 0.0, text=f"{annotator}: {done} of {total} units labelled")

if unit is None:
    if skipped:
        st.info(f"Only units you skipped are left ({len(skipped)}).")
        st.button("Bring skipped units back", key="label_unskip", on_click=_unskip)
    else:
        st.success("Nothing left to label in this queue. Thank you!")
    st.button("Undo my last label", key="label_undo_done", on_click=_undo, shortcut="U")
    st.stop()

st.text(f"{unit.task} · unit {unit.unit_id}")
values = TASK_VALUES[unit.task]

if item is not None:
    st.markdown("**Question**")
    st.text(item.question)
if unit.task == "claim_support":
    st.subheader("Claim")
    with st.container(border=True):
        st.text(unit.text)
else:
    st.subheader("Answer")
    with st.container(border=True):
        st.text(item.answer if item is not None else unit.text)
st.text_input("Note (optional)", key="label_note")
columns = st.columns(len(values) + 2)
for index, value in enumerate(values):
    columns[index].button(
        f"{value}  [{SHORTCUTS[index]}]", key=f"label_value_{index}", type="primary", on_click=_commit,
        args=(unit.unit_id, unit.task, value), shortcut=SHORTCUTS[index], width="stretch",
    )
columns[len(values)].button("skip  [S]", key="label_skip", on_click=_skip, args=(unit.unit_id,), shortcut="S",
                            width="stretch")
columns[len(values) + 1].button("undo  [U]", key="label_undo", on_click=_undo, shortcut="U", width="stretch")

if item is not None and unit.task in ("claim_support", "answer_faithfulness"):
    quote = quotes[0] if quotes and st.session_state["label_show_quote"] else None
    found = quote is not None and any(quote in p.text for p in item.contexts)
    if quote and not found:
        st.markdown("**Judge's quote** (not found verbatim in the passages)")
        st.text(quote)
    st.markdown(f"**Passages** ({len(item.contexts)})")
    for passage in item.contexts:
        with st.container(border=True):
            st.text(f"[{passage.id}]" + (f"  {passage.source}" if passage.source else ""))
            st.html(f'<div class="wb-passage">{highlight_quote_html(passage.text, quote)}</div>')

