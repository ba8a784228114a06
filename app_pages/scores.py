"""Scores page: a scored run's summary, the quadrant chart with counts, and drill-down to items."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from app_pages.common import db_session, runs_root
from workbench.report import (
    RunError,
    claims_frame,
    items_frame,
    list_run_dirs,
    quadrant_chart,
    quadrant_table,
    read_run,
    summary_table,
)
from workbench.store import get_item


@st.cache_data(show_spinner="Reading the run...", max_entries=16)
def _run(path: str, mtime: tuple) -> tuple[dict, list[dict]]:
    """``read_run`` cached by folder path and the mtimes of its two files."""
    return read_run(path)


def _mtimes(folder: Path) -> tuple:
    return tuple(
        (folder / name).stat().st_mtime_ns if (folder / name).exists() else None
        for name in ("summary.json", "items.jsonl")
    )


st.title("Scores")
runs = list_run_dirs(runs_root())
options = [str(p) for p in runs] + ["(another folder)"]
choice = st.selectbox("Run folder (newest first)", options, key="scores_run")
if choice == "(another folder)":
    choice = st.text_input("Path to a run folder", key="scores_other")
if not choice:
    st.info(f"No runs under {runs_root()}: run `workbench score EVALSET` first, or give a folder.")
    st.stop()
folder = Path(choice).expanduser()
try:
    summary, records = _run(str(folder), _mtimes(folder))
except RunError as exc:
    st.error("Cannot read this run.")
    st.text(str(exc))
    st.stop()

items = items_frame(records)
thresholds = summary.get("thresholds") or {"faithfulness": 0.85, "answer_relevance": 0.70}

cols = st.columns(4)
faith, rel, quotes = summary.get("faithfulness") or {}, summary.get("answer_relevance") or {}, summary.get("quotes") or {}


def _pct(value) -> str:
    return "n/a" if value is None else f"{100 * float(value):.1f}%"


cols[0].metric("Items", summary.get("n_items"))
cols[1].metric("Faithfulness pass", _pct(faith.get("pass_rate")), help=f"mean {faith.get('mean')}")
cols[2].metric("Relevance pass", _pct(rel.get("pass_rate")), help=f"mean {rel.get('mean')}")
cols[3].metric("Quote hallucination", _pct(quotes.get("rate")))
judge = summary.get("judge") or {}
st.text(f"judge {judge.get('fingerprint') if isinstance(judge, dict) else judge} · thresholds from "
        f"{thresholds.get('source', 'default')}")

left, right = st.columns([3, 2])
with left:
    st.altair_chart(quadrant_chart(items, thresholds), key="scores_quadrant")
with right:
    st.dataframe(quadrant_table(items), hide_index=True, key="scores_quadrant_table")
    with st.expander("All summary numbers"):
        st.dataframe(summary_table(summary), hide_index=True, key="scores_summary_table")

for block in ("corrected", "diagnosis"):
    if summary.get(block) is not None:
        with st.expander(f"{block} (summary.json)", expanded=block == "corrected"):
            st.json(summary[block])

st.subheader("Items")
quadrants = ["(all)"] + sorted(items["quadrant"].unique().tolist())
cell = st.selectbox("Quadrant", quadrants, key="scores_cell")
shown = items if cell == "(all)" else items[items["quadrant"] == cell]
st.dataframe(shown, hide_index=True, key="scores_items")
ids = shown["id"].tolist()
if ids:
    item_id = st.selectbox("Drill down to item", ids, key="scores_item")
    record = next(r for r in records if str(r.get("id")) == item_id)
    with db_session() as db:
        stored = get_item(db, item_id)
    if stored is not None:
        st.markdown("**Question**")
        st.text(stored.question)
        st.markdown("**Answer**")
        st.text(stored.answer)
    st.text(f"faithfulness {record.get('faithfulness')} · answer relevance {record.get('answer_relevance')} · "
            f"quadrant {record.get('quadrant')} · diagnosis {record.get('diagnosis')}")
    st.markdown("**Claims**")
    st.dataframe(claims_frame(record), hide_index=True, key="scores_claims")
    for index, claim in enumerate(record.get("claims") or []):
        with st.container(border=True):
            st.text(f"claim {index}: {'supported' if claim.get('supported') else 'unsupported'} "
                    f"(score {claim.get('score')}, passage {claim.get('passage_id')})")
            st.text(claim.get("text") or "")
            if claim.get("quote"):
                st.text(f"quote{'' if claim.get('quote_found') else ' (NOT found in the passages)'}: {claim['quote']}")
    if record.get("reverse_questions"):
        st.markdown("**Reverse questions**")
        st.dataframe(record["reverse_questions"], key="scores_reverse")
    if record.get("errors"):
        st.markdown("**Errors**")
        for error in record["errors"]:
            st.text(str(error))
