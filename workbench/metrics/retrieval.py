"""Retrieval: was the supporting passage retrieved? Compares retrieved ids against gold ids."""
from __future__ import annotations

from collections.abc import Sequence

from workbench.types import RetrievalResult


def retrieval_scores(retrieved_ids: Sequence[str], gold_ids: Sequence[str] | None, *, k: int = 5) -> RetrievalResult | None:
    """Score a ranked list of retrieved ids against gold ids.

    The cutoff is ``k_eff = min(k, len(retrieved_ids))`` (reported as ``k``), so a system that
    retrieves fewer than ``k`` passages is not charged for empty slots.
    recall@k = |gold in top k_eff| / |gold|; precision@k = |gold in top k_eff| / k_eff;
    MRR = 1 / rank of the first gold id within the top k_eff (0 if none).
    Degenerate rule: ``None`` (not scored) when there are no gold ids; an empty retrieval list
    scores 0 on all three with ``k = 0``.
    """
    if not gold_ids:
        return None
    gold = set(gold_ids)
    top = list(dict.fromkeys(retrieved_ids))[: max(k, 0)]
    if not top:
        return RetrievalResult(0, 0.0, 0.0, 0.0)
    hits = [pid in gold for pid in top]
    first = next((rank for rank, hit in enumerate(hits, start=1) if hit), None)
    return RetrievalResult(
        k=len(top),
        recall_at_k=sum(hits) / len(gold),
        precision_at_k=sum(hits) / len(top),
        mrr=1.0 / first if first else 0.0,
    )
