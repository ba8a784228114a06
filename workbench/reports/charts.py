"""Summary tables and Altair charts built from plain data (no streamlit import).

Shared by the Streamlit pages and the HTML report: every function takes records, dicts or
DataFrames and returns a ``pandas.DataFrame``, an ``altair.Chart`` or an escaped HTML string.
Text that comes from an eval set is untrusted: the only HTML built here
(``highlight_quote_html``) escapes every piece before wrapping the quote in ``<mark>``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from workbench.formatting import (
    fixed,
    highlight_quote_html,  # noqa: F401  (re-exported; defined where the app can import it cheaply)
)
from workbench.jsonl import read_json_object, read_jsonl
from workbench.types import QUADRANT_CELLS, QUADRANTS

QUADRANT_COLORS: dict[str, str] = {cell.name: cell.color for cell in QUADRANT_CELLS}
# Charts keep their natural size: ``width``/``height`` are the plot area, axes and legends are added
# around it (Streamlit would otherwise squeeze the whole chart, labels included, into ``width``).
#: What the chart builders return: a layered chart (altair types ``.properties()`` as possibly faceted).
LayeredChart = alt.LayerChart | alt.FacetChart

NATURAL_SIZE = alt.AutoSizeParams(type="pad", contains="padding")
CURVE_METRICS: tuple[str, ...] = ("kappa", "f1", "youden_j", "youden", "accuracy", "precision", "recall")

# ---------------------------------------------------------------------------------------------
# Runs (items.jsonl + summary.json)


class RunError(ValueError):
    """A run folder that cannot be read; the message names the file and line."""


def read_run(run_dir: str | Path) -> tuple[dict, list[dict]]:
    """Read a scored run folder: ``(summary, item records)``.

    Args:
        run_dir: a folder written by ``workbench score`` holding ``summary.json`` and
            ``items.jsonl`` (the contract in DESIGN.md).

    Raises:
        RunError: a file is missing or a line is not a JSON object (names file and line).
    """
    run_dir = Path(run_dir)
    summary_path, items_path = run_dir / "summary.json", run_dir / "items.jsonl"
    try:
        _, summary = read_json_object(summary_path)
    except FileNotFoundError:
        raise RunError(f"{summary_path}: file not found (expected a run folder from `workbench score`)") from None
    except ValueError as exc:
        raise RunError(str(exc)) from None
    try:
        records = read_jsonl(items_path)
    except FileNotFoundError:
        raise RunError(f"{items_path}: file not found (expected a run folder from `workbench score`)") from None
    except ValueError as exc:
        raise RunError(str(exc)) from None
    return summary, records


def list_run_dirs(*roots: str | Path) -> list[Path]:
    """Run folders under any of ``roots`` (those holding a ``summary.json``), one or two levels down
    (so ``runs/demo/rag`` from ``workbench demo`` is found), each once, newest first by mtime.

    A missing root adds nothing; roots that overlap (one inside another) list a run once.
    """
    runs = {p.parent.resolve() for root in map(Path, roots) if root.is_dir()
            for pattern in ("*/summary.json", "*/*/summary.json") for p in root.glob(pattern) if p.is_file()}
    return sorted(runs, key=lambda p: ((p / "summary.json").stat().st_mtime, p.name), reverse=True)


def items_frame(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per scored item: id, scores, quadrant and claim counts.

    Columns: ``id, faithfulness, answer_relevance, quadrant, abstained, n_claims,
    n_unsupported, n_quote_missing, n_errors, diagnosis``. Unscored values stay ``NaN`` in the float
    columns (``None`` in the records); a missing quadrant becomes ``"unscored"``.
    """
    rows = []
    for record in records:
        claims = record.get("claims") or []
        rows.append(
            {
                "id": str(record.get("id")),
                "faithfulness": record.get("faithfulness"),
                "answer_relevance": record.get("answer_relevance"),
                "quadrant": record.get("quadrant") or "unscored",
                "abstained": bool(record.get("abstained")),
                "n_claims": len(claims),
                "n_unsupported": sum(1 for c in claims if not c.get("supported")),
                "n_quote_missing": sum(1 for c in claims if c.get("quote") and c.get("quote_found") is False),
                "n_errors": len(record.get("errors") or []),
                "diagnosis": record.get("diagnosis"),
            }
        )
    frame = pd.DataFrame(
        rows,
        columns=[
            "id", "faithfulness", "answer_relevance", "quadrant", "abstained",
            "n_claims", "n_unsupported", "n_quote_missing", "n_errors", "diagnosis",
        ],
    )
    for column in ("faithfulness", "answer_relevance"):
        frame[column] = pd.Series(pd.to_numeric(frame[column], errors="coerce"), index=frame.index).astype(float)
    return frame


