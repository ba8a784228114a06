"""Tables for people: plain-language column names, rounded numbers with intervals, one-line meanings.

The app's Agreement, Calibration and Scores pages show these (no streamlit import here). The raw
tables in ``workbench.reports.charts`` (``human_table``, ``judges_table``, ...) keep field names and
floats for the HTML report and for code. Every cell here is text, already rounded by
``workbench.formatting``; ``None`` prints as ``n/a`` with a reason when one is known (a
single-rater alpha is ``n/a (one rater)``).
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.formatting import NA, interval, num, pct, pct_with_interval, value_text, wilson_interval
from workbench.types import QUADRANT_CELLS, QUADRANTS

GLOSSARY_ANCHOR = "labels/guidelines.md#glossary"

# One line per statistic, shown beside the tables and as column help.
STAT_HELP: dict[str, str] = {
    "alpha": "Krippendorff's alpha: agreement among the human annotators beyond chance "
             "(1 = perfect, 0 = chance, below 0 = worse than chance). It is the ceiling a judge can reach.",
    "kappa": "Cohen's kappa: how often the judge matches the human majority, corrected for the matches "
             "chance alone would give (1 = perfect, 0 = chance).",
    "ac1": "Gwet's AC1: like kappa, but stays stable when one label is much more common than the other.",
    "alpha_with_humans": "Alpha with the judge counted as one more annotator: does adding the judge lower "
                         "the humans' agreement?",
    "accuracy": "Share of units where the judge's label equals the human majority (not corrected for chance).",
    "quote_hallucination": "Share of the judge's 'supported' verdicts whose quote is not found in the passages.",
    "auc": "AUC: chance that the judge scores a human-positive unit above a human-negative one "
           "(0.5 = no better than a coin).",
    "interval": "95% interval from the bootstrap: the range the value would plausibly take on another "
                "sample of the same size.",
}

QUADRANT_MEANING: dict[str, str] = {cell.name: cell.meaning for cell in QUADRANT_CELLS}


def markdown_section(text: str | None, heading: str) -> str | None:
    """The body of the ``## <heading>`` section of a Markdown text (to the next ``## ``), or ``None``.

    The heading is matched case-insensitively; the heading line itself is left out.
    """
    if not text:
        return None
    match = re.search(rf"^##\s+{re.escape(heading)}\s*$", text, flags=re.IGNORECASE | re.MULTILINE)
    if not match:
        return None
    rest = text[match.end():]
    end = re.search(r"^##\s", rest, flags=re.MULTILINE)
    return (rest[: end.start()] if end else rest).strip()


def _sample_note(entry: Mapping[str, Any]) -> str:
    """The "sample too small" reason of an ``agreement --json`` row (issue-14 fields), else ``""``."""
    if entry.get("too_small"):
        return str(entry.get("too_small_reason") or "sample too small")
    return ""


def human_summary(report: Mapping[str, Any]) -> pd.DataFrame:
    """Human-human agreement per task, for people.

    Columns: ``Task, Units, Labelled units, Annotators, Human agreement (alpha), alpha 95% interval,
    Pairwise kappa, Sample note``. Alpha is ``n/a (one rater)`` when fewer than two people labelled
    the task, ``n/a`` when otherwise undefined (e.g. everyone used one label).
    """
    rows = []
    for task, block in report.items():
        if not isinstance(block, Mapping) or not block:
            continue
        human = block.get("human") or {}
        annotators = list(block.get("annotators") or [])
        alpha_text = _alpha_text(human.get("alpha"), annotators)
        pairs = human.get("pairwise_kappa") or {}
        rows.append({
            "Task": task,
            "Units": value_text(block.get("units")),
            "Labelled units": value_text(block.get("labelled_units")),
            "Annotators": ", ".join(map(str, annotators)) or "none",
            "Human agreement (alpha)": alpha_text,
            "alpha 95% interval": interval(human.get("alpha_ci")) or "—",
            "Pairwise kappa": _pairwise_text(pairs, human.get("pairwise_summary")),
            "Sample note": _sample_note(human) or _sample_note(block),
        })
    return pd.DataFrame(rows, columns=["Task", "Units", "Labelled units", "Annotators", "Human agreement (alpha)",
                                       "alpha 95% interval", "Pairwise kappa", "Sample note"])


def _alpha_text(alpha: float | None, annotators: Sequence[Any]) -> str:
    """Human alpha for a cell: the number, ``n/a (one rater)`` below two annotators, else ``n/a``."""
    if alpha is not None:
        return num(alpha)
    return "n/a (one rater)" if len(annotators) < 2 else NA


def _pairwise_text(pairs: Mapping[str, Any], summary: Mapping[str, Any] | None, *, max_listed: int = 3) -> str:
    """Annotator-pair kappas: each pair when there are at most ``max_listed``, else the summary
    (mean, min, max over the pairs sharing enough units), so 40 raters do not fill a page."""
    if len(pairs) <= max_listed or not summary:
        return ", ".join(f"{k.replace('|', ' & ')}: {num(v)}" for k, v in pairs.items()) or "—"
    if summary.get("mean") is None:
        return f"{len(pairs)} pairs, none sharing {summary.get('min_overlap')}+ units"
    return (f"mean {num(summary['mean'])} (min {num(summary['min'])}, max {num(summary['max'])}) over "
            f"{summary['pairs_read']} of {summary['pairs']} pairs sharing {summary['min_overlap']}+ units")


def judge_summary(report: Mapping[str, Any]) -> pd.DataFrame:
    """Each judge against the human majority, one row per (task, judge), beside the human ceiling.

    Columns: ``Task, Judge, Units compared, Kappa vs humans, kappa 95% interval, AC1, Alpha with
    humans, Accuracy, Quote hallucination, Human ceiling (alpha), AUC, Sample note``. ``AUC`` (and its
    p-value) and ``Sample note`` come from the optional ``auc``/``auc_p``/``too_small`` fields.
    """
    rows = []
    for task, block in report.items():
        if not isinstance(block, Mapping) or not block:
            continue
        human = block.get("human") or {}
        ceiling_text = _alpha_text(human.get("alpha"), block.get("annotators") or [])
        for judge, j in (block.get("judges") or {}).items():
            auc = j.get("auc")
            auc_p = j.get("auc_p", j.get("auc_p_value"))
            auc_text = NA if auc is None else (num(auc) + (f" (p {auc_p:.2g})" if auc_p is not None else ""))
            rows.append({
                "Task": task,
                "Judge": judge,
                "Units compared": value_text(j.get("n")),
                "Kappa vs humans": num(j.get("kappa")),
                "kappa 95% interval": interval(j.get("kappa_ci")) or "—",
                "AC1": num(j.get("ac1")),
                "Alpha with humans": num(j.get("alpha_with_humans")),
                "Accuracy": pct(j.get("accuracy")),
                "Quote hallucination": pct(j.get("quote_hallucination_rate")),
                "Human ceiling (alpha)": ceiling_text,
                "AUC": auc_text,
                "Sample note": _sample_note(j),
            })
    return pd.DataFrame(rows, columns=["Task", "Judge", "Units compared", "Kappa vs humans", "kappa 95% interval",
                                       "AC1", "Alpha with humans", "Accuracy", "Quote hallucination",
                                       "Human ceiling (alpha)", "AUC", "Sample note"])


def rate_interval(block: Mapping[str, Any] | None, rate_key: str = "pass_rate") -> tuple[float, float] | None:
    """The 95% interval of a rate in a ``summary.json`` block.

    Uses ``<rate_key>_ci`` when the block carries one; else the Wilson interval from ``n`` and the
    rate (successes = round(rate * n)); ``None`` when the rate or ``n`` is missing or ``n`` is 0.
    """
    if not block:
        return None
    given = block.get(f"{rate_key}_ci")
    if given and len(given) == 2 and None not in given:
        return float(given[0]), float(given[1])
    rate, n = block.get(rate_key), block.get("n")
    if rate is None or not n:
        return None
    return wilson_interval(round(float(rate) * int(n)), int(n))


def quadrant_summary(summary: Mapping[str, Any], items_df: pd.DataFrame | None = None) -> pd.DataFrame:
    """Quadrant cells with counts and shares with 95% intervals, in ``QUADRANTS`` order.

    Counts come from ``summary["quadrant"]`` (else from ``items_df``); intervals from
    ``summary["quadrant_ci"]`` where present, else Wilson intervals over all items.
    Columns: ``Quadrant, Meaning, Items, Share [95% CI]``.
    """
    counts = dict(summary.get("quadrant") or {})
    if not counts and items_df is not None and len(items_df):
        counts = items_df["quadrant"].value_counts().to_dict()
    total = sum(int(v) for v in counts.values())
    given = summary.get("quadrant_ci") or {}
    rows = []
    for cell in list(QUADRANTS) + sorted(k for k in counts if k not in QUADRANTS):
        count = int(counts.get(cell, 0))
        share = count / total if total else None
        ci = given.get(cell) or (wilson_interval(count, total) if total else None)
        rows.append({"Quadrant": cell, "Meaning": QUADRANT_MEANING.get(cell, ""), "Items": count,
                     "Share [95% CI]": pct_with_interval(share, ci)})
    return pd.DataFrame(rows, columns=["Quadrant", "Meaning", "Items", "Share [95% CI]"])


def summary_rows(table: pd.DataFrame) -> pd.DataFrame:
    """``report.summary_table`` output with every value rounded for reading (floats to 3 decimals)."""
    out = table.copy()
    out["value"] = out["value"].map(value_text)
    return out


def threshold_rows(payload: Mapping[str, Any], keys: tuple[str, ...], *, status: Mapping[str, str]) -> pd.DataFrame:
    """The thresholds a calibration payload holds, one row per score, for the "write" summary.

    Columns: ``Score, Threshold, Threshold 95% interval, Kappa at threshold, Units, Status``;
    ``status[key]`` says whether the row will be written.
    """
    rows = []
    for key in keys:
        entry = payload.get(key)
        if not isinstance(entry, Mapping):
            continue
        rows.append({
            "Score": key,
            "Threshold": num(entry.get("threshold"), 3),
            "Threshold 95% interval": interval(entry.get("threshold_ci"), 3) or "—",
            "Kappa at threshold": num(entry.get("kappa")) + (f" {interval(entry.get('kappa_ci'))}"
                                                               if interval(entry.get("kappa_ci")) else ""),
            "Units": value_text(entry.get("n")),
            "Status": status.get(key, ""),
        })
    return pd.DataFrame(rows, columns=["Score", "Threshold", "Threshold 95% interval", "Kappa at threshold",
                                       "Units", "Status"])
