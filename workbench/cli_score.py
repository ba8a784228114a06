"""CLI: ``score`` (an eval set end to end) and ``demo`` (the bundled calibration + scoring loop)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from workbench.cli_stats import annotator_options, annotators_for_store
from workbench.config import JudgeConfig, ThresholdsError, load_thresholds


def judge_options(func):
    """The judge flags shared by every command that runs a judge."""
    func = click.option("--embedder", "embedder_backend", type=click.Choice(["auto", "offline", "openai"]),
                        default="auto", show_default=True,
                        help="Embeddings for answer relevance: the judge's backend (auto), the bundled offline "
                             "embeddings (for an endpoint without /v1/embeddings), or the endpoint's.")(func)
    func = click.option("--embedding-model", default=None, help="Embedding model (env WORKBENCH_EMBEDDING_MODEL).")(func)
    func = click.option("--model", default=None, help="Judge model (env WORKBENCH_MODEL).")(func)
    func = click.option("--judge", "backend", type=click.Choice(["offline", "openai"]), default=None,
                        help="Judge backend (env WORKBENCH_JUDGE, default offline).")(func)
    return func


def echo_err(message: str) -> None:
    click.echo(message, err=True)


def format_summary(summary: dict) -> str:
    """A readable table of a ``summary.json``."""
    def pct(x):
        return "n/a" if x is None else f"{100 * x:5.1f}%"

    def num(x):
        return "n/a" if x is None else f"{x:.3f}"

    th = summary["thresholds"]
    fails = summary.get("failures") or {}
    by_metric = fails.get("by_metric") or {}

    def unknown(metric: str, text: str, *, n_scored: int | None = None) -> str:
        """``text`` with how many items a failed judge call left this metric unknown."""
        k = by_metric.get(metric, 0)
        if not k:
            return text
        if not n_scored:
            return f"unknown (judge failed on {k} items)"
        return f"{text}; unknown for {k} items (judge failed)"

    lines = []
    if fails.get("items_failed"):
        over = " -- above --max-failed {:.1f}%, exit code 4".format(100 * fails["max_failed"]) if fails["too_many"] else ""
        lines.append(f"UNSCORED             {fails['items_failed']} of {summary['n_items']} items carry a judge failure "
                     f"({pct(fails['rate']).strip()}){over}; see 'errors' in items.jsonl")
    lines += [f"items scored         {summary['n_items'] - fails.get('items_failed', 0)} of {summary['n_items']} fully",
             f"judge                {summary['judge']['fingerprint']}",
             f"thresholds           faithfulness {th['faithfulness']:.2f}, relevance {th['answer_relevance']:.2f}, "
             f"claim support {_claim_threshold(th)} ({th['source']})",
             ""]
    skipped = set(summary.get("metrics_skipped") or ())
    for key, label in (("faithfulness", "faithfulness"), ("answer_relevance", "answer relevance")):
        block = summary.get(key)
        lines.append(f"{label:<20} " + ("skipped (--metrics)" if key in skipped else
                                          unknown(key, "not scored" if not block else
                                                  f"mean {num(block['mean'])}  pass {pct(block['pass_rate'])}  (n={block['n']})",
                                                  n_scored=block["n"] if block else 0)))
    ret = summary.get("retrieval")
    lines.append("retrieval            " + ("skipped (--metrics)" if "retrieval" in skipped else
                                          "not scored (no gold_context_ids)" if not ret else
                                          f"recall@{ret['k']} {num(ret['recall_at_k'])}  precision@{ret['k']} "
                                          f"{num(ret['precision_at_k'])}  MRR {num(ret['mrr'])}  (n={ret['n']})"))
    cp = summary.get("context_precision")
    if cp:
        idb = cp.get("id_based") or {}
        lines.append(f"context precision    judged {num(cp['mean'])} (n={cp['n']})"
                     + (f"  id-based {num(idb.get('mean'))} (n={idb.get('n')}), judge vs gold kappa "
                        f"{num(cp.get('judge_vs_gold_kappa'))}" if idb else ""))
    cr = summary.get("context_recall")
    if cr:
        lines.append(f"context recall       {num(cr['mean'])}  (n={cr['n']}, reference statements found in passages)")
    co = summary.get("correctness")
    if co:
        lines.append(f"correctness (e2e)    P {num(co['precision'])}  R {num(co['recall'])}  F1 {num(co['f1'])}  (n={co['n']})")
    ab = summary["abstention"]
    if ab is None:
        lines.append("abstention           skipped (--metrics)")
    else:
        lines.append("abstention           " + unknown("abstention",
                     f"{pct(ab['abstention_rate'])} of {ab['unanswerable']} unanswerable  |  "
                     f"false refusals {pct(ab['false_refusal_rate'])} of {ab['answerable']} answerable",
                     n_scored=(ab.get("unanswerable") or 0) + (ab.get("answerable") or 0)))
    cit = summary.get("citations")
    cites_unknown = fails.get("citation_checks_unknown", 0)
    if "citations" in skipped:
        cit_text = "skipped (--metrics)"
    elif cit and cites_unknown and cites_unknown == cit["n"]:
        cit_text = f"{cit['n']} cited: support unknown for all (judge failed)"
    elif cit:
        cit_text = (f"{cit['n']} cited: {cit['missing_from_corpus']} not in corpus, {cit['not_retrieved']} not "
                    f"retrieved, {cit['unsupported']} unsupported"
                    + (f", {cites_unknown} unknown (judge failed)" if cites_unknown else ""))
    else:
        cit_text = unknown("citations", "none in answers")
    lines.append("citations            " + cit_text)
    q = summary["quotes"]
    lines.append(f"judge quotes         {q['n']} given, {q['hallucinated']} not found in passages ({pct(q['rate'])})")
    lines.append("")
    lines.extend(format_quadrant(summary))
    if skipped:
        lines.append(f"skipped metrics      {', '.join(summary['metrics_skipped'])} (not computed, null in the outputs)")
    if summary.get("corrected"):
        lines.append("")
        lines.extend(format_corrected(summary["corrected"]))
    if summary.get("diagnosis"):
        lines.append("")
        lines.append("diagnosis            " + ", ".join(f"{k.replace('_', ' ')} {v}"
                                                      for k, v in summary["diagnosis"].items() if v))
    j = summary["judge"]
    lines.append("")
    lines.append(f"judge calls {j['calls']}, cache hits {j['cache_hits']}, failures {j['failures']}, "
                 f"tokens {j['prompt_tokens']} prompt / {j['completion_tokens']} completion; "
                 f"items with errors {summary.get('errors', {}).get('items_with_errors', 0)}")
    extra = [f"{name} {j[key]}" for key, name in (("timeouts", "timeouts"), ("truncated", "cut off at max_tokens"),
                                                  ("response_format", "JSON requested as"))
             if j.get(key) not in (None, 0)]
    if j.get("cost") is not None:
        extra.append(f"cost {j['cost']:.4f}")
    if extra:
        lines.append(", ".join(extra))
    return "\n".join(lines)


def _claim_threshold(th: dict) -> str:
    """The claim-support threshold of a summary's ``thresholds`` block, readable."""
    value = th.get("claim_support")
    return "the judge's own verdict" if value is None else f"{value:.2f}"