def claims_frame(record: Mapping[str, Any]) -> pd.DataFrame:
    """The claims of one item record as a table (text, supported, score, passage, quote, found)."""
    rows = [
        {
            "claim": c.get("text"),
            "supported": c.get("supported"),
            "score": c.get("score"),
            "passage_id": c.get("passage_id"),
            "quote": c.get("quote"),
            "quote_found": c.get("quote_found"),
            "reason": c.get("reason"),
        }
        for c in (record.get("claims") or [])
    ]
    return pd.DataFrame(rows, columns=["claim", "supported", "score", "passage_id", "quote", "quote_found", "reason"])


def quadrant_table(items_df: pd.DataFrame) -> pd.DataFrame:
    """Counts and shares per quadrant, in ``QUADRANTS`` order, every quadrant listed.

    Shares are over all items; with no items every share is ``NaN`` (never a silent 0).
    """
    counts = items_df["quadrant"].value_counts() if len(items_df) else pd.Series(dtype=int)
    extra = [q for q in counts.index if q not in QUADRANTS]
    order = list(QUADRANTS) + sorted(extra)
    total = int(counts.sum()) if len(counts) else 0
    rows = [
        {"quadrant": q, "count": int(counts.get(q) or 0), "share": (int(counts.get(q) or 0) / total) if total else float("nan")}
        for q in order
    ]
    return pd.DataFrame(rows, columns=["quadrant", "count", "share"])


def _threshold_pair(thresholds: Any) -> tuple[float, float]:
    """``(faithfulness, answer_relevance)`` thresholds from a ``Thresholds``, a summary block or a dict."""
    if isinstance(thresholds, Mapping):
        def get(key: str) -> float:
            value = thresholds[key]
            return float(value["threshold"] if isinstance(value, Mapping) else value)

        return get("faithfulness"), get("answer_relevance")
    return float(thresholds.faithfulness), float(thresholds.answer_relevance)


def quadrant_chart(items_df: pd.DataFrame, thresholds: Any, *, jitter: float = 0.015) -> LayeredChart:
    """Scatter of faithfulness (x) against answer relevance (y), one point per scored item.

    Items with either score missing (abstained, unscored) are left out of the scatter; they
    are in ``quadrant_table``. Dashed rules mark the thresholds; each of the four cells is
    labelled with how many plotted items fall in it and their share of the plotted items (a score
    equal to the threshold passes, as in the quadrant contract).

    Scores pile up on a few values (faithfulness 0 and 1), so each point is drawn with a small
    fixed jitter (up to ``jitter`` on each axis, the same for an id on every run) and partly
    transparent: a dense spot reads darker. Tooltips and counts use the true scores.

    Args:
        items_df: ``items_frame`` output (needs ``id, faithfulness, answer_relevance, quadrant``).
        thresholds: a ``Thresholds``, the ``thresholds`` block of ``summary.json`` or a dict
            ``{"faithfulness": x, "answer_relevance": y}``.
        jitter: the largest shift of a drawn point on each axis (0 draws true positions).
    """
    t_f, t_r = _threshold_pair(thresholds)
    points = items_df.dropna(subset=["faithfulness", "answer_relevance"]).copy()
    offsets = points["id"].astype(str).map(_jitter_pair)
    points["x_drawn"] = points["faithfulness"] + jitter * offsets.map(lambda o: o[0])
    points["y_drawn"] = points["answer_relevance"] + jitter * offsets.map(lambda o: o[1])
    domain = [q for q in QUADRANT_COLORS]
    scale = alt.Scale(domain=domain, range=[QUADRANT_COLORS[q] for q in domain])
    axis_scale = alt.Scale(domain=[-0.03, 1.03], nice=False)
    size = 60 if len(points) < 200 else 24
    opacity = 0.8 if len(points) < 200 else 0.4
    scatter = (
        alt.Chart(points)
        .mark_circle(size=size, opacity=opacity)
        .encode(
            x=alt.X("x_drawn:Q", scale=axis_scale, title="faithfulness (share of claims supported)"),
            y=alt.Y("y_drawn:Q", scale=axis_scale, title="answer relevance"),
            color=alt.Color("quadrant:N", scale=scale, title=None,
                            legend=alt.Legend(orient="bottom", columns=3, labelFontSize=12, symbolOpacity=1)),
            tooltip=["id:N", "quadrant:N", alt.Tooltip("faithfulness:Q", format=".2f"),
                     alt.Tooltip("answer_relevance:Q", format=".2f")],
        )
    )
    rules = pd.DataFrame({"x": [t_f], "y": [t_r]})
    vrule = alt.Chart(rules).mark_rule(strokeDash=[4, 4], color="#333").encode(x="x:Q")
    hrule = alt.Chart(rules).mark_rule(strokeDash=[4, 4], color="#333").encode(y="y:Q")
    cells = quadrant_cell_counts(points, t_f, t_r)
    text = (
        alt.Chart(cells)
        .mark_text(fontSize=14, fontWeight="bold", color="#111", stroke="white", strokeWidth=4, strokeOpacity=0.9)
        .encode(x="x:Q", y="y:Q", text="label:N")
    )
    text_fill = alt.Chart(cells).mark_text(fontSize=14, fontWeight="bold", color="#111").encode(
        x="x:Q", y="y:Q", text="label:N")
    return alt.layer(scatter, vrule, hrule, alt.layer(text, text_fill)).properties(
        width=440, height=330, autosize=NATURAL_SIZE, title=f"Quadrant ({len(points)} scored items; points jittered)")


