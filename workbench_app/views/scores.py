"""Scores page: a scored run's summary with intervals, the quadrant chart, and a sortable items table
whose selected row opens the item."""
from __future__ import annotations

from pathlib import Path
from typing import cast

import pandas as pd
import streamlit as st

from workbench.config import DEFAULT_THRESHOLDS as DEFAULTS
from workbench.formatting import NA, num, pct, pct_range, rounded
from workbench.reports.charts import (
    RunError,
    claims_frame,
    items_frame,
    list_run_dirs,
    quadrant_chart,
    read_run,
    summary_table,
)
from workbench.reports.tables import quadrant_summary, rate_interval, summary_rows
from workbench.store import get_item
from workbench_app.common import db_session, run_roots

DEFAULT_THRESHOLDS = {"faithfulness": DEFAULTS.faithfulness, "answer_relevance": DEFAULTS.answer_relevance}


@st.cache_data(show_spinner="Reading the run...", max_entries=16)
def _run(path: str, mtime: tuple) -> tuple[dict, list[dict]]:
    """``read_run`` cached by folder path and the mtimes of its two files."""
    return read_run(path)


def _mtimes(folder: Path) -> tuple:
    return tuple(
        (folder / name).stat().st_mtime_ns if (folder / name).exists() else None
        for name in ("summary.json", "items.jsonl")
    )


def _threshold_value(thresholds: dict, key: str) -> str:
    value = thresholds.get(key)
    if isinstance(value, dict):
        value = value.get("threshold")
    return num(value, 3)


def _rate_caption(block: dict, threshold: str) -> str:
    bounds = pct_range(rate_interval(block))
    parts = [f"95% CI {bounds}" if bounds else None, f"score ≥ {threshold}",
             f"mean {num(block.get('mean'))}" if block.get("mean") is not None else None,
             f"n {block.get('n')}" if block.get("n") is not None else None]
    return " · ".join(p for p in parts if p)


st.title("Scores")
roots = run_roots()
runs = list_run_dirs(*roots)
options = [str(p) for p in runs] + ["(another folder)"]
choice = st.selectbox("Run folder (newest first)", options, key="scores_run")
if choice == "(another folder)":
    choice = st.text_input("Path to a run folder", key="scores_other")
if not choice:
    st.info(f"No runs under {' or '.join(map(str, roots))}: run `workbench score EVALSET` first, or give a folder.")
    st.stop()
folder = Path(choice).expanduser()
try:
    summary, records = _run(str(folder), _mtimes(folder))
except RunError as exc:
    st.error("Cannot read this run.")
    st.text(str(exc))
    st.stop()

items = items_frame(records)
thresholds = summary.get("thresholds") or dict(DEFAULT_THRESHOLDS, source="default")
t_faith, t_rel = _threshold_value(thresholds, "faithfulness"), _threshold_value(thresholds, "answer_relevance")
faith, rel, quotes = summary.get("faithfulness") or {}, summary.get("answer_relevance") or {}, summary.get("quotes") or {}

cols = st.columns(4)
cols[0].metric("Items", summary.get("n_items"))
errors = summary.get("errors")
if not isinstance(errors, dict):
    errors = {}
cols[0].caption(f"{errors.get('items_with_errors', 0)} with errors")
cols[1].metric("Faithfulness pass", pct(faith.get("pass_rate")))
cols[1].caption(_rate_caption(faith, t_faith))
cols[2].metric("Relevance pass", pct(rel.get("pass_rate")))
cols[2].caption(_rate_caption(rel, t_rel))
cols[3].metric("Quote hallucination", pct(quotes.get("rate")))
quote_ci = rate_interval(quotes, "rate")
cols[3].caption(" · ".join(p for p in (
    f"95% CI {pct_range(quote_ci)}" if quote_ci else None,
    f"{quotes.get('hallucinated')} of {quotes.get('n')} quotes" if quotes.get("n") is not None else None) if p))
judge = summary.get("judge") or {}
st.markdown(
    f"**Thresholds:** faithfulness ≥ **{t_faith}**, answer relevance ≥ **{t_rel}** "
    f"(from `{thresholds.get('source', 'default')}`) · judge `{judge.get('fingerprint') if isinstance(judge, dict) else judge}`"
)
placeholders = summary.get("placeholders")
if placeholders:
    listed = (", ".join(f"{k}: {v}" for k, v in rounded(placeholders).items()) if isinstance(placeholders, dict)
              else ", ".join(map(str, placeholders)) if isinstance(placeholders, list) else str(placeholders))
    st.warning(f"Placeholder scores in this run (not measured): {listed}", icon=":material/info:")

