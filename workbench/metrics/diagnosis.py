"""One diagnosis per item from the combination of stage scores, naming which backlog owns it.

Rules, first match wins:
- ``abstained``: the answer refused (judged by the abstention metrics instead).
- ``retrieval_failed_confidently_wrong``: retrieval failed and the answer still asserts
  unsupported claims (faithfulness below threshold): the worst cell.
- ``retrieval_failed``: retrieval failed (fix chunking and search).
- ``unfaithful``: retrieval fine but the answer is not grounded (tighten generation).
- ``content_gap``: retrieval fine and faithful, but the answer does not address the question or
  disagrees with the reference (the corpus lacks the content).
- ``ok``: every available signal passes.
- ``insufficient_data``: no faithfulness score to go on.

Retrieval "failed" is read from the most reliable signal available, in this order: recall@k = 0
against gold ids; else context recall below 0.5 against the reference; else judged context
precision = 0 (a judge's opinion of the passages, the weakest evidence). Unknown signals
(``None``) are skipped.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

DIAGNOSES = ("ok", "retrieval_failed", "unfaithful", "content_gap", "retrieval_failed_confidently_wrong",
             "abstained", "insufficient_data")


def retrieval_failed(*, recall_at_k: float | None, context_recall: float | None,
                     context_precision: float | None) -> bool | None:
    """Did retrieval fail? From the most reliable available signal (gold ids, then the reference,
    then the judged context precision); ``None`` when none is available."""
    if recall_at_k is not None:
        return recall_at_k == 0.0
    if context_recall is not None:
        return context_recall < 0.5
    if context_precision is not None:
        return context_precision == 0.0
    return None


def diagnose(*, abstained: bool, faithfulness: float | None, relevance: float | None,
             retrieval_failed: bool | None, correctness_f1: float | None,
             faithfulness_threshold: float, relevance_threshold: float, correctness_threshold: float = 0.5) -> str:
    """The diagnosis of one item (see the module docstring for the rules)."""
    if abstained:
        return "abstained"
    if faithfulness is None:
        return "retrieval_failed" if retrieval_failed else "insufficient_data"
    faithful = faithfulness >= faithfulness_threshold
    if retrieval_failed:
        return "retrieval_failed" if faithful else "retrieval_failed_confidently_wrong"
    if not faithful:
        return "unfaithful"
    unhelpful = (relevance is not None and relevance < relevance_threshold) or (
        correctness_f1 is not None and correctness_f1 < correctness_threshold)
    return "content_gap" if unhelpful else "ok"


def diagnosis_counts(diagnoses: Iterable[str]) -> dict[str, int]:
    """Counts per diagnosis, zeros included, in ``DIAGNOSES`` order."""
    counts = Counter(diagnoses)
    return {d: counts.get(d, 0) for d in DIAGNOSES}