def _jitter_pair(item_id: str) -> tuple[float, float]:
    """Two offsets in [-1, 1] fixed by the id (a hash, not a random draw), for ``quadrant_chart``."""
    import hashlib

    digest = hashlib.blake2b(item_id.encode("utf-8"), digest_size=4).digest()
    return (digest[0] * 256 + digest[1]) / 32767.5 - 1.0, (digest[2] * 256 + digest[3]) / 32767.5 - 1.0


def quadrant_cell_counts(points: pd.DataFrame, t_f: float, t_r: float) -> pd.DataFrame:
    """Counts of scored items in the four threshold cells, with a label position for each.

    A score at or above its threshold counts as passing. Columns: ``cell, count, x, y, label``;
    the label is ``"n=47 (5.6%)"`` (share of the plotted items; ``"n=0"`` when nothing is plotted).
    """
    f_ok = points["faithfulness"] >= t_f
    r_ok = points["answer_relevance"] >= t_r
    spec = [
        ("pass", f_ok & r_ok, (1 + t_f) / 2, (1 + t_r) / 2),
        ("faithful_irrelevant", f_ok & ~r_ok, (1 + t_f) / 2, t_r / 2),
        ("relevant_unfaithful", ~f_ok & r_ok, t_f / 2, (1 + t_r) / 2),
        ("fail", ~f_ok & ~r_ok, t_f / 2, t_r / 2),
    ]
    rows = [{"cell": name, "count": int(mask.sum()), "x": x, "y": y} for name, mask, x, y in spec]
    frame = pd.DataFrame(rows, columns=["cell", "count", "x", "y"])
    total = len(points)
    frame["label"] = frame["count"].map(lambda n: f"n={n} ({100 * n / total:.1f}%)" if total else f"n={n}")
    return frame


def summary_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    """The headline numbers of ``summary.json`` as rows ``metric, value`` (``None`` kept as ``None``)."""
    rows: list[dict] = [{"metric": "items", "value": summary.get("n_items")}]
    for block, keys in (
        ("faithfulness", ("n", "mean", "pass_rate")),
        ("answer_relevance", ("n", "mean", "pass_rate")),
        ("abstention", ("unanswerable", "abstention_rate", "answerable", "false_refusal_rate")),
        ("retrieval", ("n", "k", "recall_at_k", "precision_at_k", "mrr")),
        ("citations", ("n", "missing_from_corpus", "not_retrieved", "unsupported")),
        ("quotes", ("n", "hallucinated", "rate")),
    ):
        value = summary.get(block)
        if value is None:
            rows.append({"metric": block, "value": None})
            continue
        for key in keys:
            if isinstance(value, Mapping) and key in value:
                rows.append({"metric": f"{block}.{key}", "value": value[key]})
    thresholds = summary.get("thresholds") or {}
    for key in ("faithfulness", "answer_relevance", "source"):
        if key in thresholds:
            rows.append({"metric": f"thresholds.{key}", "value": thresholds[key]})
    values = [None if row["value"] is None else str(row["value"]) for row in rows]
    return pd.DataFrame({"metric": [row["metric"] for row in rows], "value": pd.Series(values, dtype=object)})


