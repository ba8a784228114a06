"""Label page: one unit at a time, buttons and keyboard shortcuts, committed before the next shows.

Keys (the same in every task, ``Task.keys`` of the task registry): 1 = the task's positive value
(supported / faithful / relevant / refused / correct), 2 = the other value, S = skip, U = undo.

A label is accepted only for the unit on screen: every showing of a unit is a *view* with a
token (unit id + view number); the value buttons are keyed by the view and carry its token, and
the callback refuses, with a visible message, a token that is not the current view's, or a
view already labelled (a second press faster than the page updates). The next unit is reserved
with a lease (``next_unit_for(lease_seconds=...)``), so two annotators never get the same unit
with overlap 1.

A key press reruns only the unit area (``st.fragment``), not the sidebar.

Focus: once the name is entered the name box is replaced by text, so key presses cannot type into
it; in the note box, Enter saves the note and gives the keys back to labelling (the box is
re-created, which drops its focus).

All eval-set text is untrusted: it is shown with ``st.text`` or as escaped HTML (quote highlight).
"""
from __future__ import annotations

import threading

import streamlit as st

from workbench.formatting import highlight_quote_html
from workbench.store import (
    ORDERS,
    LabelError,
    annotator_progress,
    append_labels,
    get_item,
    get_unit,
    is_stale,
    live_tasks,
    release_lease,
    undo_last_label,
    unit_quotes,
)
from workbench.tasks import BY_NAME, LABEL_KEYS, REGISTRY
from workbench.types import TASK_VALUES, Label
from workbench_app.common import db_session, guidelines_text, keep, label_css, pick_unit, remember

ALL_TASKS = "(all tasks)"
ORDER_NAMES = {"sequential": "sequential", "near_threshold": "near the threshold first",
               "helps_most": "helps most (judges disagree, then near the threshold)", "random": "random"}
SHORTCUTS = LABEL_KEYS
EVIDENCE_TASKS = tuple(task.name for task in REGISTRY if task.evidence)


def _annotator() -> str:
    return (st.session_state.get("_keep_annotator") or st.session_state.get("annotator") or "").strip()


def _view() -> dict | None:
    return st.session_state.get("label_view")


def _lock() -> threading.Lock:
    """This session's lock: Streamlit may run a stopping script run and the next one on two threads,
    so two callbacks of one session can overlap; the check-then-use of a view token must not."""
    return st.session_state["_label_lock"]


def _commit(token: tuple[str, int], task: str, value: str) -> None:
    """Button callback: append the label only if ``token`` is the view on screen and not yet used."""
    with _lock():
        view = _view()
        unit_id, seq = token
        if view is None or (view["unit_id"], view["seq"]) != (unit_id, seq):
            _count_refused_press(seq, value)
            shown = f"{view['unit_id']}" if view else "no unit"
            st.session_state["label_flash"] = (
                "error", f"Not saved: the key press was for {unit_id} (view {seq}), but the page had already moved "
                         f"on to {shown}. Look at the unit shown and press again.")
            return
        if view["used"]:
            _count_refused_press(seq, value)
            st.session_state["label_flash"] = (
                "warning", f"Not applied: {unit_id} was already labelled {view['used']} in this view; the extra "
                           "press was ignored. Press U to undo if that label was wrong.")
            return
        view["used"] = value  # claimed before writing: a concurrent press sees it
        note = _note_now()
        try:
            with db_session() as db:
                append_labels(db, [Label(unit_id, task, _annotator(), value, note)])
        except LabelError as exc:
            view["used"] = None
            st.session_state["label_flash"] = ("error", str(exc))
            return
    st.session_state.setdefault("label_saved_by", {})[seq] = value
    _clear_note()
    st.session_state.pop("label_pinned", None)
    st.session_state["label_flash"] = ("ok", f"Saved {value} for {unit_id}.")


def _count_refused_press(seq: int, value: str) -> None:
    """Count a press for view ``seq`` that was not saved. The flash that says so is replaced by the
    next press's message within a fraction of a second, so the count stays on screen
    (:func:`_refused_presses_notice`) until the annotator dismisses it.

    Each button of a view is counted once, and not at all when it is the button that saved that
    view: Streamlit can deliver one click to the callback twice (a rerun interrupted by the next
    press keeps its trigger), and such a repeat cannot be told from a second press of the same key,
    so the count is a lower bound."""
    if st.session_state.get("label_saved_by", {}).get(seq) != value:
        st.session_state.setdefault("label_refused_buttons", set()).add((seq, value))


def _dismiss_refused_presses() -> None:
    st.session_state["label_refused_buttons"] = set()


