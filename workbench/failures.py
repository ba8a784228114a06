"""Runs that cannot fail silently: what a scoring run could not judge, and the exit codes.

A judge call that fails after its retries is recorded on the item (``errors``, one string per
failed metric, prefixed with what failed). This module reads those prefixes back, counts the
items each metric could not judge, and decides whether a run failed.

Exit codes of ``score`` and ``judge`` (also in the README and ``docs/local-models.md``):

* ``0`` the run finished and at most ``--max-failed`` of its items (units) carry a judge failure;
* ``2`` bad input (a file, an option);
* ``3`` the endpoint cannot serve the run (401, 403, 404 or nothing listening on the first call);
  ``score`` writes nothing;
* ``4`` more than ``--max-failed`` of the items (units) could not be judged; everything that
  could be judged was written first.
"""
from __future__ import annotations

from collections.abc import Sequence

from workbench.types import ItemScore

EXIT_ENDPOINT = 3
EXIT_TOO_MANY_FAILED = 4
DEFAULT_MAX_FAILED = 0.05

# error prefix (as written by pipeline.score_item) -> the metrics that depend on that call
_PREFIXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("decompose answer", ("faithfulness", "correctness")),
    ("decompose reference", ("context_recall", "correctness")),
    ("verify claim", ("faithfulness",)),
    ("verify", ("faithfulness",)),
    ("is_refusal", ("abstention",)),
    ("answer_relevance", ("answer_relevance",)),
    ("citations", ("citations",)),
    ("citation ", ("citations",)),
    ("context_precision", ("context_precision",)),
    ("context_recall", ("context_recall",)),
    ("context ", ("context_precision",)),
    ("reference statement", ("context_recall",)),
    ("correctness", ("correctness",)),
)
METRICS = ("faithfulness", "answer_relevance", "abstention", "citations", "context_precision", "context_recall",
           "correctness")


def metrics_of_error(error: str) -> tuple[str, ...]:
    """The metrics one recorded error makes unknown; every metric for an unrecognised error."""
    for prefix, metrics in _PREFIXES:
        if error.startswith(prefix):
            return metrics
    return METRICS


def failure_summary(records: Sequence[ItemScore], *, max_failed: float = DEFAULT_MAX_FAILED) -> dict:
    """Count the items a judge failure left (partly) unscored.

    Args:
        records: the run's item scores (each with its ``errors``, one string per failed call).
        max_failed: the largest share of failed items that still counts as a successful run.

    Returns:
        ``{"items": n, "items_failed": k, "rate": k / n (None when n == 0), "max_failed": ...,
        "too_many": rate > max_failed, "by_metric": {metric: items whose metric is unknown},
        "citation_checks_unknown": citations whose check failed}``. An item counts as failed
        when it carries at least one error.
    """
    by_metric = {m: 0 for m in METRICS}
    failed = 0
    for record in records:
        errors = record.errors
        if not errors:
            continue
        failed += 1
        hit = {m for e in errors for m in metrics_of_error(str(e))}
        for metric in hit:
            by_metric[metric] += 1
    n = len(records)
    rate = failed / n if n else None
    unknown_cites = sum(1 for r in records for c in r.citations if c.supports is None)
    return {"items": n, "items_failed": failed, "rate": rate, "max_failed": max_failed,
            "too_many": rate is not None and rate > max_failed,
            "by_metric": {m: k for m, k in by_metric.items() if k},
            "citation_checks_unknown": unknown_cites}


def unit_failure_summary(asked: int, failed: int, *, max_failed: float = DEFAULT_MAX_FAILED) -> dict:
    """The same verdict for a ``judge`` run: ``failed`` of ``asked`` units got an error."""
    rate = failed / asked if asked else None
    return {"units": asked, "units_failed": failed, "rate": rate, "max_failed": max_failed,
            "too_many": rate is not None and rate > max_failed}


def estimate_cost(prompt_tokens: int, completion_tokens: int, *, price_in: float | None,
                  price_out: float | None) -> float | None:
    """Cost in the prices' currency; prices are per million tokens. ``None`` without any price."""
    if price_in is None and price_out is None:
        return None
    return (prompt_tokens * (price_in or 0.0) + completion_tokens * (price_out or 0.0)) / 1e6