QUADRANT_ROUTES = {
    "pass": ("faithful and relevant", ""),
    "faithful_irrelevant": ("grounded but off the question", "retrieval backlog"),
    "relevant_unfaithful": ("on topic but not grounded", "generation backlog"),
    "fail": ("neither", "both backlogs"),
    "abstained": ("the answer refused", "see abstention"),
    "unscored": ("a score is missing", "see errors"),
}


def format_quadrant(summary: dict) -> list[str]:
    """The quadrant as a table: count, share with its bootstrap interval, and where the work goes."""
    quad, n = summary["quadrant"], summary["n_items"]
    ci = summary.get("quadrant_ci") or {}
    th = summary["thresholds"]
    lines = [f"quadrant (faithfulness >= {th['faithfulness']:.2f} x relevance >= {th['answer_relevance']:.2f})",
             f"  {'cell':<21}{'items':>6}  {'share [95% CI]':<22}{'meaning':<31}routes to"]
    for cell, (meaning, route) in QUADRANT_ROUTES.items():
        share = f"{100 * quad[cell] / n:.1f}%" if n else "n/a"
        if cell in ci and ci[cell][0] is not None:
            share += f" [{100 * ci[cell][0]:.1f}, {100 * ci[cell][1]:.1f}]"
        lines.append(f"  {cell:<21}{quad[cell]:>6}  {share:<22}{meaning:<31}{route}")
    return lines




def format_corrected(corrected: dict) -> list[str]:
    """Table lines for the ``corrected`` block: raw judge rate, Rogan-Gladen and PPI with CIs."""
    from workbench.corrected import RATE_LABELS

    def pct(x):
        return "n/a" if x is None else f"{100 * x:.1f}%"

    def ci(pair):
        return "" if not pair or pair[0] is None else f" [{pct(pair[0])}, {pct(pair[1])}]"

    lines = ["corrected rates (judge errors measured against human labels; 95% CI)",
             f"  {'rate':<19} {'raw judge':<10} {'Rogan-Gladen':<26} {'PPI':<26} sens / spec (n labelled)"]
    notes = []
    for key, block in corrected.items():
        if not isinstance(block, dict):
            continue
        label = RATE_LABELS.get(key, key)
        rg = pct(block.get("rogan_gladen")) + ci(block.get("rogan_gladen_ci"))
        ppi = pct(block.get("ppi")) + ci(block.get("ppi_ci"))
        sens, spec = block.get("sensitivity"), block.get("specificity")
        ss = f"{'n/a' if sens is None else f'{sens:.2f}'} / {'n/a' if spec is None else f'{spec:.2f}'}"
        lines.append(f"  {label:<19} {pct(block.get('raw')):<10} {rg:<26} {ppi:<26} {ss} "
                     f"(n={block.get('n_labelled', 0)})")
        if block.get("note"):
            notes.append(f"  {label}: {block['note']}")
    return lines + notes