def _refused_presses_notice() -> None:
    """A lasting warning with the number of presses not saved since it was last dismissed (the
    buttons counted by :func:`_count_refused_press`)."""
    refused = len(st.session_state.get("label_refused_buttons", ()))
    if refused:
        st.warning(f"At least {refused} key {'press was' if refused == 1 else 'presses were'} not saved: "
                   f"{'it' if refused == 1 else 'they'} arrived after the page had moved on to another unit "
                   "(or repeated a label). Only a press for the unit on screen is saved; the progress counter "
                   "shows what is stored. Pressing a little slower avoids this.")
        st.button("Dismiss", key="label_refused_dismiss", on_click=_dismiss_refused_presses, type="tertiary")


def _note_now() -> str | None:
    """The note as typed: the box's own value (even if Enter was not pressed), else the kept one."""
    box = st.session_state.get(f"label_note_{st.session_state.get('label_note_gen', 0)}")
    return (box or st.session_state.get("label_note_value") or "").strip() or None


def _clear_note() -> None:
    st.session_state["label_note_value"] = ""
    st.session_state["label_note_gen"] = st.session_state.get("label_note_gen", 0) + 1


def _skip(token: tuple[str, int]) -> None:
    with _lock():
        view = _view()
        if view is None or (view["unit_id"], view["seq"]) != tuple(token) or view["used"]:
            st.session_state["label_flash"] = ("warning", f"Skip ignored: {token[0]} is no longer the unit shown.")
            return
        view["used"] = "skipped"
    st.session_state.setdefault("label_skipped", set()).add(token[0])
    st.session_state.pop("label_pinned", None)
    _clear_note()
    with db_session() as db:
        release_lease(db, _annotator(), token[0])
    st.session_state["label_flash"] = ("ok", f"Skipped {token[0]} for this session.")


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


def _name_entered() -> None:
    st.session_state["_keep_annotator"] = (st.session_state.get("annotator") or "").strip()


def _change_name() -> None:
    st.session_state["_keep_annotator"] = ""
    st.session_state["annotator"] = ""
    st.session_state.pop("label_view", None)


def _note_entered(key: str) -> None:
    """Enter in the note box: keep the note and re-create the box (new key), which drops its focus.

    A change reported for an older box (the label was saved in the same rerun) is ignored.
    """
    if key != f"label_note_{st.session_state.get('label_note_gen', 0)}":
        return
    st.session_state["label_note_value"] = st.session_state.get(key) or ""
    st.session_state["label_note_gen"] = st.session_state.get("label_note_gen", 0) + 1


label_css()
if "_label_lock" not in st.session_state:  # made in the first run, before any callback can need it
    st.session_state["_label_lock"] = threading.Lock()

# --- who is labelling -------------------------------------------------------------------------
if "_keep_annotator" not in st.session_state:
    st.session_state["_keep_annotator"] = st.query_params.get("annotator", "")  # survives a reload
annotator = _annotator()
head, who = st.columns([0.8, 4.2], vertical_alignment="center")
head.subheader("Label", anchor=False)
if not annotator:
    with who:
        st.text_input("Your name (recorded with each label; not a password)", key="annotator",
                      placeholder="e.g. alice, then Enter", on_change=_name_entered)
else:
    with who:
        st.markdown(f"Labelling as **{annotator}**" if annotator.isalnum() else "Labelling as:")
        if not annotator.isalnum():
            st.text(annotator)
        st.button("Change name", key="label_change_name", on_click=_change_name, type="tertiary")
    if st.query_params.get("annotator") != annotator:
        st.query_params["annotator"] = annotator

# --- queue options ----------------------------------------------------------------------------
with db_session() as db:
    task_options = live_tasks(db)
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
    st.selectbox("Order", ORDERS, key="label_order", format_func=lambda order: ORDER_NAMES[order])
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
    st.page_link("views/data.py", label="Go to Data", icon=":material/database:")
    st.stop()
if not annotator:
    st.info("Enter your name to start labelling (then press Enter).")
    st.stop()

