"""Faithfulness (groundedness): are the answer's claims supported by the retrieved passages?

The answer is decomposed into claims once; each claim is verified in its own judge call, which
must quote the supporting span or say NONE. The quote is then located in the passages in code
(``text.locate_quote``); a "supported" verdict whose quote is not found is a quote hallucination,
counted, and scored unsupported unless ``hallucination_unsupported=False``.
Faithfulness never sees the question.
"""
from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence

from workbench.judges.base import Judge, JudgeError
from workbench.text import locate_quote
from workbench.types import ClaimVerdict, FaithfulnessResult, Passage


def check_quote(verdict: ClaimVerdict, passages: Sequence[Passage], *, hallucination_unsupported: bool = True) -> ClaimVerdict:
    """Locate the judge's quote in ``passages`` and settle the verdict.

    Rules: a quote found -> ``quote`` becomes the passage's own text for the match (a genuine
    substring; the judge's wording is kept in ``judge_quote``); no quote -> ``quote_found=None`` and a "supported" verdict without evidence becomes
    unsupported; quote found -> ``passage_id`` is where it was found; quote not found ->
    ``quote_found=False`` and, when the judge said supported, ``quote_hallucinated=True`` and (by
    default) ``supported=False``.
    """
    if verdict.error is not None:
        return verdict
    if not verdict.quote:
        if verdict.supported:
            return dataclasses.replace(verdict, supported=False, quote=None, quote_found=None,
                                       reason=(verdict.reason + " [no quote given: scored unsupported]").strip())
        return dataclasses.replace(verdict, quote=None, quote_found=None)
    match = locate_quote(verdict.quote, passages)
    if match.found:
        return dataclasses.replace(verdict, quote=match.span, judge_quote=verdict.quote, quote_found=True,
                                   passage_id=match.passage_id, match_score=match.score)
    hallucinated = verdict.supported
    return dataclasses.replace(
        verdict,
        quote_found=False,
        match_score=match.score,
        quote_hallucinated=hallucinated,
        supported=verdict.supported and not (hallucinated and hallucination_unsupported),
    )


async def verify_claim(claim: str, passages: Sequence[Passage], judge: Judge, *,
                       hallucination_unsupported: bool = True,
                       support_threshold: float | None = None) -> ClaimVerdict:
    """One judge call for one claim, then the quote check. A failed call gives a verdict with ``error``.

    ``support_threshold`` (a calibrated ``claim_support`` threshold) replaces the judge's own
    decision: supported when ``score >= support_threshold``.
    """
    try:
        verdict = await judge.verify(claim, passages)
    except JudgeError as exc:
        return ClaimVerdict(claim=claim, supported=False, score=0.0, error=str(exc))
    if verdict.claim != claim:
        verdict = dataclasses.replace(verdict, claim=claim)
    if support_threshold is not None:
        verdict = dataclasses.replace(verdict, supported=verdict.score >= support_threshold)
    return check_quote(verdict, passages, hallucination_unsupported=hallucination_unsupported)


def faithfulness_from_verdicts(verdicts: Sequence[ClaimVerdict]) -> FaithfulnessResult:
    """Supported / total claims. ``None`` when there are no claims or any verification failed."""
    verdicts = tuple(verdicts)
    n_quotes = sum(1 for v in verdicts if v.quote)
    n_halluc = sum(1 for v in verdicts if v.quote_hallucinated)
    if not verdicts or any(v.error for v in verdicts):
        return FaithfulnessResult(None, verdicts, n_quotes, n_halluc)
    score = sum(v.supported for v in verdicts) / len(verdicts)
    return FaithfulnessResult(score, verdicts, n_quotes, n_halluc)


async def faithfulness(answer: str, passages: Sequence[Passage], judge: Judge, *,
                       claims: Sequence[str] | None = None,
                       hallucination_unsupported: bool = True) -> FaithfulnessResult:
    """Score an answer's faithfulness to ``passages`` (supported claims / all claims, in [0, 1]).

    ``claims`` skips decomposition (e.g. units already in the label store). Claim verifications run
    concurrently, one call each. ``None`` score when the answer has no claims. A failed decompose
    raises ``JudgeError``; a failed verification is recorded on its verdict and the score is ``None``.
    """
    claim_texts = list(claims) if claims is not None else await judge.decompose(answer)
    verdicts = await asyncio.gather(*(
        verify_claim(c, passages, judge, hallucination_unsupported=hallucination_unsupported) for c in claim_texts
    ))
    return faithfulness_from_verdicts(verdicts)