left, right = st.columns([3, 2])
with left:
    st.altair_chart(quadrant_chart(items, thresholds), key="scores_quadrant", width="content")
with right:
    quadrant_rows = quadrant_summary(summary, items)
    st.dataframe(quadrant_rows, hide_index=True, key="scores_quadrant_table",
                 column_order=["Quadrant", "Items", "Share [95% CI]"])
    st.caption("Shares are of all items, with 95% intervals (from summary.json where it has them, else Wilson).  \n"
               + "  \n".join(f"**{row['Quadrant']}**: {row['Meaning']}" for row in quadrant_rows.to_dict("records")
                              if row["Meaning"] and row["Items"]))
    with st.expander("All summary numbers"):
        st.dataframe(summary_rows(summary_table(summary)), hide_index=True, key="scores_summary_table")

for block in ("corrected", "diagnosis"):
    if summary.get(block) is not None:
        with st.expander(f"{block} (summary.json)", expanded=block == "corrected"):
            st.json(rounded(summary[block]))

st.subheader("Items")
st.caption("Sort by clicking a column header; select a row (the box at its left) to open the item below.")
quadrants = ["(all)"] + sorted(items["quadrant"].unique().tolist())
cell = st.selectbox("Quadrant", quadrants, key="scores_cell")
# a boolean mask selects rows of a DataFrame: a DataFrame (pandas types ``df[mask]`` as ``Series | DataFrame``)
shown = cast(pd.DataFrame, items if cell == "(all)" else items[items["quadrant"] == cell]).reset_index(drop=True)
# pandas types ``decimals`` as the invariant ``dict[IndexLabel, int]``, so a ``dict[str, int]`` is refused
shown = shown.round({"faithfulness": 3, "answer_relevance": 3})  # pyright: ignore[reportArgumentType]
event = st.dataframe(
    shown, hide_index=True, key="scores_items", on_select="rerun", selection_mode="single-row", height=320,
    column_config={
        "faithfulness": st.column_config.NumberColumn("faithfulness", format="%.3f"),
        "answer_relevance": st.column_config.NumberColumn("answer relevance", format="%.3f"),
        "n_claims": st.column_config.NumberColumn("claims"),
        "n_unsupported": st.column_config.NumberColumn("unsupported"),
        "n_quote_missing": st.column_config.NumberColumn("quote missing"),
        "n_errors": st.column_config.NumberColumn("errors"),
    },
)
selected = list(getattr(getattr(event, "selection", None), "rows", None) or [])
typed = st.text_input("Or open an item by id", key="scores_item_id", placeholder="e.g. " + (shown["id"].iloc[0] if len(shown) else "q-17"))
item_id = typed.strip() if typed.strip() else (shown["id"].iloc[selected[0]] if selected and selected[0] < len(shown) else None)
record = next((r for r in records if str(r.get("id")) == item_id), None) if item_id else None
if item_id and record is None:
    st.error("No item with that id in this run.")
    st.text(item_id)
elif record is None:
    st.caption("No item open: select a row above.")
else:
    assert item_id  # a record is only ever found for an id (``record`` is None without one)
    st.subheader(f"Item {item_id}")
    with db_session() as db:
        stored = get_item(db, item_id)
    if stored is not None:
        st.markdown("**Question**")
        st.text(stored.question)
        st.markdown("**Answer**")
        st.text(stored.answer)
    st.text(f"faithfulness {num(record.get('faithfulness'), 3)} · answer relevance "
            f"{num(record.get('answer_relevance'), 3)} · quadrant {record.get('quadrant') or NA} · "
            f"diagnosis {record.get('diagnosis') or NA}")
    st.markdown("**Claims**")
    st.dataframe(claims_frame(record).round({"score": 3}), hide_index=True, key="scores_claims")
    for index, claim in enumerate(record.get("claims") or []):
        with st.container(border=True):
            st.text(f"claim {index}: {'supported' if claim.get('supported') else 'unsupported'} "
                    f"(score {num(claim.get('score'), 3)}, passage {claim.get('passage_id')})")
            st.text(claim.get("text") or "")
            if claim.get("quote"):
                st.text(f"quote{'' if claim.get('quote_found') else ' (NOT found in the passages)'}: {claim['quote']}")
    if record.get("reverse_questions"):
        st.markdown("**Reverse questions**")
        st.dataframe([rounded(q, 3) for q in record["reverse_questions"]], key="scores_reverse")
    if record.get("errors"):
        st.markdown("**Errors**")
        for error in record["errors"]:
            st.text(str(error))
