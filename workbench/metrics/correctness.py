"""Answer correctness, end to end: the answer's claims against a reference answer.

Scored apart from faithfulness and relevance because a faithful, relevant answer is still wrong
when the corpus is wrong. True positives are answer claims the reference supports, false
positives answer claims it does not, false negatives reference statements the answer lacks.
"""
from __future__ import annotations

import asyncio
from collections.abc import Sequence

from workbench.metrics.context import statements_supported
from workbench.types import CorrectnessResult, Passage


def precision_recall_f1(tp: int, fp: int, covered: int, n_reference: int) -> tuple[float | None, float | None, float | None]:
    """precision = tp / (tp + fp); recall = covered reference statements / all of them; F1 their
    harmonic mean. ``None`` where a denominator is 0; F1 is 0.0 when both are 0."""
    precision = tp / (tp + fp) if tp + fp else None
    recall = covered / n_reference if n_reference else None
    if precision is None or recall is None:
        return precision, recall, None
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


async def answer_correctness(answer: str, answer_claims: Sequence[str], reference: str | None, judge, *,
                             reference_statements: Sequence[str] | None = None,
                             embedder=None) -> CorrectnessResult | None:
    """Compare answer claims with reference statements, each direction in one call per statement.

    ``None`` when there is no reference. A failed verification makes the scores ``None``; a failed
    embedding leaves only the optional ``similarity`` at ``None``.
    """
    if not reference or not reference.strip():
        return None
    statements = list(reference_statements) if reference_statements is not None else await judge.decompose(reference)
    forward, backward = await asyncio.gather(  # both directions at once: one round trip
        statements_supported(answer_claims, [Passage("reference", reference)], judge),
        statements_supported(statements, [Passage("answer", answer)], judge))
    if (answer_claims and forward.score is None) or (statements and backward.score is None):
        return CorrectnessResult(None, None, None)
    tp = sum(v.supported for v in forward.verdicts)
    fp = len(forward.verdicts) - tp
    covered = sum(v.supported for v in backward.verdicts)
    precision, recall, f1 = precision_recall_f1(tp, fp, covered, len(statements))
    similarity = None
    if embedder is not None and answer.strip():
        from workbench.judges.base import JudgeError, cosine_similarities

        try:
            vectors = await embedder.embed([reference, answer])
            similarity = float(max(0.0, cosine_similarities(vectors[1:], vectors[0])[0]))
        except JudgeError:
            similarity = None  # the optional component; precision/recall/F1 stand without it
    return CorrectnessResult(precision, recall, f1, tp, fp, len(statements) - covered, similarity)
