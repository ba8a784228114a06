"""The ``--batch`` / ``--batch-dry-run`` branch of ``workbench score`` (kept out of cli_score.py).

Environment: ``WORKBENCH_BATCH_POLL_SECONDS`` (seconds between status polls, default 30) and
``WORKBENCH_BATCH_MAX_ROUNDS`` (submissions per request including retries, default 3).
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from workbench.cli.common import announce_judge, echo_err
from workbench.config import JudgeConfig
from workbench.types import EvalItem, Passage, Thresholds


def _env_number(name: str, default: float, cast: type[float] | type[int] = float) -> Any:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = cast(raw)
    except ValueError:
        echo_err(f"error: {name}={raw!r}: expected a number")
        sys.exit(2)
    if value <= 0:
        echo_err(f"error: {name}={raw!r}: expected a positive number")
        sys.exit(2)
    return value


def batch_options_from_env():
    from workbench.batch.runner import BatchOptions

    return BatchOptions(poll_interval=_env_number("WORKBENCH_BATCH_POLL_SECONDS", 30.0),
                        max_rounds=_env_number("WORKBENCH_BATCH_MAX_ROUNDS", 3, int))


def score_with_batch(items: Sequence[EvalItem], config: JudgeConfig, *, evalset: str, thresholds: Thresholds, k: int,
                     corpus: Mapping[str, Passage] | None, out_dir: str | None, dry_run: bool, as_json: bool,
                     metrics: Sequence[str] | None = None):
    """Run ``score --batch`` (or ``--batch-dry-run``); exits 2 on a usage or state error.

    Returns ``None`` after a dry run, else ``(records, summary, judge fingerprint, out dir)``.
    """
    from workbench.batch.runner import (
        BatchError,
        batch_dry_run,
        build_batch_judges,
        default_batch_dir,
        format_dry_run,
        run_batch_scoring,
    )
    from workbench.scoring.pipeline import ScoreOptions

    if config.backend != "openai":
        echo_err("error: --batch needs --judge openai")
        sys.exit(2)
    if not config.use_cache:
        echo_err("error: --batch keeps batch results in the judge cache; drop --no-cache")
        sys.exit(2)
    try:
        judge, embedder = build_batch_judges(config)
    except (ValueError, RuntimeError) as exc:
        echo_err(f"error: {exc}")
        sys.exit(2)
    announce_judge(judge, embedder, thresholds, via=f", via the Batch API at {judge.host}")
    out = Path(out_dir) if out_dir else default_batch_dir(evalset, judge.fingerprint)
    options = ScoreOptions(thresholds=thresholds, k=k, corpus=corpus, items_in_flight=256)
    if metrics is not None:
        options = replace(options, metrics=tuple(metrics))
    bopts = batch_options_from_env()
    if dry_run:
        stages = batch_dry_run(items, judge, embedder, options, out, bopts)
        click.echo(json.dumps(stages, indent=2) if as_json else format_dry_run(stages))
        return None
    echo_err(f"batch run directory: {out} (re-run the same command to resume)")
    try:
        records, summary = run_batch_scoring(items, judge, embedder, options, out, bopts, echo=echo_err)
    except BatchError as exc:
        echo_err(f"error: {exc}")
        sys.exit(2)
    except KeyboardInterrupt:
        echo_err(f"interrupted; submitted batches keep running. Re-run the same command (--out {out}) to resume.")
        sys.exit(130)
    return records, summary, judge.fingerprint, out