# ---------------------------------------------------------------------------------------------
# Agreement


def human_table(report: Mapping[str, Any]) -> pd.DataFrame:
    """Human-human agreement per task from an ``agreement --json`` payload.

    Columns: ``task, units, labelled_units, annotators, alpha, alpha_low, alpha_high,
    pairwise_kappa`` (pairs joined as ``a|b=0.60``). Missing values stay ``None``.
    """
    rows = []
    for task, block in report.items():
        if not isinstance(block, Mapping) or not block:
            continue
        human = block.get("human") or {}
        ci = human.get("alpha_ci") or [None, None]
        pairs = human.get("pairwise_kappa") or {}
        rows.append(
            {
                "task": task,
                "units": block.get("units"),
                "labelled_units": block.get("labelled_units"),
                "annotators": ", ".join(map(str, block.get("annotators") or [])),
                "alpha": human.get("alpha"),
                "alpha_low": ci[0] if len(ci) > 0 else None,
                "alpha_high": ci[1] if len(ci) > 1 else None,
                "pairwise_kappa": ", ".join(f"{k}={_fmt(v)}" for k, v in pairs.items()),
            }
        )
    return pd.DataFrame(
        rows, columns=["task", "units", "labelled_units", "annotators", "alpha", "alpha_low", "alpha_high", "pairwise_kappa"]
    )


def judges_table(report: Mapping[str, Any]) -> pd.DataFrame:
    """Judge-vs-human-majority agreement, one row per (task, judge), beside the human ceiling.

    Columns: ``task, judge, n, kappa, kappa_low, kappa_high, ac1, alpha_with_humans, accuracy,
    quote_hallucination_rate, human_alpha`` (``human_alpha`` repeats the task's human-human
    alpha so the judge can be read against the ceiling).
    """
    rows = []
    for task, block in report.items():
        if not isinstance(block, Mapping) or not block:
            continue
        human_alpha = (block.get("human") or {}).get("alpha")
        for judge, j in (block.get("judges") or {}).items():
            ci = j.get("kappa_ci") or [None, None]
            rows.append(
                {
                    "task": task,
                    "judge": judge,
                    "n": j.get("n"),
                    "kappa": j.get("kappa"),
                    "kappa_low": ci[0] if len(ci) > 0 else None,
                    "kappa_high": ci[1] if len(ci) > 1 else None,
                    "ac1": j.get("ac1"),
                    "alpha_with_humans": j.get("alpha_with_humans"),
                    "accuracy": j.get("accuracy"),
                    "quote_hallucination_rate": j.get("quote_hallucination_rate"),
                    "human_alpha": human_alpha,
                }
            )
    return pd.DataFrame(
        rows,
        columns=["task", "judge", "n", "kappa", "kappa_low", "kappa_high", "ac1", "alpha_with_humans",
                 "accuracy", "quote_hallucination_rate", "human_alpha"],
    )


