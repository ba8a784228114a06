"""CLI: ``workbench gate``, a CI gate: exit 1 when a run's ``summary.json`` misses a bound.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import click

from workbench.cli.common import echo_err
from workbench.config import ThresholdsError, load_thresholds

#: option name -> (summary block, field, "min" | "max", readable name)
GATE_BOUNDS = {
    "min_faithfulness": ("faithfulness", "mean", "min", "faithfulness mean"),
    "min_relevance": ("answer_relevance", "mean", "min", "answer relevance mean"),
    "min_faithfulness_pass": ("faithfulness", "pass_rate", "min", "faithfulness pass rate"),
    "min_relevance_pass": ("answer_relevance", "pass_rate", "min", "answer relevance pass rate"),
    "max_false_refusal": ("abstention", "false_refusal_rate", "max", "false refusal rate"),
    "min_abstention": ("abstention", "abstention_rate", "min", "abstention rate on unanswerable items"),
}


class GateFileError(ValueError):
    """A summary.json the gate cannot read."""


def _read_summary(path: str) -> dict:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GateFileError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GateFileError(f"{path}: cannot read ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GateFileError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or "n_items" not in data:
        raise GateFileError(f"{path}: expected a summary.json object (from `workbench score`) with an n_items field")
    return data


def _field(summary: dict, path: str, block: str, field: str) -> float | None:
    """The value of ``block.field``; ``None`` when the metric was not scored (block or value null)."""
    if block not in summary:
        raise GateFileError(f"{path}: field {block}: missing (expected an object or null)")
    entry = summary[block]
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise GateFileError(f"{path}: field {block}: expected an object or null, got {type(entry).__name__}")
    if field not in entry:
        raise GateFileError(f"{path}: field {block}.{field}: missing")
    value = entry[field]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise GateFileError(f"{path}: field {block}.{field}: expected a number or null, got {value!r}")
    return float(value)


def check_gate(summary: dict, bounds: dict[str, float], *, path: str = "summary.json",
               thresholds=None) -> tuple[list[str], list[str]]:
    """Compare a ``summary.json`` with bounds; returns ``(failed, passed)`` readable lines.

    ``bounds`` maps ``GATE_BOUNDS`` keys to numbers. A ``min`` bound fails when the value is
    below it, a ``max`` bound when above it. A bounded metric that is ``null`` (nothing scored)
    fails: a gate never passes on missing evidence. With ``thresholds`` (a ``Thresholds``), pass
    rates are only comparable when the run used the same pass thresholds: if the summary's
    thresholds differ and a pass-rate bound is set, that is a failure too.

    Raises:
        GateFileError: a bounded field is missing or not a number.
    """
    failed: list[str] = []
    passed: list[str] = []
    for key, bound in bounds.items():
        block, field, kind, name = GATE_BOUNDS[key]
        value = _field(summary, path, block, field)
        if value is None:
            failed.append(f"{name}: not scored (null in {path}), bound {kind} {bound:g}")
            continue
        ok = value >= bound if kind == "min" else value <= bound
        line = f"{name}: {value:.4f} {'>=' if kind == 'min' else '<='} {bound:g}"
        if ok:
            passed.append(line)
        else:
            failed.append(f"{name}: {value:.4f} is {'below' if kind == 'min' else 'above'} the bound {bound:g}")
    if thresholds is not None:
        used = summary.get("thresholds") or {}
        pass_bounds = [k for k in bounds if k.endswith("_pass")]
        for key, want in (("faithfulness", thresholds.faithfulness), ("answer_relevance", thresholds.answer_relevance)):
            got = used.get(key)
            if isinstance(got, (int, float)) and abs(float(got) - want) > 1e-9 and pass_bounds:
                failed.append(f"{key} pass threshold: the run used {got:g} but {thresholds.source} says {want:g}; "
                              f"re-score with --thresholds {thresholds.source} before gating on pass rates")
    return failed, passed


@click.command()
@click.argument("summary_json", type=click.Path(dir_okay=False))
@click.option("--thresholds", "thresholds_path", type=click.Path(dir_okay=False), default=None,
              help="thresholds.json: its faithfulness/relevance thresholds become the minimum means "
                   "(unless --min-faithfulness/--min-relevance are given).")
@click.option("--min-faithfulness", type=click.FloatRange(0, 1), default=None, help="Minimum mean faithfulness.")
@click.option("--min-relevance", type=click.FloatRange(0, 1), default=None, help="Minimum mean answer relevance.")
@click.option("--min-faithfulness-pass", type=click.FloatRange(0, 1), default=None, help="Minimum faithfulness pass rate.")
@click.option("--min-relevance-pass", type=click.FloatRange(0, 1), default=None, help="Minimum relevance pass rate.")
@click.option("--max-false-refusal", type=click.FloatRange(0, 1), default=None, help="Maximum false-refusal rate.")
@click.option("--min-abstention", type=click.FloatRange(0, 1), default=None,
              help="Minimum abstention rate on unanswerable items.")
def gate(summary_json, thresholds_path, **bounds):
    """Fail a CI pipeline when a scored run is below its bounds (exit 1), else exit 0.

    Reads the summary.json of `workbench score`. Every bounded metric must be scored: a null
    metric fails. With --thresholds F the tuned faithfulness and relevance thresholds are used
    as minimum mean scores (explicit --min-faithfulness/--min-relevance win), and pass-rate
    bounds fail if the run was scored with other thresholds than F's. No pass-rate bound is
    implied by --thresholds. Exit 2 on an unreadable file or when no bound is given.

    Example: workbench gate runs/demo/rag/summary.json --min-faithfulness 0.6 --max-false-refusal 0.2
    """
    chosen = {k: v for k, v in bounds.items() if v is not None}
    thresholds = None
    if thresholds_path is not None:
        try:
            thresholds = load_thresholds(thresholds_path)
        except ThresholdsError as exc:
            echo_err(f"error: {exc}")
            sys.exit(2)
        chosen.setdefault("min_faithfulness", thresholds.faithfulness)
        chosen.setdefault("min_relevance", thresholds.answer_relevance)
    if not chosen:
        echo_err("error: no bounds given: pass at least one --min-*/--max-* option or --thresholds F")
        sys.exit(2)
    try:
        summary = _read_summary(summary_json)
        failed, passed = check_gate(summary, chosen, path=summary_json, thresholds=thresholds)
    except GateFileError as exc:
        echo_err(f"error: {exc}")
        sys.exit(2)
    for line in passed:
        click.echo(f"ok    {line}")
    for line in failed:
        click.echo(f"FAIL  {line}")
    if failed:
        click.echo(f"gate failed: {len(failed)} of {len(failed) + len(passed)} bound(s) not met")
        sys.exit(1)
    click.echo(f"gate passed: {len(passed)} bound(s) met")


COMMANDS = [gate]
