"""CLI: ``judge``, ``agreement`` and ``calibrate`` (judges against people, thresholds from their agreement).

Each command parses its options, calls one function of ``workbench.calibration.judging`` or
``workbench.calibration.agreement``, and prints. Exit codes: 0 success, 1 a gate bound failed or
nothing could be calibrated, 2 bad input (a missing or malformed file, an impossible option).
"""
from __future__ import annotations

import json
import sys

import click

from workbench.cli.common import DB_HELP, annotator_options, chosen_annotators, echo_err, open_existing_store
from workbench.config import JudgeConfig, save_thresholds
from workbench.reports.console import format_agreement, format_calibration, format_judge_summary
from workbench.tasks import TASK_NAMES

# ------------------------------------------------------------------------------------------
# judge


@click.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None, help=DB_HELP)
@click.option("--judge", "backend", type=click.Choice(["offline", "openai"]), default=None,
              help="Judge backend (env WORKBENCH_JUDGE, default offline).")
@click.option("--model", default=None, help="Judge model (env WORKBENCH_MODEL).")
@click.option("--embedding-model", default=None, help="Embedding model (env WORKBENCH_EMBEDDING_MODEL).")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True,
              help="Ask each unit K times (repeat 0..K-1) and report test-retest kappa.")
@click.option("--verify-mode", type=click.Choice(["per-claim", "batched"]), default="per-claim", show_default=True,
              help="One call per claim, or all claims of an answer in one call (experiment).")
@click.option("--task", "tasks", multiple=True,
              type=click.Choice(TASK_NAMES),
              help="Only these tasks (repeatable; default all).")
@click.option("--concurrency", type=click.IntRange(min=1), default=None, help="Fixed cap on judge calls in flight.")
@click.option("--no-cache", is_flag=True, help="Bypass the judge call cache.")
@click.option("--embedder", "embedder_backend", type=click.Choice(["auto", "offline", "openai"]), default="auto",
              show_default=True, help="Embeddings for answer relevance (offline: the bundled ones).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Seconds one judge call may take before it is retried.")
@click.option("--max-failed", type=click.FloatRange(0.0, 1.0), default=0.05, show_default=True,
              help="Largest share of units that may end with an error; above it the command exits 4 (after storing).")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
def judge(db_path, backend, model, embedding_model, repeats, verify_mode, tasks, concurrency, no_cache, as_json,
          embedder_backend="auto", timeout=60.0, max_failed=0.05):
    """Run a judge over every unit in the label store and keep its verdicts.

    Stores one judgment per unit and repeat with the judge fingerprint and its continuous score;
    units this judge already answered are skipped, so an interrupted run resumes. Exit codes:
    3 the endpoint refused the first call (nothing stored), 4 more than --max-failed of the
    units got an error (after storing every judgment).

    Example: workbench judge --db labels/workbench.db --judge offline --repeats 2
    """
    from workbench.calibration.judging import BatchedModeUnsupported, run_judges
    from workbench.judges import factory
    from workbench.judges.base import embedder_fingerprint

    db = open_existing_store(db_path)
    config = JudgeConfig.from_env(backend=backend, model=model, embedding_model=embedding_model,
                                  concurrency=concurrency, use_cache=not no_cache, verify_mode=verify_mode,
                                  timeout=timeout)
    try:
        judge_, embedder = (factory.build_judge(config) if embedder_backend == "auto"
                            else factory.build_judge(config, embedder=embedder_backend))
    except (ValueError, RuntimeError, ImportError) as exc:
        echo_err(f"error: cannot build the {config.backend} judge: {exc}")
        sys.exit(2)
    echo_err(f"judge: {judge_.fingerprint}  (embedder: {embedder_fingerprint(embedder, '?')})")
    try:
        summary = run_judges(db, config, repeats=repeats, verify_mode=verify_mode, tasks=list(tasks) or None,
                             judge=judge_, embedder=embedder, max_failed=max_failed)
    except BatchedModeUnsupported as exc:
        echo_err(f"error: {exc}")
        sys.exit(2)
    from workbench.cli.common import exit_if_endpoint_failed
    from workbench.failures import EXIT_TOO_MANY_FAILED

    exit_if_endpoint_failed(judge_, outcome="no unit was judged; their failed judgments are asked again next run")
    click.echo(json.dumps(summary, indent=2) if as_json else format_judge_summary(summary))
    failures = summary.get("failures") or {}
    if failures.get("too_many"):
        echo_err(f"error: {failures['units_failed']} of {failures['units']} units got an error "
             f"({100 * failures['rate']:.1f}% > --max-failed {100 * max_failed:.1f}%); exit code {EXIT_TOO_MANY_FAILED}")
        sys.exit(EXIT_TOO_MANY_FAILED)