# --- the unit ---------------------------------------------------------------------------------
@st.fragment
def _unit_area(annotator: str, task: str | None) -> None:
    """The unit, its buttons and evidence. A fragment: a key press reruns only this part of the page."""
    skipped = st.session_state.setdefault("label_skipped", set())
    queue = (task, int(st.session_state["label_overlap"]), st.session_state["label_order"],
             float(st.session_state["label_threshold"]))
    with db_session() as db:
        if st.session_state.get("label_queue") != queue:  # other queue settings: give back the unit held
            release_lease(db, annotator)
            st.session_state["label_queue"] = queue
        unit = None
        pinned = st.session_state.get("label_pinned")
        if pinned:
            unit = get_unit(db, pinned)
            if unit is None or (task is not None and unit.task != task) or is_stale(db, pinned):
                unit = None
                st.session_state.pop("label_pinned", None)
        if unit is None:
            unit = pick_unit(
                db, annotator, task=task, overlap=int(st.session_state["label_overlap"]),
                order=st.session_state["label_order"], threshold=float(st.session_state["label_threshold"]),
                skipped=skipped,
            )
        done, total = annotator_progress(db, annotator, task=task)
        item = get_item(db, unit.item_id) if unit is not None else None
        quotes = unit_quotes(db, unit.unit_id) if unit is not None and unit.task in EVIDENCE_TASKS else []

    # a new view whenever the unit changes or the shown one was labelled or skipped
    with _lock():
        view = _view()
        if unit is not None and (view is None or view["unit_id"] != unit.unit_id or view["used"]):
            seq = (view["seq"] + 1) if view else 1
            st.session_state["label_prev_view"] = view
            view = {"unit_id": unit.unit_id, "task": unit.task, "seq": seq, "used": None}
            st.session_state["label_view"] = view

    st.progress(done / total if total else 0.0, text=f"{annotator}: {done} of {total} units labelled")

    flash = st.session_state.pop("label_flash", None)
    if flash:
        kind, message = flash
        {"ok": st.success, "error": st.error, "info": st.info, "warning": st.warning}[kind](message)
    _refused_presses_notice()

    if unit is None:
        if skipped:
            st.info(f"Only units you skipped are left ({len(skipped)}).")
            st.button("Bring skipped units back", key="label_unskip", on_click=_unskip)
        else:
            st.success("Nothing left to label in this queue. Thank you!")
        st.button("Undo my last label", key="label_undo_done", on_click=_undo, shortcut="U")
        return

    assert view is not None  # a unit is shown, so the block above kept its view or made a new one
    values = TASK_VALUES[unit.task]
    kind = BY_NAME[unit.task].unit  # claim, answer or passage: what the unit's text is
    token = (unit.unit_id, view["seq"])
    keymap = (f"Each button's key is on it; 1 is the positive value in every task ({values[0]} here). "
              "In the note box, Enter keeps the note and gives the keys back.")
    left, right = st.columns([1.1, 1], gap="medium") if unit.task in EVIDENCE_TASKS and item else (st.container(), None)

    with left:
        st.caption(f"{unit.task} · unit {unit.unit_id} · view {view['seq']}")
        if item is not None:
            st.markdown("**Question**")
            st.text(item.question)
        st.markdown(f"**{kind.capitalize()}**")
        with st.container(border=True, key="label_unit_text"):
            st.text(item.answer if kind == "answer" and item is not None else unit.text)
        columns = st.columns([1.25, 1.25, 0.75, 0.75])
        for index, (value, kind) in enumerate(zip(values, ("pos", "neg"))):
            columns[index].button(
                value, key=f"label_{kind}_{view['seq']}", type="primary" if index == 0 else "secondary",
                on_click=_commit, args=(token, unit.task, value), shortcut=SHORTCUTS[index], width="stretch",
            )
        columns[2].button("skip", key=f"label_skip_{view['seq']}", on_click=_skip, args=(token,), shortcut="S",
                          width="stretch")
        columns[3].button("undo", key="label_undo", on_click=_undo, shortcut="U", width="stretch")
        gen = st.session_state.get("label_note_gen", 0)
        note_key = f"label_note_{gen}"
        if note_key not in st.session_state:
            st.session_state[note_key] = st.session_state.get("label_note_value", "")
        st.caption(keymap)
        st.text_input("Note (optional; Enter keeps it and gives the keys back)", key=note_key,
                      on_change=_note_entered, args=(note_key,))

    # The previous view's buttons, hidden and without shortcuts: same keys, so the same widget ids. A
    # press sent from the old buttons while this run replaced them still reaches ``_commit`` (and is
    # refused there with a message) instead of being dropped without a word.
    previous = st.session_state.get("label_prev_view")
    if previous and previous.get("task") in TASK_VALUES:
        with st.container(key="label_ghosts"):
            for value, kind in zip(TASK_VALUES[previous["task"]], ("pos", "neg")):
                st.button(value, key=f"label_{kind}_{previous['seq']}", on_click=_commit,
                          args=((previous["unit_id"], previous["seq"]), previous["task"], value))
            st.button("skip", key=f"label_skip_{previous['seq']}", on_click=_skip,
                      args=((previous["unit_id"], previous["seq"]),))

    if item is not None and unit.task in EVIDENCE_TASKS and right is not None:
        quote = quotes[0] if quotes and st.session_state["label_show_quote"] else None
        found = quote is not None and any(quote in p.text for p in item.contexts)
        # quote's passage first (``found`` implies a quote; the ``is not None`` says so to the type checker)
        passages = sorted(item.contexts, key=lambda p: 0 if found and quote is not None and quote in p.text else 1)
        with right:
            st.markdown(f"**Evidence** ({len(item.contexts)} passage{'' if len(item.contexts) == 1 else 's'}" + (", the judge's quote highlighted)" if found else ")"))
            if quote and not found:
                st.caption("Judge's quote (not found verbatim in the passages):")
                st.text(quote)
            with st.container(height=560, key="label_evidence"):
                for passage in passages:
                    st.text(f"[{passage.id}]" + (f"  {passage.source}" if passage.source else ""))
                    st.html(f'<div class="wb-passage">{highlight_quote_html(passage.text, quote)}</div>')


_unit_area(annotator, task)