def ceiling_chart(report: Mapping[str, Any]) -> LayeredChart:
    """The human ceiling beside each judge, one row per task, each value with its 95% interval.

    Humans: Krippendorff's alpha among annotators (``human.alpha`` / ``alpha_ci``). Judges: Cohen's
    kappa against the human majority (``kappa`` / ``kappa_ci``). Values lie in [-1, 1]; 0 is chance.
    A value that is ``None`` (one annotator, one class) is drawn as the text ``n/a`` with its reason
    instead of a point, so a missing ceiling never reads as 0.
    """
    rows = []
    for task, block in report.items():
        if not isinstance(block, Mapping) or not block:
            continue
        human = block.get("human") or {}
        alpha, ci = human.get("alpha"), human.get("alpha_ci") or [None, None]
        one_rater = len(block.get("annotators") or []) < 2
        rows.append({"task": task, "who": "humans: alpha", "value": alpha, "low": ci[0], "high": ci[1],
                     "missing": None if alpha is not None else
                     ("humans: n/a (one rater)" if one_rater else "humans: n/a")})
        for judge, j in (block.get("judges") or {}).items():
            ci = j.get("kappa_ci") or [None, None]
            rows.append({"task": task, "who": f"judge {judge}: kappa", "value": j.get("kappa"), "low": ci[0],
                         "high": ci[1], "missing": None if j.get("kappa") is not None else "judge: n/a"})
    frame = pd.DataFrame(rows, columns=["task", "who", "value", "low", "high", "missing"])
    for column in ("value", "low", "high"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    frame["label"] = frame["value"].map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
    tasks = list(dict.fromkeys(frame["task"]))
    whos = list(dict.fromkeys(frame["who"]))
    x = alt.X("value:Q", scale=alt.Scale(domain=[-1, 1]), title="agreement (0 = chance, 1 = perfect)")
    y = alt.Y("task:N", sort=tasks, title=None, axis=alt.Axis(labelLimit=0, labelFontSize=12))
    y_offset = alt.YOffset("who:N", sort=whos)
    palette = ["#212121"] + ["#e65100", "#1565c0", "#2e7d32", "#6a1b9a", "#00838f"] * len(whos)
    color = alt.Color("who:N", sort=whos, title=None, scale=alt.Scale(domain=whos, range=palette[:len(whos)]),
                      legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0, labelFontSize=12))
    base = alt.Chart(frame)
    present = base.transform_filter("isValid(datum.value)")
    bars = present.transform_filter("isValid(datum.low) && isValid(datum.high)").mark_rule(strokeWidth=2).encode(
        x=alt.X("low:Q", scale=alt.Scale(domain=[-1, 1])), x2="high:Q", y=y, yOffset=y_offset, color=color)
    dots = present.mark_circle(size=90, opacity=1).encode(
        x=x, y=y, yOffset=y_offset, color=color,
        tooltip=["task:N", "who:N", alt.Tooltip("value:Q", format=".2f"), alt.Tooltip("low:Q", format=".2f"),
                 alt.Tooltip("high:Q", format=".2f")])
    values = present.mark_text(align="center", dy=-11, fontSize=11).encode(
        x=x, y=y, yOffset=y_offset, text="label:N", color=alt.value("#222"))
    missing = base.transform_filter("!isValid(datum.value)").mark_text(align="left", fontSize=11, color="#555").encode(
        x=alt.value(6), y=y, yOffset=y_offset, text="missing:N")
    zero = alt.Chart(pd.DataFrame({"x": [0.0]})).mark_rule(color="#999", strokeDash=[3, 3]).encode(x="x:Q")
    height = max(80, len(tasks) * (12 + 26 * len(whos)))
    return alt.layer(zero, bars, dots, values, missing).properties(
        width=360, height=height, autosize=NATURAL_SIZE, title="Human ceiling beside judge agreement (95% intervals)")


