"""The one place that wires eval set -> judges -> metrics -> outputs.

``score_items`` is the async core (items in flight bounded by a semaphore; the judge bounds its
own calls). ``score_eval_set`` is the sync edge used by the CLI and the app: it loads files,
builds the judge, runs, and writes ``items.jsonl`` + ``summary.json``.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import cast

from workbench.judges.base import (
    CoalescableEmbedder,
    ContextJudge,
    Embedder,
    FailsFast,
    Judge,
    JudgeError,
    combined_usage,
    embedder_fingerprint,
    run_sync,
)
from workbench.judges.client import ADAPTIVE_POOL_SIZE
from workbench.metrics.abstention import abstention_summary
from workbench.metrics.citations import check_citations
from workbench.metrics.context import ContextPrecisionResult, StatementSupport, context_precision, context_recall
from workbench.metrics.correctness import answer_correctness
from workbench.metrics.diagnosis import diagnose, diagnosis_counts, retrieval_failed
from workbench.metrics.faithfulness import faithfulness_from_verdicts, verify_claim
from workbench.metrics.quadrant import quadrant, quadrant_counts, quadrant_share_ci
from workbench.metrics.relevance import answer_relevance
from workbench.metrics.retrieval import retrieval_scores
from workbench.scoring.embed_batch import EmbeddingBatcher
from workbench.scoring.limits import cap_claims
from workbench.text import DEFAULT_CITATION_PATTERN
from workbench.types import (
    CitationCheck,
    ClaimVerdict,
    CorrectnessResult,
    EvalItem,
    ItemScore,
    JudgeUsage,
    Passage,
    RelevanceResult,
    ReverseQuestion,
    Thresholds,
)

METRICS = ("faithfulness", "answer_relevance", "abstention", "citations", "context_precision", "context_recall",
           "correctness", "retrieval")
"""Every metric ``score --metrics`` can choose, in the order ``summary.json`` lists skipped ones."""


def parse_metrics(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """The metrics named in ``text`` (comma-separated, or a sequence), in :data:`METRICS` order.

    ``None``, ``""`` or ``"all"`` mean every metric. Raises ``ValueError`` naming each unknown
    name and the expected ones; an empty selection (e.g. ``","``) is an error too.
    """
    if text is None or (isinstance(text, str) and text.strip().lower() in ("", "all")):
        return METRICS
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {', '.join(unknown)}: expected a comma-separated list of "
                         f"{', '.join(METRICS)} (or 'all')")
    if not names:
        raise ValueError(f"no metric named: expected a comma-separated list of {', '.join(METRICS)} (or 'all')")
    return tuple(m for m in METRICS if m in names)


@dataclass(frozen=True)
class ScoreOptions:
    """Knobs of a scoring run (none of them change a judge's verdicts).

    ``metrics`` are the metrics to compute (default all of :data:`METRICS`); a metric left out
    makes no judge or embedding call and is ``null`` in ``items.jsonl`` and ``summary.json``.
    Without ``abstention`` no refusal check runs, so ``abstained`` is ``null`` and a refusing
    answer's faithfulness is scored like any other answer's.
    """

    thresholds: Thresholds = field(default_factory=Thresholds)
    k: int = 5
    n_questions: int = 3
    corpus: Mapping[str, Passage] | None = None
    citation_pattern: str = DEFAULT_CITATION_PATTERN
    hallucination_unsupported: bool = True
    items_in_flight: int = 64
    metrics: tuple[str, ...] = METRICS


#: items scored at once per call the adaptive limit may reach: an item waits on 2-3 round trips in a row,
#: so several items per slot keep the slots busy while others wait for their next step
ITEMS_PER_SLOT = 4


def items_in_flight_for(concurrency: int | None) -> int:
    """Items a ``score`` run keeps in flight: twice a fixed ``concurrency`` (at least 8), else
    ``ITEMS_PER_SLOT`` per connection an adaptive run may use (its limit grows from 1 to the pool size)."""
    if concurrency:
        return max(8, 2 * concurrency)
    return ITEMS_PER_SLOT * ADAPTIVE_POOL_SIZE


#: What an item's concurrent calls give, in the order ``score_item`` starts them: refusal verdict,
#: relevance, claim verdicts, citation checks, context precision, context recall, correctness.
ItemCalls = tuple[bool | None, RelevanceResult | None, list[ClaimVerdict] | None, list[CitationCheck],
                  ContextPrecisionResult | None, StatementSupport | None, CorrectnessResult | None]


async def score_item(item: EvalItem, judge: Judge, embedder: Embedder, options: ScoreOptions) -> ItemScore:
    """Score one item on every metric; returns its :class:`~workbench.types.ItemScore` (``to_record()`` is
    its ``items.jsonl`` line).

    Round trip 1 decomposes the answer (and the reference, if any); round trip 2 runs every claim
    verification, the reverse questions, the refusal check, the citation checks and the context
    judgments at once. A judge failure is recorded in ``errors`` and the affected metric is
    ``None``; it never raises.
    """
    wanted = set(options.metrics)
    # Errors are kept per step and joined in a fixed order, whatever order the calls finish in.
    slots = ("decompose answer", "decompose reference", "is_refusal", "answer_relevance", "verify", "citations",
             "context_precision", "context_recall", "correctness")
    failed: dict[str, list[str]] = {name: [] for name in slots}

    notes: list[str] = []  # recorded truncations (input limits), not failures

    async def decompose(text: str | None, what: str) -> list[str] | None:
        if not text or not text.strip():
            return []
        try:
            return cap_claims(await judge.decompose(text), what, notes)
        except JudgeError as exc:
            failed[f"decompose {what}"].append(f"decompose {what}: {exc}")
            return None

    async def guarded(name: str, coro, default=None):
        """One metric's calls: a judge failure is recorded under ``name``; the other metrics go on."""
        try:
            return await coro
        except JudgeError as exc:
            failed[name].append(f"{name}: {exc}")
            return default

    async def nothing():
        return None

    # Every call that needs nothing else starts now; the rest start as soon as their inputs exist.
    need_claims = bool(wanted & {"faithfulness", "correctness"})
    need_statements = bool(item.reference) and bool(wanted & {"context_recall", "correctness"})
    claims_task = asyncio.ensure_future(decompose(item.answer, "answer") if need_claims else nothing())
    statements_task = asyncio.ensure_future(decompose(item.reference, "reference") if need_statements else nothing())
    if "answer_relevance" in wanted and item.answer.strip() and isinstance(embedder, EmbeddingBatcher):
        embedder.prefetch(item.question)  # the question's vector does not wait for the reverse questions

    async def verify_all():
        claims = await claims_task
        if claims is None:
            return None
        return await asyncio.gather(*(verify_claim(c, item.contexts, judge,
                                                   hallucination_unsupported=options.hallucination_unsupported,
                                                   support_threshold=options.thresholds.claim_support)
                                      for c in claims))

    async def recall():
        statements = await statements_task
        if not (bool(item.reference) and statements is not None):
            return None
        return await context_recall(item.reference, item.contexts, judge, statements=statements)

    async def correctness():
        claims, statements = await asyncio.gather(claims_task, statements_task)
        if not (bool(item.reference) and statements is not None) or claims is None:
            return None
        return await answer_correctness(item.answer, claims, item.reference, judge,
                                        reference_statements=statements, embedder=embedder)

    judge_contexts = isinstance(judge, ContextJudge) and bool(item.contexts) and "context_precision" in wanted
    try:
        gathered = await asyncio.gather(
            guarded("is_refusal", judge.is_refusal(item.answer)) if "abstention" in wanted else nothing(),
            guarded("answer_relevance", answer_relevance(item.question, item.answer, judge, embedder,
                                                         n=options.n_questions))
            if "answer_relevance" in wanted else nothing(),
            guarded("verify", verify_all()) if "faithfulness" in wanted else nothing(),
            guarded("citations", check_citations(item, judge, corpus=options.corpus, pattern=options.citation_pattern),
                    default=[]) if "citations" in wanted else _empty_list(),
            guarded("context_precision", context_precision(item.question, item.contexts, judge,
                                                           gold_ids=item.gold_context_ids)
                    if judge_contexts else nothing()),
            guarded("context_recall", recall()) if "context_recall" in wanted else nothing(),
            guarded("correctness", correctness()) if "correctness" in wanted else nothing(),
        )
        # asyncio.gather types seven different results as one union; these are the calls' own types
        abstained, rel, claim_verdicts, cites, cprec, crec, correct = cast(ItemCalls, tuple(gathered))
        await asyncio.gather(claims_task, statements_task)
    finally:
        for task in (claims_task, statements_task):
            task.cancel()
        if isinstance(embedder, EmbeddingBatcher):
            embedder.forget(item.question)
    errors: list[str] = [message for name in slots for message in failed[name]]
    faith = None
    claims: tuple[ClaimVerdict, ...] = ()
    if claim_verdicts is not None:
        result = faithfulness_from_verdicts(claim_verdicts)
        faith = result.score
        claims = result.verdicts
        errors.extend(f"verify claim {i}: {v.error}" for i, v in enumerate(result.verdicts) if v.error)
    is_abstained = bool(abstained)
    if is_abstained:
        faith = None
    relevance_score = rel.score if rel is not None else None
    retrieval = (retrieval_scores([p.id for p in item.contexts], item.gold_context_ids, k=options.k)
                 if "retrieval" in wanted else None)
    errors.extend(f"citation {c.id}: {c.error}" for c in cites if c.error)
    if cprec is not None:
        errors.extend(f"context {v.passage_id}: {v.error}" for v in cprec.verdicts if v.error)
    if crec is not None:
        errors.extend(f"reference statement {i}: {v.error}" for i, v in enumerate(crec.verdicts) if v.error)
    cprec_score = cprec.score if cprec else None
    crec_score = crec.score if crec else None
    diagnosis = diagnose(
        abstained=is_abstained, faithfulness=faith, relevance=relevance_score,
        retrieval_failed=retrieval_failed(recall_at_k=retrieval.recall_at_k if retrieval else None,
                                          context_recall=crec_score, context_precision=cprec_score),
        correctness_f1=correct.f1 if correct else None,
        faithfulness_threshold=options.thresholds.faithfulness,
        relevance_threshold=options.thresholds.answer_relevance)
    return ItemScore(
        id=item.id,
        faithfulness=faith,
        answer_relevance=relevance_score,
        quadrant=quadrant(faith, relevance_score, abstained=is_abstained, thresholds=options.thresholds),
        claims=claims,
        reverse_questions=tuple(ReverseQuestion(q, sim) for q, sim in (rel.questions if rel else ())),
        abstained=abstained,
        answerable=item.answerable,
        retrieval=retrieval,
        citations=tuple(cites or ()),
        context_precision=cprec_score,
        context_precision_id_based=cprec.id_based if cprec else None,
        context_judgments=cprec.verdicts if cprec else (),
        context_recall=crec_score,
        reference_statements=crec.verdicts if crec else (),
        correctness=correct,
        diagnosis=diagnosis,
        errors=tuple(errors),
        notes=tuple(notes),
        gold_context_ids=tuple(item.gold_context_ids or ()),
    )


async def _empty_list() -> list:
    return []


async def score_items(items: Sequence[EvalItem], judge: Judge, embedder: Embedder, options: ScoreOptions,
                      *, on_item_done: Callable[[ItemScore], object] | None = None) -> list[ItemScore]:
    """Score every item, at most ``options.items_in_flight`` at a time; records in input order.

    An unexpected exception inside one item is recorded on that item (``errors``), not raised.
    An embedder that allows it (``coalescable``, e.g. the OpenAI-compatible one) is wrapped in an
    :class:`~workbench.scoring.embed_batch.EmbeddingBatcher`, so the items' embeddings share requests.
    """
    gate = asyncio.Semaphore(max(1, options.items_in_flight))
    if isinstance(embedder, CoalescableEmbedder) and embedder.coalescable and not isinstance(embedder, EmbeddingBatcher):
        embedder = EmbeddingBatcher(embedder)

    async def one(item: EvalItem) -> ItemScore:
        async with gate:
            try:
                record = await score_item(item, judge, embedder, options)
            except Exception as exc:  # a bug or backend fault must not kill the whole run
                record = _failed_record(item, f"internal error: {type(exc).__name__}: {exc}")
        if on_item_done:
            on_item_done(record)
        return record

    return list(await asyncio.gather(*(one(item) for item in items)))


def _failed_record(item: EvalItem, message: str) -> ItemScore:
    """The record of an item whose scoring raised: every metric ``None``, quadrant ``unscored``, no ``notes``."""
    return ItemScore(id=item.id, answerable=item.answerable, errors=(message,), notes=None)


def _score_block(values: list[float], threshold: float) -> dict | None:
    if not values:
        return None
    return {"n": len(values), "mean": fmean(values), "pass_rate": sum(v >= threshold for v in values) / len(values)}


def _mean_block(values: Sequence[float | None]) -> dict | None:
    values = [v for v in values if v is not None]
    return {"n": len(values), "mean": fmean(values)} if values else None


def _context_precision_block(records: Sequence[ItemScore]) -> dict | None:
    """Judged context precision, id-based precision where gold ids exist, and passage-level
    Cohen's kappa between the judge's relevance and gold-id membership."""
    judged = _mean_block([r.context_precision for r in records])
    id_based = _mean_block([r.context_precision_id_based for r in records])
    if judged is None and id_based is None:
        return None
    judge_flags, gold_flags = [], []
    for r in records:
        if r.context_precision_id_based is None or r.context_precision is None:
            continue
        gold = set(r.gold_context_ids)
        for v in r.context_judgments:
            judge_flags.append(bool(v.relevant))
            gold_flags.append(v.passage_id in gold)
    kappa = None
    if len(judge_flags) >= 2:
        from workbench.stats.agreement import cohen_kappa  # imported only when there is something to compare

        kappa = cohen_kappa(gold_flags, judge_flags, labels=[True, False])
    return {"n": judged["n"] if judged else 0, "mean": judged["mean"] if judged else None,
            "id_based": id_based, "judge_vs_gold_kappa": kappa, "n_passages_compared": len(judge_flags)}


def _correctness_block(records: Sequence[ItemScore]) -> dict | None:
    rows = [r.correctness for r in records if r.correctness is not None and r.correctness.f1 is not None]
    if not rows:
        return None
    sims = [c.similarity for c in rows if c.similarity is not None]
    # a correctness with an F1 has a precision and a recall (F1 is None when either is)
    return {"n": len(rows), "scope": "end-to-end (against the reference answer)",
            "precision": fmean(c.precision or 0.0 for c in rows), "recall": fmean(c.recall or 0.0 for c in rows),
            "f1": fmean(c.f1 or 0.0 for c in rows), "similarity": fmean(sims) if sims else None}


def summarize(records: Sequence[ItemScore], *, thresholds: Thresholds, usage: JudgeUsage, fingerprint: str,
              k: int = 5, rng=None, metrics: Sequence[str] = METRICS) -> dict:
    """Aggregate item scores into the ``summary.json`` contract (``None`` where nothing was scored).

    ``quadrant_ci`` holds bootstrap 95% intervals of the four quadrant cells' shares of all items
    (``workbench.metrics.quadrant.quadrant_share_ci``), drawn from ``rng`` (a
    ``numpy.random.Generator``; default ``numpy.random.default_rng(0)``, so the same records give
    the same summary). ``corrected`` is ``None`` here; ``workbench score --db`` fills it from the
    label store (``workbench.calibration.corrections``).
    """
    import numpy as np

    if rng is None:
        rng = np.random.default_rng(0)
    faith = [r.faithfulness for r in records if r.faithfulness is not None]
    rel = [r.answer_relevance for r in records if r.answer_relevance is not None]
    judged_refusal = [r for r in records if r.abstained is not None]
    retrieval = [r.retrieval for r in records if r.retrieval is not None]
    cites = [c for r in records for c in r.citations]
    n_quotes = sum(r.n_quotes for r in records)
    n_halluc = sum(r.n_quote_hallucinated for r in records)
    skipped = [m for m in METRICS if m not in set(metrics)]
    summary = {
        "n_items": len(records),
        "judge": {"fingerprint": fingerprint, "calls": usage.calls, "cache_hits": usage.cache_hits,
                  "failures": usage.failures, "prompt_tokens": usage.prompt_tokens,
                  "completion_tokens": usage.completion_tokens},
        "thresholds": {"faithfulness": thresholds.faithfulness, "answer_relevance": thresholds.answer_relevance,
                       "claim_support": thresholds.claim_support, "source": thresholds.source},
        "faithfulness": _score_block(faith, thresholds.faithfulness),
        "answer_relevance": _score_block(rel, thresholds.answer_relevance),
        "quadrant": quadrant_counts(r.quadrant for r in records),
        "quadrant_ci": quadrant_share_ci([r.quadrant for r in records], rng=rng),
        "corrected": None,
        "abstention": abstention_summary([r.answerable for r in judged_refusal],
                                         [bool(r.abstained) for r in judged_refusal]),
        "retrieval": ({"n": len(retrieval), "k": k, "recall_at_k": fmean(x.recall_at_k for x in retrieval),
                       "precision_at_k": fmean(x.precision_at_k for x in retrieval),
                       "mrr": fmean(x.mrr for x in retrieval)} if retrieval else None),
        "citations": ({"n": len(cites),
                       "missing_from_corpus": sum(c.in_corpus is False for c in cites),
                       "not_retrieved": sum(not c.retrieved for c in cites),
                       "unsupported": sum(c.supports is False for c in cites)} if cites else None),
        "context_precision": _context_precision_block(records),
        "context_recall": _mean_block([r.context_recall for r in records]),
        "correctness": _correctness_block(records),
        "diagnosis": diagnosis_counts(r.diagnosis for r in records),
        "quotes": {"n": n_quotes, "hallucinated": n_halluc, "rate": (n_halluc / n_quotes) if n_quotes else None},
        "errors": {"items_with_errors": sum(1 for r in records if r.errors)},
        "metrics_skipped": skipped,
        "placeholders": [],  # scores the judge declares placeholders (filled by run_scoring)
        "placeholder_notes": {},
    }
    for metric in skipped:
        summary[metric] = None
    return summary


def write_outputs(out_dir: Path, records: Sequence[ItemScore], summary: dict) -> None:
    """Write ``items.jsonl`` (one ``ItemScore.to_record()`` per line) and ``summary.json`` into ``out_dir``
    (atomically, via temp files)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    items_tmp = out_dir / "items.jsonl.tmp"
    with items_tmp.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record.to_record(), ensure_ascii=False) + "\n")
    items_tmp.replace(out_dir / "items.jsonl")
    summary_tmp = out_dir / "summary.json.tmp"
    summary_tmp.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    summary_tmp.replace(out_dir / "summary.json")


from workbench.scoring.estimate import estimate_calls  # noqa: E402,F401  (the dry-run estimate lives in estimate.py)


def run_scoring(items: Sequence[EvalItem], judge: Judge, embedder: Embedder, options: ScoreOptions,
                *, progress: bool = True) -> tuple[list[ItemScore], dict]:
    """Sync wrapper: score ``items`` with a progress bar on stderr; returns ``(records, summary)``.

    Raises the judge's ``fatal`` error (``judges.openai_compat.EndpointError``) when its endpoint
    refused the first call (401/403/404, nothing listening): every item would be unscored.
    """
    from tqdm import tqdm

    bar = tqdm(total=len(items), desc="scoring", unit="item", file=sys.stderr, disable=not progress)
    try:
        records = run_sync(score_items(items, judge, embedder, options, on_item_done=lambda _: bar.update(1)))
    finally:
        bar.close()
    if isinstance(judge, FailsFast) and judge.fatal is not None:
        raise judge.fatal  # the endpoint refused the first call (EndpointError): there is no result
    summary = summarize(records, thresholds=options.thresholds, usage=combined_usage(judge, embedder),
                        fingerprint=judge.fingerprint, k=options.k, metrics=options.metrics)
    summary["judge"]["embedder"] = embedder_fingerprint(embedder)
    from workbench.calibration.placeholders import placeholder_fields

    summary.update(placeholder_fields(judge))
    return records, summary



def default_run_dir() -> Path:
    """``runs/<UTC timestamp>/`` under the current directory."""
    return Path("runs") / time.strftime("%Y%m%d-%H%M%S", time.gmtime())
