"""CLI: ``score`` (an eval set end to end) and ``demo`` (the bundled calibration + scoring loop)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from workbench.cli.common import (
    annotator_options,
    annotators_for_store,
    announce_judge,
    echo_err,
    exit_if_endpoint_failed,
    judge_details,
    judge_options,
    load_items_or_exit,
)
from workbench.config import JudgeConfig, ThresholdsError, load_thresholds
from workbench.reports.console import format_summary
from workbench.types import ItemScore


@click.command()
@click.argument("evalset", type=click.Path(dir_okay=False))
@click.option("--corpus", type=click.Path(exists=True, dir_okay=False), help="JSONL corpus {id, text, source} for citation checks.")
@judge_options
@click.option("--thresholds", "thresholds_path", type=click.Path(dir_okay=False), help="thresholds.json from `workbench calibrate`.")
@click.option("--concurrency", type=click.IntRange(min=1), default=None, help="Fixed cap on judge calls in flight (default adaptive).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None, help="Output folder (default runs/<timestamp>/).")
@click.option("--no-cache", is_flag=True, help="Bypass the judge call cache.")
@click.option("--dry-run", is_flag=True, help="Print the expected number of judge calls and stop.")
@click.option("--batch", is_flag=True, help="Use the OpenAI Batch API (openai judge only; resumable, see docs/batch.md).")
@click.option("--batch-dry-run", is_flag=True, help="Write the first batch stage's files, print requests and tokens per stage; submit nothing.")
@click.option("--k", "k", type=click.IntRange(min=1), default=5, show_default=True, help="Retrieval cutoff.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Seconds one judge call may take before it is retried (a timeout also halves the calls in flight).")
@click.option("--max-failed", type=click.FloatRange(0.0, 1.0), default=0.05, show_default=True,
              help="Largest share of items a judge failure may leave unscored; above it the run exits 4 "
                   "(after writing everything).")
@click.option("--price-in", type=click.FloatRange(min=0), default=None, help="Price per million prompt tokens (cost estimate).")
@click.option("--price-out", type=click.FloatRange(min=0), default=None, help="Price per million completion tokens.")
@click.option("--json", "as_json", is_flag=True, help="Print summary.json instead of the table.")
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None,
              help="Label store for corrected rates (default: WORKBENCH_DB or labels/workbench.db if it exists).")
@annotator_options
@click.option("--metrics", "metrics_text", default="all", show_default=True,
              help="Comma-separated metrics to compute (faithfulness, answer_relevance, abstention, citations, "
                   "context_precision, context_recall, correctness, retrieval); the others make no calls and are null.")
def score(evalset, corpus, backend, model, embedding_model, embedder_backend, thresholds_path, concurrency, out_dir,
          no_cache, dry_run, batch, k, as_json, db_path, batch_dry_run=False, timeout=60.0, max_failed=0.05,
          price_in=None, price_out=None, annotators=(), exclude_annotators=(), metrics_text="all"):
    """Score an eval set end to end: retrieval, faithfulness, relevance, abstention, citations, quadrant.

    Writes items.jsonl and summary.json into --out. With a label store (--db, or the default
    store when it exists) summary.json also gets `corrected`: the judge's pass, abstention and
    false-refusal rates corrected for its errors measured on human labels (Rogan-Gladen, PPI).

    Exit codes: 0 done; 2 bad input; 3 the endpoint refused the first call (401/403/404, or
    nothing listening), nothing written; 4 more than --max-failed of the items carry a judge
    failure (everything is written first). See docs/local-models.md for local servers.

    Example: workbench score data/demo_rag.jsonl --corpus data/demo_corpus.jsonl --out runs/demo_rag
    """
    from workbench.judges.base import JudgeError
    from workbench.judges.factory import build_judge
    from workbench.scoring.dataset import DatasetError, load_corpus
    from workbench.scoring.pipeline import (
        ScoreOptions,
        default_run_dir,
        items_in_flight_for,
        parse_metrics,
        run_scoring,
    )

    try:
        metrics = parse_metrics(metrics_text)
    except ValueError as exc:
        echo_err(f"error: --metrics: {exc}")
        sys.exit(2)
    items = load_items_or_exit(evalset)
    if db_path is None:
        from workbench.config import default_db_path

        db_path = default_db_path() if default_db_path().is_file() else None
    elif not Path(db_path).is_file():
        echo_err(f"error: --db {db_path}: no such label store (create it with `workbench labels add`)")
        sys.exit(2)
    chosen = annotators_for_store(db_path, annotators, exclude_annotators)
    try:
        corpus_map = load_corpus(corpus) if corpus else None
    except DatasetError as exc:
        echo_err(f"error: {exc}")
        sys.exit(2)
    if dry_run:
        from workbench.scoring.estimate import estimate_run

        resolved = JudgeConfig.from_env(backend=backend).backend
        remote = embedder_backend == "openai" or (embedder_backend == "auto" and resolved == "openai")
        estimate = estimate_run(items, price_in=price_in, price_out=price_out, remote_embeddings=remote,
                                corpus=corpus_map, metrics=metrics)
        click.echo(json.dumps(estimate, indent=2) if as_json else
                   "\n".join(f"{k_:<32} {v}" for k_, v in estimate.items()))
        return
    try:
        thresholds = load_thresholds(thresholds_path)
    except ThresholdsError as exc:
        echo_err(f"error: {exc}")
        sys.exit(2)
    config = JudgeConfig.from_env(backend=backend, model=model, embedding_model=embedding_model,
                                  concurrency=concurrency, use_cache=not no_cache, timeout=timeout)
    if batch or batch_dry_run:
        from workbench.cli.batch import score_with_batch

        result = score_with_batch(items, config, evalset=evalset, thresholds=thresholds, k=k, corpus=corpus_map,
                                  out_dir=out_dir, dry_run=batch_dry_run, as_json=as_json, metrics=metrics)
        if result is None:
            return
        records, summary, fingerprint, out = result
        _finish(out, records, summary, items=items, thresholds=thresholds, fingerprint=fingerprint,
                db_path=db_path, as_json=as_json, annotators=chosen, max_failed=max_failed)
        return
    try:
        judge, embedder = (build_judge(config) if embedder_backend == "auto"
                           else build_judge(config, embedder=embedder_backend))
    except (ValueError, RuntimeError) as exc:
        echo_err(f"error: {exc}")
        sys.exit(2)
    announce_judge(judge, embedder, thresholds)
    options = ScoreOptions(thresholds=thresholds, k=k, corpus=corpus_map,
                           items_in_flight=items_in_flight_for(concurrency), metrics=metrics)
    try:
        records, summary = run_scoring(items, judge, embedder, options)
    except JudgeError:
        exit_if_endpoint_failed(judge)
        raise
    judge_details(summary["judge"], judge, price_in=price_in, price_out=price_out)
    _finish(Path(out_dir) if out_dir else default_run_dir(), records, summary, items=items, thresholds=thresholds,
            fingerprint=judge.fingerprint, db_path=db_path, as_json=as_json, max_failed=max_failed,
            annotators=chosen)


def _finish(out: Path, records: list[ItemScore], summary: dict, *, items, thresholds, fingerprint: str, db_path, as_json: bool,
            max_failed: float = 0.05, annotators=None) -> None:
    """The end shared by interactive and batch runs: corrected rates, outputs, the table, the exit code."""
    from workbench.calibration.placeholders import no_signal_warnings
    from workbench.failures import EXIT_TOO_MANY_FAILED, failure_summary
    from workbench.scoring.pipeline import write_outputs

    if db_path is not None:
        summary["corrected"] = _corrected_or_none(db_path, records, items, thresholds, fingerprint, annotators)
    warnings, checks = no_signal_warnings(summary, db_path, fingerprint)
    if checks is not None:
        summary["calibration_check"] = checks
    summary["failures"] = failure_summary(records, max_failed=max_failed)
    if summary.get("citations"):
        summary["citations"]["unknown"] = summary["failures"]["citation_checks_unknown"]
    write_outputs(out, records, summary)
    click.echo(json.dumps(summary, indent=2) if as_json else format_summary(summary))
    for line in warnings:
        echo_err(line)
    echo_err(f"wrote {out / 'items.jsonl'} and {out / 'summary.json'}")
    if summary["failures"]["too_many"]:
        f = summary["failures"]
        echo_err(f"error: {f['items_failed']} of {f['items']} items carry a judge failure ({100 * f['rate']:.1f}% > "
                 f"--max-failed {100 * max_failed:.1f}%); exit code {EXIT_TOO_MANY_FAILED}")
        sys.exit(EXIT_TOO_MANY_FAILED)


def _corrected_or_none(db_path, records: list[ItemScore], items, thresholds, fingerprint, annotators=None):
    """Corrected rates from the label store at ``db_path`` (``workbench.calibration.corrections``)."""
    import sqlite3

    import numpy as np

    from workbench.calibration.corrections import corrected_from_db
    from workbench.store import StoreError

    echo_err(f"corrected rates: human labels from {db_path}")
    try:
        return corrected_from_db(db_path, records, thresholds=thresholds, fingerprint=fingerprint, items=items,
                                 rng=np.random.default_rng(0), annotators=annotators)
    except (StoreError, sqlite3.DatabaseError) as exc:
        echo_err(f"warning: {db_path}: cannot read the label store ({exc}); no corrected rates")
        return None


COMMANDS = [score]
