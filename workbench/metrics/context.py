"""Retrieval judged without gold ids: context precision and context recall.

Context precision compares each retrieved passage against the question (one judge call per
passage: is it useful for answering?) and weights by rank: rank-weighted average precision,
so a useful passage ranked low costs more than one ranked high. Context recall compares the
reference answer's statements against the retrieved passages (one verification per statement,
quote checked in code, as for faithfulness).
"""
from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.judges.base import JudgeError
from workbench.metrics.faithfulness import verify_claim
from workbench.types import ClaimVerdict, ContextVerdict, Passage, passage_judgment_record


def rank_weighted_precision(relevant: Sequence[bool]) -> float | None:
    """Average precision of a ranked list of relevance flags.

    ``sum_k precision@k * rel_k / number of relevant``. Useful passages at ranks 1 and 3 of 4:
    (1/1 + 2/3) / 2 = 0.8333. Degenerate rules: an empty list is ``None`` (nothing retrieved, not
    scored); a list with no relevant passage is 0.0.
    """
    if len(relevant) == 0:
        return None
    hits, total = 0, 0.0
    for rank, rel in enumerate(relevant, start=1):
        if rel:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


@dataclass(frozen=True)
class ContextPrecisionResult:
    """Judged rank-weighted precision; ``id_based`` from gold ids when the item has them."""

    score: float | None
    verdicts: tuple[ContextVerdict, ...] = ()
    id_based: float | None = None

    def to_record(self) -> dict:
        return {"score": self.score, "id_based": self.id_based,
                "passages": [passage_judgment_record(v) for v in self.verdicts]}


async def context_precision(question: str, passages: Sequence[Passage], judge, *,
                            gold_ids: Sequence[str] | None = None) -> ContextPrecisionResult:
    """Judge each passage's usefulness for ``question`` (concurrently) and rank-weight them.

    ``None`` score when nothing was retrieved or any passage judgment failed.
    """
    async def one(p: Passage) -> ContextVerdict:
        try:
            return await judge.judge_context(question, p)
        except JudgeError as exc:
            return ContextVerdict(p.id, False, 0.0, error=str(exc))

    verdicts = tuple(await asyncio.gather(*(one(p) for p in passages)))
    id_based = rank_weighted_precision([p.id in set(gold_ids) for p in passages]) if gold_ids else None
    if any(v.error for v in verdicts):
        return ContextPrecisionResult(None, verdicts, id_based)
    return ContextPrecisionResult(rank_weighted_precision([v.relevant for v in verdicts]), verdicts, id_based)


@dataclass(frozen=True)
class StatementSupport:
    """Statements of a reference checked against some text: supported / total."""

    score: float | None
    verdicts: tuple[ClaimVerdict, ...] = ()

    def to_record(self) -> dict:
        return {"score": self.score, "statements": [v.to_record() for v in self.verdicts]}


async def statements_supported(statements: Sequence[str], passages: Sequence[Passage], judge) -> StatementSupport:
    """Share of ``statements`` supported by ``passages``, each in its own verification call.

    ``None`` when there are no statements or any verification failed.
    """
    verdicts = tuple(await asyncio.gather(*(verify_claim(s, passages, judge) for s in statements)))
    if not verdicts or any(v.error for v in verdicts):
        return StatementSupport(None, verdicts)
    return StatementSupport(sum(v.supported for v in verdicts) / len(verdicts), verdicts)


async def context_recall(reference: str | None, passages: Sequence[Passage], judge, *,
                         statements: Sequence[str] | None = None) -> StatementSupport:
    """Share of the reference answer's statements that the retrieved passages support.

    ``None`` when there is no reference. A failed decompose raises ``JudgeError``.
    """
    if not reference or not reference.strip():
        return StatementSupport(None)
    statements = list(statements) if statements is not None else await judge.decompose(reference)
    if not passages:
        return StatementSupport(0.0 if statements else None)
    return await statements_supported(statements, passages, judge)