# ------------------------------------------------------------------------------------------
# agreement


@click.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None, help=DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the agreement JSON (DESIGN.md contract).")
@click.option("--n-boot", type=click.IntRange(min=1), default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap generator.")
@annotator_options
@click.option("--all-pairs", is_flag=True, help="List the kappa of every annotator pair (default: a summary).")
def agreement(db_path, as_json, n_boot, seed, annotators, exclude_annotators, all_pairs):
    """Agreement per task: human-vs-human ceiling and each judge against the human majority.

    Kappa with a bootstrap CI (claim-level tasks resample answers, keeping each answer's claims
    together), Gwet's AC1, accuracy, the AUC of the judge's score, confusion matrix and the
    judge's quote-hallucination rate; units whose majority label is tied are left out and
    counted. Rows over fewer than 30 units, or 5 of the rarer class, are marked too small to read.

    Example: workbench agreement --db labels/workbench.db --exclude-annotators annie1 --json
    """
    import numpy as np

    from workbench.calibration.agreement import agreement_report, intra_answer_error_correlation

    db = open_existing_store(db_path)
    chosen = chosen_annotators(db, annotators, exclude_annotators)
    report = agreement_report(db, rng=np.random.default_rng(seed), n_boot=n_boot, annotators=chosen)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    icc = {fp: intra_answer_error_correlation(db, judge=fp, annotators=chosen)
           for fp in (report.get("claim_support") or {}).get("judges", {})}
    click.echo(format_agreement(report, error_icc=icc, all_pairs=all_pairs))


# ------------------------------------------------------------------------------------------
# calibrate


@click.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None, help=DB_HELP)
@click.option("--judge", "fingerprint", default=None,
              help="Judge fingerprint to calibrate (default: the one with the most judgments).")
@click.option("--criterion", type=click.Choice(["kappa", "youden", "f1"]), default="kappa", show_default=True)
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default="thresholds.json", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the thresholds JSON instead of the table.")
@click.option("--n-boot", type=click.IntRange(min=1), default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap generator.")
@annotator_options
def calibrate(db_path, fingerprint, criterion, out_path, as_json, n_boot, seed, annotators, exclude_annotators):
    """Tune thresholds on human labels and write thresholds.json for `workbench score --thresholds`.

    For faithfulness, answer relevance and claim support, sweeps the judge's score against the
    human majority label and keeps the threshold that maximises the criterion, with kappa and its
    bootstrap CI (claim support resamples answers). Only the chosen annotators' labels count;
    thresholds.json records who they were. A score without enough labelled data is left out,
    with the reason. Exits 1 (writing nothing) when no score could be calibrated.

    Example: workbench calibrate --db labels/workbench.db --criterion kappa --out thresholds.json
    """
    import numpy as np

    from workbench import store
    from workbench.calibration.agreement import CALIBRATED, calibration_report

    db = open_existing_store(db_path)
    if fingerprint is not None and fingerprint not in store.judge_fingerprints(db):
        known = ", ".join(store.judge_fingerprints(db)) or "none"
        echo_err(f"error: --judge {fingerprint!r}: no judgments with this fingerprint in the store (known: {known})")
        sys.exit(2)
    chosen = chosen_annotators(db, annotators, exclude_annotators)
    payload = calibration_report(db, judge=fingerprint, criterion=criterion, rng=np.random.default_rng(seed),
                                 n_boot=n_boot, annotators=chosen)
    if payload.get("judge") is None:
        echo_err(f"error: {payload['notes'].get('judge', 'no judgments in the store')}")
        sys.exit(2)
    click.echo(json.dumps(payload, indent=2) if as_json else format_calibration(payload))
    if not any(key in payload for key in CALIBRATED):
        echo_err("nothing calibrated (see the notes above); no thresholds file written")
        sys.exit(1)
    path = save_thresholds(payload, out_path)
    echo_err(f"wrote {path}")


# ------------------------------------------------------------------------------------------
# gate


COMMANDS: list = [judge, agreement, calibrate]
