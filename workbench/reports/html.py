"""One self-contained HTML calibration report (``workbench report RUN_DIR --out report.html``).

Readable offline and shareable by mail: inline CSS, charts drawn as inline SVG here (no
JavaScript, no CDN, no external URL of any kind). Tables reuse the DataFrame builders of
``workbench.reports.charts``. Every piece of text that comes from an eval set, a label or a judge
(item ids, claims, annotator names, fingerprints) goes through ``html.escape``; numbers are
formatted here.

``build_report`` is pure (dicts and DataFrames in, a string out); ``write_report`` is the I/O
edge that reads the run folder and, optionally, the label store.
"""
from __future__ import annotations

import html
import math
import numbers
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.calibration.corrections import RATE_LABELS
from workbench.formatting import NA, bracketed, num, percent
from workbench.metrics.quadrant import SHARE_CELLS
from workbench.reports.charts import QUADRANT_COLORS, human_table, judges_table, read_run, summary_table

SERIES_COLORS = ("#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00")

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem auto;max-width:980px;
color:#212121;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{border-bottom:2px solid #e0e0e0;padding-bottom:.2rem;margin-top:2.2rem}
h3{margin-bottom:.3rem}table{border-collapse:collapse;margin:.6rem 0 1rem;font-size:.92rem;display:block;
overflow-x:auto;max-width:100%}
th,td{border:1px solid #ddd;padding:.25rem .55rem;text-align:left;vertical-align:top}
th{background:#f5f5f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
.note{color:#5d4037;background:#fff8e1;border-left:4px solid #ffb300;padding:.3rem .6rem;margin:.3rem 0;
font-size:.9rem}.muted{color:#757575;font-size:.9rem}figure{margin:.5rem 0 1.2rem}
figcaption{font-size:.85rem;color:#616161}code{background:#f5f5f5;padding:0 .2rem;word-break:break-all}
svg text{font-family:system-ui,Helvetica,Arial,sans-serif}
"""


def esc(value: Any) -> str:
    """Escaped text of any value (``None`` -> ``n/a``)."""
    return NA if value is None else html.escape(str(value), quote=True)


def _num(x: Any, digits: int = 3) -> str:
    """A number through ``formatting.num`` (infinite -> ``n/a``); anything else escaped text."""
    if isinstance(x, float) and not math.isfinite(x):
        return NA
    if x is None or isinstance(x, bool | numbers.Integral | float | np.floating):
        return num(x, digits)
    return esc(x)


def _pct(x: Any) -> str:
    return percent(x)


def _ci(pair: Sequence[Any] | None, fmt=_pct) -> str:
    return bracketed(pair, fmt)


def html_table(frame: pd.DataFrame, *, digits: int = 3) -> str:
    """A DataFrame as an HTML table; every cell escaped, numbers right-aligned."""
    head = "".join(f"<th>{esc(c)}</th>" for c in frame.columns)
    rows = []
    for row in frame.itertuples(index=False):
        cells = []
        for v in row:
            if isinstance(v, float | int | np.floating | np.integer) and not isinstance(v, bool):
                cells.append(f'<td class="num">{_num(None if pd.isna(v) else v, digits)}</td>')
            else:
                cells.append(f"<td>{esc(None if v is None or (isinstance(v, float) and pd.isna(v)) else v)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


# ---------------------------------------------------------------------------------------------
# inline SVG charts


def svg_bar_chart(labels: Sequence[str], values: Sequence[float | None], *,
                  intervals: Sequence[Sequence[float | None] | None] | None = None,
                  colors: Sequence[str] | None = None, title: str = "", y_max: float = 1.0,
                  width: int = 640, height: int = 260, percent: bool = True,
                  group_labels: Sequence[str] = (), group_size: int = 1) -> str:
    """Vertical bars (``None`` = no bar, labelled n/a) with optional interval whiskers, as SVG.

    With ``group_labels``, consecutive runs of ``group_size`` bars get one caption under them.
    """
    left, right, top, bottom = 48, 12, 28, 56
    pw, ph = width - left - right, height - top - bottom
    n = max(1, len(labels))
    slot = pw / n
    bar_w = slot * 0.6
    y = lambda v: top + ph * (1 - max(0.0, min(float(v), y_max)) / y_max)  # noqa: E731
    parts = [f'<svg class="chart" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}"><title>{esc(title)}</title>',
             f'<text x="{left}" y="16" font-size="13" font-weight="600">{esc(title)}</text>']
    for k in range(5):
        v = y_max * k / 4
        parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>'
                     f'<text x="{left - 6}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end">'
                     f'{f"{100 * v:.0f}%" if percent else f"{v:.2f}"}</text>')
    for i, (label, value) in enumerate(zip(labels, values)):
        cx = left + slot * (i + 0.5)
        color = (colors[i] if colors and i < len(colors) else SERIES_COLORS[0])
        if value is None:
            parts.append(f'<text x="{cx:.1f}" y="{top + ph - 4}" font-size="11" text-anchor="middle">n/a</text>')
        else:
            parts.append(f'<rect class="bar" x="{cx - bar_w / 2:.1f}" y="{y(value):.1f}" width="{bar_w:.1f}" '
                         f'height="{top + ph - y(value):.1f}" fill="{esc(color)}"/>'
                         f'<text x="{cx:.1f}" y="{y(value) - 4:.1f}" font-size="10" text-anchor="middle">'
                         f'{_pct(value) if percent else _num(value)}</text>')
        ci = intervals[i] if intervals and i < len(intervals) else None
        if ci and ci[0] is not None and ci[1] is not None:
            lo, hi = y(ci[0]), y(ci[1])
            parts.append(f'<g class="whisker" stroke="#212121" stroke-width="1.5"><line x1="{cx:.1f}" x2="{cx:.1f}" '
                         f'y1="{lo:.1f}" y2="{hi:.1f}"/><line x1="{cx - 6:.1f}" x2="{cx + 6:.1f}" y1="{lo:.1f}" '
                         f'y2="{lo:.1f}"/><line x1="{cx - 6:.1f}" x2="{cx + 6:.1f}" y1="{hi:.1f}" y2="{hi:.1f}"/></g>')
        parts.append(f'<text x="{cx:.1f}" y="{top + ph + 16}" font-size="10.5" text-anchor="middle">{esc(label)}</text>')
    for g, name in enumerate(group_labels):
        gx = left + slot * group_size * (g + 0.5)
        parts.append(f'<text x="{gx:.1f}" y="{top + ph + 34}" font-size="11.5" font-weight="600" '
                     f'text-anchor="middle">{esc(name)}</text>')
        if g:
            parts.append(f'<line x1="{left + slot * group_size * g:.1f}" x2="{left + slot * group_size * g:.1f}" '
                         f'y1="{top}" y2="{top + ph + 36}" stroke="#e0e0e0"/>')
    parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" stroke="#616161"/></svg>')
    return "".join(parts)


def svg_line_chart(series: Mapping[str, Sequence[tuple[float, float | None]]], *, title: str = "",
                   x_label: str = "", y_label: str = "", vline: float | None = None, diagonal: bool = False,
                   x_range: tuple[float, float] = (0.0, 1.0), y_range: tuple[float, float] | None = None,
                   points: bool = False, width: int = 640, height: int = 300) -> str:
    """Lines (or lines with dots) for several named series of ``(x, y)`` points, as SVG.

    ``None``/NaN y values break a line. ``vline`` marks a chosen x (dashed); ``diagonal`` draws
    y = x (perfect calibration). ``y_range`` defaults to the data's range widened to include 0 and 1.
    """
    left, right, top, bottom = 52, 130, 28, 44
    pw, ph = width - left - right, height - top - bottom
    ys = [p[1] for pts in series.values() for p in pts if p[1] is not None and math.isfinite(p[1])]
    if y_range is None:
        y_range = (min([0.0, *ys]), max([1.0, *ys]))
    (x0, x1), (y0, y1) = x_range, y_range
    if x1 <= x0:
        x1 = x0 + 1.0
    if y1 <= y0:
        y1 = y0 + 1.0
    sx = lambda v: left + pw * (float(v) - x0) / (x1 - x0)  # noqa: E731
    sy = lambda v: top + ph * (1 - (float(v) - y0) / (y1 - y0))  # noqa: E731
    parts = [f'<svg class="chart" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}"><title>{esc(title)}</title>',
             f'<text x="{left}" y="16" font-size="13" font-weight="600">{esc(title)}</text>']
    for k in range(5):
        yv, xv = y0 + (y1 - y0) * k / 4, x0 + (x1 - x0) * k / 4
        parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{sy(yv):.1f}" y2="{sy(yv):.1f}" stroke="#eee"/>'
                     f'<text x="{left - 6}" y="{sy(yv) + 4:.1f}" font-size="10" text-anchor="end">{yv:.2f}</text>'
                     f'<text x="{sx(xv):.1f}" y="{top + ph + 14}" font-size="10" text-anchor="middle">{xv:.2f}</text>')
    parts.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#9e9e9e"/>')
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{height - 6}" font-size="11" text-anchor="middle">{esc(x_label)}</text>'
                 f'<text x="12" y="{top + ph / 2:.1f}" font-size="11" text-anchor="middle" '
                 f'transform="rotate(-90 12 {top + ph / 2:.1f})">{esc(y_label)}</text>')
    if diagonal:
        lo, hi = max(x0, y0), min(x1, y1)
        parts.append(f'<line x1="{sx(lo):.1f}" y1="{sy(lo):.1f}" x2="{sx(hi):.1f}" y2="{sy(hi):.1f}" '
                     f'stroke="#9e9e9e" stroke-dasharray="4 3"/>')
    if vline is not None and x0 <= vline <= x1:
        parts.append(f'<line class="chosen" x1="{sx(vline):.1f}" x2="{sx(vline):.1f}" y1="{top}" y2="{top + ph}" '
                     f'stroke="#212121" stroke-dasharray="5 3"/><text x="{sx(vline) + 4:.1f}" y="{top + 12}" '
                     f'font-size="10">chosen {vline:.2f}</text>')
    for k, (name, pts) in enumerate(series.items()):
        color = SERIES_COLORS[k % len(SERIES_COLORS)]
        segments: list[list[str]] = [[]]
        for xv, yv in pts:
            if yv is None or not math.isfinite(float(yv)):
                segments.append([])
                continue
            segments[-1].append(f"{sx(xv):.1f},{sy(yv):.1f}")
            if points:
                parts.append(f'<circle cx="{sx(xv):.1f}" cy="{sy(yv):.1f}" r="3.5" fill="{color}"/>')
        for seg in segments:
            if len(seg) >= 2:
                parts.append(f'<polyline class="series" points="{" ".join(seg)}" fill="none" stroke="{color}" '
                             f'stroke-width="2"/>')
        ly = top + 14 + 16 * k
        parts.append(f'<line x1="{left + pw + 10}" x2="{left + pw + 26}" y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" '
                     f'stroke-width="2"/><text x="{left + pw + 30}" y="{ly}" font-size="10.5">{esc(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# sections


def _notes(notes: Sequence[str]) -> str:
    return "".join(f'<p class="note">{esc(n)}</p>' for n in notes if n)


def quadrant_section(summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]], *, examples: int = 3) -> str:
    """Quadrant counts with share intervals (table + bar chart) and a few example items per cell."""
    quad = summary.get("quadrant") or {}
    ci = summary.get("quadrant_ci") or {}
    n = summary.get("n_items") or 0
    rows = []
    for cell, count in quad.items():
        share = count / n if n else None
        rows.append(f"<tr><td>{esc(cell)}</td><td class=\"num\">{count}</td><td class=\"num\">{_pct(share)}</td>"
                    f"<td class=\"num\">{_ci(ci.get(cell)) if cell in ci else '&mdash;'}</td></tr>")
    table = ("<table><thead><tr><th>cell</th><th>items</th><th>share of items</th><th>95% CI (bootstrap)</th>"
             f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    chart = svg_bar_chart(list(SHARE_CELLS), [quad.get(c, 0) / n if n else None for c in SHARE_CELLS],
                          intervals=[ci.get(c) for c in SHARE_CELLS],
                          colors=[QUADRANT_COLORS[c] for c in SHARE_CELLS], title="Quadrant shares with 95% intervals")
    ex_rows = []
    for cell in SHARE_CELLS:
        picked = [r for r in records if r.get("quadrant") == cell][:examples]
        for r in picked:
            claims = r.get("claims") or []
            bad = next((c for c in claims if not c.get("supported")), claims[0] if claims else None)
            ex_rows.append(f"<tr><td>{esc(cell)}</td><td><code>{esc(r.get('id'))}</code></td>"
                           f"<td class=\"num\">{_num(r.get('faithfulness'))}</td>"
                           f"<td class=\"num\">{_num(r.get('answer_relevance'))}</td>"
                           f"<td>{esc(bad.get('text')) if bad else ''}</td></tr>")
    examples_html = ("<h3>Example items per cell</h3><table><thead><tr><th>cell</th><th>item</th><th>faithfulness</th>"
                     "<th>relevance</th><th>first unsupported claim (else first claim)</th></tr></thead>"
                     f"<tbody>{''.join(ex_rows)}</tbody></table>") if ex_rows else ""
    return (f"<h2>Quadrant (faithfulness &times; relevance)</h2>{table}<figure>{chart}<figcaption>Share of all "
            f"{n} items per cell; whiskers are bootstrap 95% intervals (items resampled).</figcaption></figure>"
            f"{examples_html}")


def _bounded(block: Mapping[str, Any], key: str) -> str:
    """A corrected rate (always in [0, 1]); when the formula gave a value outside, that value is
    shown beside it, and an unstable Rogan-Gladen correction is marked."""
    text = _pct(block.get(key))
    raw = block.get(f"{key}_unclipped")
    if raw is not None and block.get(key) is not None and abs(float(raw) - float(block[key])) > 1e-12:
        text += f' <span class="muted">(formula {_pct(raw)}, clipped)</span>'
    if key == "rogan_gladen" and block.get("unstable"):
        text += ' <span class="muted">(unstable)</span>'
    return text


def corrected_section(corrected: Mapping[str, Any] | None) -> str:
    """The corrected-rates table and chart, or a note when the run has none."""
    if not corrected:
        return ("<h2>Corrected rates</h2><p class=\"note\">No corrected rates: the run was scored without a label "
                "store (<code>workbench score ... --db DB</code>).</p>")
    rows, labels, values, intervals, colors, notes, groups = [], [], [], [], [], [], []
    for key, block in corrected.items():
        if not isinstance(block, Mapping):
            continue
        name = RATE_LABELS.get(key, key)
        groups.append(name)
        rows.append(
            f"<tr><td>{esc(name)}</td><td class=\"num\">{_pct(block.get('raw'))}</td>"
            f"<td class=\"num\">{_bounded(block, 'rogan_gladen')}</td><td class=\"num\">{_ci(block.get('rogan_gladen_ci'))}</td>"
            f"<td class=\"num\">{_bounded(block, 'ppi')}</td><td class=\"num\">{_ci(block.get('ppi_ci'))}</td>"
            f"<td class=\"num\">{_num(block.get('sensitivity'), 2)}</td><td class=\"num\">{_num(block.get('specificity'), 2)}</td>"
            f"<td class=\"num\">{_num(block.get('n_labelled'))}</td></tr>")
        for method, value, ci, color in (("raw", block.get("raw"), None, "#9e9e9e"),
                                         ("RG", block.get("rogan_gladen"), block.get("rogan_gladen_ci"), "#1565c0"),
                                         ("PPI", block.get("ppi"), block.get("ppi_ci"), "#6a1b9a")):
            labels.append(method)
            values.append(value)
            intervals.append(ci)
            colors.append(color)
        if block.get("note"):
            notes.append(f"{name}: {block['note']}")
    table = ("<table><thead><tr><th>rate</th><th>raw judge</th><th>Rogan-Gladen</th><th>95% CI</th><th>PPI</th>"
             "<th>95% CI</th><th>sensitivity</th><th>specificity</th><th>n labelled</th></tr></thead>"
             f"<tbody>{''.join(rows)}</tbody></table>")
    chart = svg_bar_chart(labels, values, intervals=intervals, colors=colors, width=860, height=280,
                          title="Raw judge rate vs corrected rates (95% intervals)", group_labels=groups,
                          group_size=3)
    return (f"<h2>Corrected rates</h2><p class=\"muted\">The judge's raw rate corrected for its own errors, "
            f"measured against human labels: Rogan-Gladen (interval resamples both the labelled and the scored "
            f"set) and prediction-powered inference (needs labelled items of this run). Rates are kept in "
            f"[0, 100%]: when a formula gives a value outside, it is shown beside the clipped rate.</p>{table}"
            f"{_notes(notes)}<figure>{chart}</figure>")


def _pairs_text(human: Mapping[str, Any]) -> str:
    """The annotator pairs' kappa summarised (mean, min, max over the pairs sharing enough units)."""
    summ = human.get("pairwise_summary") or {}
    if summ.get("pairs_read"):
        return (f"mean {_num(summ.get('mean'))} (min {_num(summ.get('min'))}, max {_num(summ.get('max'))}) "
                f"over {summ['pairs_read']} of {summ['pairs']} pairs sharing >= {summ['min_overlap']} units")
    if summ.get("pairs"):
        return f"no pair shares {summ.get('min_overlap')} units ({summ['pairs']} pairs)"
    return ""


def _human_frame(agreement: Mapping[str, Any]) -> pd.DataFrame:
    """``workbench.reports.charts.human_table``, readable at any number of annotators: annotator
    pairs are summarised (:func:`_pairs_text`), not listed, long annotator lists are cut after 8
    names, and the small-sample mark is added."""
    frame = human_table(agreement).copy()
    blocks = [block for block in agreement.values() if isinstance(block, Mapping) and block]
    names = [[str(a) for a in block.get("annotators") or []] for block in blocks]
    humans = [block.get("human") or {} for block in blocks]
    frame["annotators"] = [", ".join(n) if len(n) <= 8 else f"{len(n)} ({', '.join(n[:8])}, ...)" for n in names]
    frame["pairwise_kappa"] = [_pairs_text(human) for human in humans]
    frame["too_small"] = ["too small to read" if human.get("too_small") and len(n) >= 2 else ""
                          for human, n in zip(humans, names)]
    return frame


def _judges_frame(agreement: Mapping[str, Any]) -> pd.DataFrame:
    """``workbench.reports.charts.judges_table`` plus the AUC of the judge's score and the small-sample mark."""
    frame = judges_table(agreement)
    extra = [(j.get("auc"), "too small to read" if j.get("too_small") else "")
             for block in agreement.values() if isinstance(block, Mapping) and block
             for j in (block.get("judges") or {}).values()]
    if len(extra) == len(frame):
        frame = frame.copy()
        frame["auc"] = [a for a, _ in extra]
        frame["too_small"] = [t for _, t in extra]
    return frame


def _small_notes(agreement: Mapping[str, Any]) -> list[str]:
    notes = []
    for task, block in agreement.items():
        if not isinstance(block, Mapping) or not block:
            continue
        human = block.get("human") or {}
        if human.get("too_small") and len(block.get("annotators") or []) >= 2:
            notes.append(f"{task}, humans: too small to read: {human.get('too_small_reason')}")
        for judge, j in (block.get("judges") or {}).items():
            if j.get("too_small"):
                notes.append(f"{task}, {judge}: too small to read: {j.get('too_small_reason')}")
    return notes


def agreement_section(agreement: Mapping[str, Any], *, annotators: Sequence[str] | None = None,
                      excluded: Sequence[str] = ()) -> str:
    """Human ceiling and judge-vs-human tables plus the confusion matrices.

    ``annotators``/``excluded`` (names) say whose labels were counted when a choice was made.
    Rows too small to read (``too_small``) are marked in the tables and explained in notes.
    """
    parts = ["<h2>Agreement with people</h2>"]
    if annotators is not None:
        parts.append(f"<p class=\"muted\">Annotators counted: {esc(', '.join(annotators) or 'none')}"
                     + (f"; left out: {esc(', '.join(excluded))}" if excluded else "") + ".</p>")
    if any(isinstance(b, Mapping) and b.get("clustered_by") for b in agreement.values()):
        parts.append("<p class=\"muted\">Claim-level intervals resample answers, keeping each answer's claims "
                     "together (claims of one answer are not independent).</p>")
    parts += ["<h3>Human-human agreement (the ceiling)</h3>", html_table(_human_frame(agreement)),
              "<h3>Judges against the human majority</h3>", html_table(_judges_frame(agreement)),
              _notes(_small_notes(agreement))]
    for task, block in agreement.items():
        if not isinstance(block, Mapping):
            continue
        for judge, j in (block.get("judges") or {}).items():
            conf = j.get("confusion") or {}
            labels, matrix = conf.get("labels") or [], conf.get("matrix") or []
            if not labels or not matrix:
                continue
            head = "".join(f"<th>judge: {esc(label)}</th>" for label in labels)
            body = "".join(f"<tr><th>human: {esc(label)}</th>"
                           + "".join(f'<td class="num">{_num(v)}</td>' for v in row) + "</tr>"
                           for label, row in zip(labels, matrix))
            parts.append(f"<h3>Confusion: {esc(task)} &mdash; <code>{esc(judge)}</code></h3>"
                         f"<table><thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>")
    return "".join(parts)


def curves_section(curves: Mapping[str, Mapping[str, Any]]) -> str:
    """Threshold curves (kappa, F1, Youden's J against the threshold) and reliability plots."""
    if not curves:
        return ("<h2>Threshold curves and reliability</h2><p class=\"note\">Not enough units with both a human "
                "majority label and a judge score to draw curves.</p>")
    parts = ["<h2>Threshold curves and reliability</h2>"]
    for key, c in curves.items():
        sweep: pd.DataFrame = c["sweep"]
        series = {m: [(float(t), None if pd.isna(v) else float(v)) for t, v in zip(sweep["threshold"], sweep[m])]
                  for m in ("kappa", "f1", "youden_j") if m in sweep.columns}
        thresholds = [float(t) for t in sweep["threshold"]] or [0.0, 1.0]
        parts.append(f"<h3>{esc(key)} <span class=\"muted\">(task {esc(c.get('task'))}, judge "
                     f"<code>{esc(c.get('judge'))}</code>)</span></h3>")
        parts.append("<figure>" + svg_line_chart(series, title=f"{key}: agreement vs threshold", x_label="threshold",
                                                 y_label="value", vline=c.get("chosen"),
                                                 x_range=(min(0.0, *thresholds), max(1.0, *thresholds)))
                     + "<figcaption>Kappa, F1 and Youden's J of the judge at each threshold against the human "
                       "majority; dashed line: the chosen threshold.</figcaption></figure>")
        rel: pd.DataFrame = c["reliability"]
        pts = [(float(x), float(y)) for x, y in zip(rel["mean_score"], rel["observed_rate"])
               if not (pd.isna(x) or pd.isna(y))]
        parts.append("<figure>" + svg_line_chart({"observed": pts}, title=f"{key}: reliability", points=True,
                                                 x_label="mean judge score in bin",
                                                 y_label="share humans say positive", diagonal=True,
                                                 y_range=(0.0, 1.0))
                     + "<figcaption>Each dot is a score bin; the dashed diagonal is perfect calibration."
                       "</figcaption></figure>")
    return "".join(parts)


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    """``summary_table`` values are text; show non-integer numbers with 3 decimals."""
    def fmt(v):
        try:
            x = float(v)
        except (TypeError, ValueError):
            return v
        return v if x.is_integer() or not math.isfinite(x) else f"{x:.3f}"

    out = frame.copy()
    out["value"] = [fmt(v) for v in out["value"]]
    return out


def build_report(summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]], *, title: str = "Calibration report",
                 agreement: Mapping[str, Any] | None = None, curves: Mapping[str, Mapping[str, Any]] | None = None,
                 notes: Sequence[str] = (), annotators: Sequence[str] | None = None,
                 excluded_annotators: Sequence[str] = ()) -> str:
    """The whole report as one HTML string (no external resources, all untrusted text escaped).

    Args:
        summary: ``summary.json`` of the run (with ``quadrant_ci`` and ``corrected`` when present).
        records: the run's ``items.jsonl`` records (for per-cell examples).
        title: page title (escaped).
        agreement: ``agreement_report(db, ...)`` payload, or ``None`` to leave the section out.
        curves: ``calibration_curves(db, ...)`` payload, or ``None``.
        notes: extra notes shown at the top (escaped).
        annotators: names whose labels were counted, when a choice was made (shown with the
            agreement section); ``excluded_annotators`` the names left out.
    """
    judge = summary.get("judge") or {}
    th = summary.get("thresholds") or {}
    claim = th.get("claim_support")
    head = (f"<h1>{esc(title)}</h1><p class=\"muted\">judge <code>{esc(judge.get('fingerprint'))}</code> &middot; "
            f"{_num(summary.get('n_items'))} items &middot; thresholds faithfulness {_num(th.get('faithfulness'), 2)}, "
            f"relevance {_num(th.get('answer_relevance'), 2)}, claim support "
            f"{_num(claim, 2) if claim is not None else 'the judge&#x27;s own verdict'} ({esc(th.get('source'))})</p>")
    body = [head, _notes(notes), "<h2>Run summary</h2>", html_table(_rounded(summary_table(summary))),
            quadrant_section(summary, records), corrected_section(summary.get("corrected"))]
    if agreement is not None:
        body.append(agreement_section(agreement, annotators=annotators, excluded=excluded_annotators))
    if curves is not None:
        body.append(curves_section(curves))
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{esc(title)}</title>"
            f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>")


def write_report(run_dir: str | Path, out: str | Path, *, db_path: str | Path | None = None,
                 rng: np.random.Generator, n_boot: int = 1000, annotators: Collection[str] | None = None) -> Path:
    """I/O edge: read a run folder (and the label store, if given) and write the HTML report.

    With ``db_path`` the agreement tables, threshold curves and reliability plots come from
    ``workbench.calibration.agreement`` for the run's judge fingerprint when the store has
    judgments by it (else the fingerprint with the most judgments, and a note says so). Only
    the labels of ``annotators`` count when given, and the report names them.

    Raises:
        workbench.reports.charts.RunError: the run folder cannot be read.
    """
    summary, records = read_run(run_dir)
    agreement = curves = None
    notes: list[str] = []
    chosen = excluded = None
    if db_path is not None:
        from workbench import store
        from workbench.calibration.agreement import agreement_report, calibration_curves, store_annotators

        db = store.open_db(db_path)
        try:
            if annotators is not None:
                known = store_annotators(db)
                chosen = [a for a in known if a in annotators]
                excluded = [a for a in known if a not in annotators]
            agreement = agreement_report(db, rng=rng, n_boot=n_boot, annotators=annotators)
            fp = (summary.get("judge") or {}).get("fingerprint")
            known = store.judge_fingerprints(db)
            if fp not in known:
                notes.append(f"the store has no judgments by this run's judge ({fp}); curves use "
                             "the judge with the most judgments")
                fp = None
            curves = calibration_curves(db, judge=fp, annotators=annotators)
        finally:
            db.conn.close()
    text = build_report(summary, records, title=f"Calibration report: {Path(run_dir).name}", agreement=agreement,
                        curves=curves, notes=notes, annotators=chosen, excluded_annotators=excluded or ())
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out