def confusion_heatmap(labels: Sequence[str], matrix: Sequence[Sequence[int]], *, title: str | None = None,
                      subtitle: str | None = None, cell: int = 110) -> LayeredChart:
    """A confusion matrix as a square grid: rows = human labels, columns = judge labels (``labels`` order).

    Each cell shows its count and, below it, the count's share of its row (``row``: of the units the
    humans gave that label) and of its column (``col``: of the units the judge gave that label).
    Shares of an empty row or column print as ``n/a``. Colour is the row share, so a good judge
    shows a dark diagonal whatever the class balance.

    Raises:
        ValueError: ``matrix`` is not ``len(labels)`` x ``len(labels)``.
    """
    labels = [str(label) for label in labels]
    if len(matrix) != len(labels) or any(len(row) != len(labels) for row in matrix):
        raise ValueError(f"confusion matrix: expected {len(labels)}x{len(labels)} for labels {labels}, got {matrix!r}")
    row_sums = [sum(int(v) for v in row) for row in matrix]
    col_sums = [sum(int(matrix[i][j]) for i in range(len(labels))) for j in range(len(labels))]

    def share(count: int, total: int) -> str:
        return "n/a" if total == 0 else f"{100 * count / total:.0f}%"

    rows = []
    for i in range(len(labels)):
        for j in range(len(labels)):
            count = int(matrix[i][j])
            rows.append({"human": labels[i], "judge": labels[j], "count": count,
                         "row_share": count / row_sums[i] if row_sums[i] else 0.0,
                         "shares": f"row {share(count, row_sums[i])} · col {share(count, col_sums[j])}"})
    frame = pd.DataFrame(rows, columns=["human", "judge", "count", "row_share", "shares"])
    base = alt.Chart(frame).encode(
        x=alt.X("judge:N", sort=labels, title="judge says",
                axis=alt.Axis(labelAngle=0, labelLimit=0, orient="top", labelFontSize=12, titleFontSize=12)),
        y=alt.Y("human:N", sort=labels, title="humans say (majority)",
                axis=alt.Axis(labelLimit=0, labelFontSize=12, titleFontSize=12)),
    )
    heat = base.mark_rect(stroke="white", strokeWidth=2).encode(
        color=alt.Color("row_share:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), legend=None),
        tooltip=["human:N", "judge:N", "count:Q", "shares:N"],
    )
    dark = alt.condition("datum.row_share > 0.55", alt.value("white"), alt.value("#111"))
    count_text = base.mark_text(fontSize=20, fontWeight="bold", dy=-9).encode(text="count:Q", color=dark)
    share_text = base.mark_text(fontSize=11, dy=13).encode(text="shares:N", color=dark)
    side = cell * len(labels)
    heading = alt.TitleParams(text=title or "Confusion", subtitle=subtitle or "", anchor="start",
                              fontSize=13, subtitleFontSize=11, limit=0, subtitleColor="#555")
    return alt.layer(heat, count_text, share_text).properties(width=side, height=side, title=heading,
                                                              autosize=NATURAL_SIZE)


# ---------------------------------------------------------------------------------------------
# Calibration


DEFAULT_CURVE_METRICS: tuple[str, ...] = ("kappa", "f1", "youden_j", "youden")


def threshold_curve(
    sweep_df: pd.DataFrame,
    chosen: float | None,
    *,
    metrics: Sequence[str] = DEFAULT_CURVE_METRICS,
    title: str | None = None,
    chosen_ci: Sequence[float | None] | None = None,
    width: int = 440,
    height: int = 260,
) -> LayeredChart:
    """Metrics vs threshold (kappa, F1, Youden's J, ...) with a rule at the chosen threshold.

    Args:
        sweep_df: one row per threshold; a ``threshold`` column plus any of ``CURVE_METRICS``
            (other columns are ignored; ``None``/``NaN`` values are dropped per metric).
        chosen: the selected threshold, or ``None`` (no rule drawn).
        metrics: which columns to draw (those present; default kappa, F1 and Youden's J).
        chosen_ci: ``[low, high]`` of the threshold re-chosen on bootstrap resamples; drawn as a
            shaded band when both ends are known.

    The "chosen" label sits inside the plot, to the side of the rule with more room, so it is never
    clipped at an edge.

    Raises:
        ValueError: ``sweep_df`` has no ``threshold`` column or none of ``metrics``.
    """
    if "threshold" not in sweep_df.columns:
        raise ValueError(f"threshold sweep: expected a 'threshold' column, got {list(sweep_df.columns)}")
    wanted = tuple(metrics)
    metrics = [m for m in wanted if m in sweep_df.columns]
    if not metrics:
        raise ValueError(f"threshold sweep: expected one of {wanted}, got {list(sweep_df.columns)}")
    long = (
        sweep_df[["threshold", *metrics]]
        .melt(id_vars="threshold", var_name="metric", value_name="value")
        .dropna(subset=["value"])
    )
    long["value"] = long["value"].astype(float)
    palette = {"kappa": "#1565c0", "f1": "#2e7d32", "youden_j": "#e65100", "youden": "#e65100",
               "accuracy": "#6a1b9a", "precision": "#00838f", "recall": "#ad1457"}
    color = alt.Color("metric:N", sort=metrics, title=None, legend=alt.Legend(orient="bottom", labelFontSize=12),
                      scale=alt.Scale(domain=metrics, range=[palette.get(m, "#555") for m in metrics]))
    lines = (
        alt.Chart(long)
        .mark_line()
        .encode(
            x=alt.X("threshold:Q", scale=alt.Scale(domain=[0, 1]), title="threshold on the judge's score"),
            y=alt.Y("value:Q", title="agreement with humans"),
            color=color,
            tooltip=["metric:N", alt.Tooltip("threshold:Q", format=".3f"), alt.Tooltip("value:Q", format=".3f")],
        )
    )
    layers: list[alt.Chart] = [lines]
    if chosen is not None:
        chosen = float(chosen)
        low, high = chosen_ci if chosen_ci and len(chosen_ci) == 2 else (None, None)
        if low is not None and high is not None:
            band = pd.DataFrame({"low": [float(low)], "high": [float(high)]})
            layers.insert(0, alt.Chart(band).mark_rect(color="#888", opacity=0.15).encode(x="low:Q", x2="high:Q"))
        rule_df = pd.DataFrame({"threshold": [chosen], "label": [f"chosen {chosen:.3f}"]})
        layers.append(alt.Chart(rule_df).mark_rule(color="black", strokeDash=[4, 4]).encode(x="threshold:Q"))
        right = chosen > 0.6  # label on the side with more room
        layers.append(
            alt.Chart(rule_df).mark_text(align="right" if right else "left", dx=-5 if right else 5, baseline="top",
                                         color="black", fontSize=12).encode(
                x="threshold:Q", y=alt.value(4), text="label:N"
            )
        )
        at_chosen = long.assign(gap=(long["threshold"] - chosen).abs())
        if len(at_chosen):
            at_chosen = at_chosen.loc[at_chosen.groupby("metric")["gap"].idxmin()]
            layers.append(
                alt.Chart(at_chosen).mark_point(filled=True, size=80).encode(
                    x="threshold:Q", y="value:Q", color=color
                )
            )
    return alt.layer(*layers).properties(width=width, height=height, title=title or "Threshold sweep",
                                         autosize=NATURAL_SIZE)


_PREDICTED = ("predicted", "mean_score", "mean_predicted", "score", "bin_mean")
_OBSERVED = ("observed", "observed_rate", "rate", "fraction_positive", "positive_rate")


def _pick(columns: Iterable[str], names: Sequence[str]) -> str | None:
    columns = list(columns)
    return next((n for n in names if n in columns), None)


def reliability_chart(df: pd.DataFrame, *, title: str | None = None, width: int = 300,
                      height: int = 240) -> LayeredChart:
    """Observed rate of the positive human label vs the judge's mean score per score bin.

    Args:
        df: one row per bin with a predicted column (``predicted`` / ``mean_score`` / ...), an
            observed column (``observed`` / ``observed_rate`` / ...), and optionally ``n``
            (point size). Bins with a missing observed rate are left out.

    A perfectly calibrated judge lies on the dashed diagonal.

    Raises:
        ValueError: the predicted or observed column cannot be found.
    """
    predicted, observed = _pick(df.columns, _PREDICTED), _pick(df.columns, _OBSERVED)
    if predicted is None or observed is None:
        raise ValueError(
            f"reliability table: expected a predicted column {_PREDICTED} and an observed column {_OBSERVED}, "
            f"got {list(df.columns)}"
        )
    frame = pd.DataFrame(
        {
            "predicted": pd.to_numeric(df[predicted], errors="coerce"),
            "observed": pd.to_numeric(df[observed], errors="coerce"),
            "n": pd.to_numeric(df["n"], errors="coerce") if "n" in df.columns else 1,
        }
    ).dropna(subset=["predicted", "observed"])
    diagonal = pd.DataFrame({"predicted": [0.0, 1.0], "observed": [0.0, 1.0]})
    axis = alt.Scale(domain=[0, 1])
    diag = alt.Chart(diagonal).mark_line(strokeDash=[4, 4], color="#888").encode(
        x=alt.X("predicted:Q", scale=axis), y=alt.Y("observed:Q", scale=axis)
    )
    line = alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("predicted:Q", scale=axis, title="mean judge score in bin"),
        y=alt.Y("observed:Q", scale=axis, title="share humans call positive"),
        tooltip=[alt.Tooltip("predicted:Q", format=".3f"), alt.Tooltip("observed:Q", format=".3f"), "n:Q"],
    )
    sized = alt.Chart(frame).mark_circle().encode(
        x="predicted:Q", y="observed:Q",
        size=alt.Size("n:Q", title="units in bin", legend=alt.Legend(orient="bottom", direction="horizontal")))
    return alt.layer(diag, line, sized).properties(width=width, height=height, title=title or "Reliability",
                                                   autosize=NATURAL_SIZE)


# ---------------------------------------------------------------------------------------------
# Escaped text


def _fmt(value: Any) -> str:
    return fixed(value, 2)