def announce_judge(judge, embedder, thresholds, *, via: str = "") -> None:
    """Say on stderr which judge a run uses, and warn when the thresholds were tuned for another."""
    echo_err(f"judge: {judge.fingerprint}  (embedder: {getattr(embedder, 'fingerprint', '?')}){via}")
    if thresholds.judge and thresholds.judge != judge.fingerprint:
        echo_err(f"warning: thresholds in {thresholds.source} were calibrated for judge {thresholds.judge}, "
                 f"but this run uses {judge.fingerprint}; the tuned thresholds may not transfer")


def load_items_or_exit(path: str):
    """Load an eval set, or print every problem and exit 2."""
    from workbench.dataset import DatasetError, load_eval_set

    try:
        return load_eval_set(path)
    except DatasetError as exc:
        echo_err(f"error: {exc}")
        sys.exit(2)


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
    from workbench.dataset import DatasetError, load_corpus
    from workbench.judges.base import JudgeError
    from workbench.judges.factory import build_judge
    from workbench.pipeline import ScoreOptions, default_run_dir, items_in_flight_for, parse_metrics, run_scoring

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
        from workbench.estimate import estimate_run

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
        from workbench.batch_cli import score_with_batch

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


def exit_if_endpoint_failed(judge, *, outcome: str = "no item was judged; nothing written") -> None:
    """Exit 3 when the judge's first call found the endpoint unusable (``outcome`` says what's left)."""
    from workbench.failures import EXIT_ENDPOINT

    fatal = getattr(judge, "fatal", None)
    if fatal is not None:
        echo_err(f"error: {fatal}")
        echo_err(f"stopped: {outcome} (exit code {EXIT_ENDPOINT})")
        sys.exit(EXIT_ENDPOINT)


def judge_details(block: dict, judge, *, price_in=None, price_out=None) -> None:
    """Add what a remote judge knows about its endpoint to ``summary["judge"]`` (new fields)."""
    from workbench.failures import estimate_cost

    for name in ("timeouts", "truncated", "response_format"):
        if hasattr(judge, name):
            block[name] = getattr(judge, name)
    cost = estimate_cost(block.get("prompt_tokens", 0), block.get("completion_tokens", 0),
                         price_in=price_in, price_out=price_out)
    if cost is not None:
        block["cost"] = cost


def _finish(out: Path, records, summary: dict, *, items, thresholds, fingerprint: str, db_path, as_json: bool,
            max_failed: float = 0.05, annotators=None) -> None:
    """The end shared by interactive and batch runs: corrected rates, outputs, the table, the exit code."""
    from workbench.failures import EXIT_TOO_MANY_FAILED, failure_summary
    from workbench.pipeline import write_outputs

    from workbench.placeholders import no_signal_warnings

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


def _corrected_or_none(db_path, records, items, thresholds, fingerprint, annotators=None):
    """Corrected rates from the label store at ``db_path`` (``workbench.corrected``)."""
    import sqlite3

    import numpy as np

    from workbench.corrected import corrected_from_db
    from workbench.store import StoreError

    echo_err(f"corrected rates: human labels from {db_path}")
    try:
        return corrected_from_db(db_path, records, thresholds=thresholds, fingerprint=fingerprint, items=items,
                                 rng=np.random.default_rng(0), annotators=annotators)
    except (StoreError, sqlite3.DatabaseError) as exc:
        echo_err(f"warning: {db_path}: cannot read the label store ({exc}); no corrected rates")
        return None


@click.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs/demo", show_default=True,
              help="Output folder.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Use only the first N items of each set (quick look).")
def demo(out_dir, limit):
    """Run the whole calibration + scoring loop on the bundled data, offline, no API key.

    Scores the hand-made RAG set, calibrates the offline judge against four public human-labelled
    sets (agreement + thresholds.json), then scores BEGIN with the tuned thresholds.

    Example: workbench demo --out runs/demo
    """
    import time

    from workbench.demo import run_demo

    started = time.perf_counter()
    run_demo(Path(out_dir), limit=limit, echo=click.echo)
    echo_err(f"demo finished in {time.perf_counter() - started:.1f} s")


COMMANDS = [score, demo]
