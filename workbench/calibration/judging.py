"""Run judges over the units in the label store and keep their verdicts (``workbench judge``).

One judgment per (unit, repeat), stored with the judge fingerprint, the judge's value for the
task, its continuous score and, for claims, the quote and whether it was found in the passages.
What is compared against what, per task:

* ``claim_support``: the claim (unit text) against the item's retrieved passages, one
  ``verify_claim`` call per claim; value ``supported``/``unsupported`` after the quote check
  (a "supported" verdict whose quote is not in the passages is scored unsupported); score =
  the verdict's support score.
* ``answer_faithfulness``: the item's ``claim_support`` unit texts (the same claims people
  label; the judge decomposes the answer only when the item has no claim units) against the
  passages; score = supported / all claims; value ``faithful`` when score >= the faithfulness
  threshold (default 0.85). No claims, a failed verification, or an answer the judge calls a
  refusal -> a judgment with ``error`` (not scored, never 0).
* ``answer_relevance``: ``answer_relevance(question, answer)`` (reverse questions + embedder);
  value ``relevant`` when score >= the relevance threshold (default 0.70); ``None`` -> error.
* ``abstention``: ``is_refusal(answer)``; value ``refused`` (score 1.0) or ``answered`` (0.0).

* ``context_relevance``: the question against ONE retrieved passage (the unit's claim_index is
  the passage's rank), ``judge.judge_context``; value ``relevant``/``not_relevant``; score = the
  judge's usefulness score. Judges without ``judge_context`` record an error.
* ``answer_correctness``: the answer's claims against the item's ``reference`` and back
  (``answer_correctness``); score = F1; value ``correct`` when F1 >= 0.5. No reference -> error.

A judge failure (any exception) becomes ``Judgment.error``; a run never
aborts on one unit. Judgments without error are not asked again for the same fingerprint and
repeat (resume); failed ones are retried on the next run.

Batched verification (``verify_mode="batched"``) asks ``judge.verify_batch(claims, passages)``
for all claims of one answer in one call. It is an experiment mode, so its verdicts are stored
under the fingerprint ``<judge fingerprint>+batched`` and never mix with per-claim ones.
"""
from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

from workbench import tasks as registry
from workbench.config import DEFAULT_THRESHOLDS, JudgeConfig
from workbench.judges.base import BatchVerifier, ContextJudge, Embedder, Judge, combined_usage, embedder_fingerprint
from workbench.metrics.faithfulness import check_quote, faithfulness, faithfulness_from_verdicts, verify_claim
from workbench.metrics.relevance import answer_relevance
from workbench.types import ClaimVerdict, EvalItem, Judgment, Thresholds, Unit

VERIFY_MODES = ("per-claim", "batched")
CORRECTNESS_THRESHOLD = 0.5
CLAIM_TASK = registry.tasks_of_unit("claim")[0]


class BatchedModeUnsupported(ValueError):
    """``verify_mode="batched"`` with a judge that has no ``verify_batch`` method."""


def _in_claim_order(claims: Iterable[Unit]) -> list[Unit]:
    return sorted(claims, key=lambda c: (c.claim_index is None, c.claim_index or 0))


def group_claims(units: Iterable[Unit]) -> dict[str, list[Unit]]:
    """item id -> its ``claim_support`` units in claim order (the claims faithfulness verifies)."""
    grouped: dict[str, list[Unit]] = defaultdict(list)
    for u in units:
        if u.task == CLAIM_TASK:
            grouped[u.item_id].append(u)
    return {item_id: _in_claim_order(claims) for item_id, claims in grouped.items()}


def judgment_fingerprint(judge: Judge, verify_mode: str = "per-claim") -> str:
    """The fingerprint judgments are stored under: the judge's, plus ``+batched`` in batched mode."""
    fp = judge.fingerprint
    if verify_mode == "batched" and "batched" not in fp:
        fp += "+batched"
    return fp


def _check_mode(judge: Judge, verify_mode: str) -> None:
    if verify_mode not in VERIFY_MODES:
        raise ValueError(f"verify_mode: expected one of {VERIFY_MODES}, got {verify_mode!r}")
    if verify_mode == "batched" and not isinstance(judge, BatchVerifier):
        raise BatchedModeUnsupported(
            f"judge {judge.fingerprint} has no batched verification mode (no verify_batch method); "
            "use --verify-mode per-claim"
        )


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _Verifier:
    """Claim verdicts per (item, claim, repeat), computed once and shared within a run.

    Per-claim mode: one ``verify_claim`` call per claim, reused by the item's faithfulness unit
    (so both tasks see the same verdicts). Batched mode: one ``verify_batch`` call per (item,
    repeat) for all its claims, then the same quote check in code.
    """

    def __init__(self, judge: Judge, batched: bool) -> None:
        self.judge = judge
        self.batched = batched
        self._tasks: dict[tuple, asyncio.Future] = {}

    def _once(self, key: tuple, make) -> asyncio.Future:
        if key not in self._tasks:
            self._tasks[key] = asyncio.ensure_future(make())
        return self._tasks[key]

    async def verdicts(self, item: EvalItem, claims: Sequence[str], repeat: int) -> list[ClaimVerdict]:
        claims = list(claims)
        if self.batched:
            return list(await self._once(("batch", item.id, tuple(claims), repeat), lambda: self._batch(item, claims)))
        return list(await asyncio.gather(*(self.verdict(item, c, claims, repeat) for c in claims)))

    async def verdict(self, item: EvalItem, claim: str, claims: Sequence[str], repeat: int) -> ClaimVerdict:
        if self.batched:
            claims = list(claims) if claim in claims else [claim]
            return (await self.verdicts(item, claims, repeat))[claims.index(claim)]
        return await self._once(("one", item.id, claim, repeat),
                                lambda: verify_claim(claim, item.contexts, self.judge))

    async def _batch(self, item: EvalItem, claims: list[str]) -> list[ClaimVerdict]:
        assert isinstance(self.judge, BatchVerifier)  # checked by _check_mode before any unit is judged
        raw = list(await self.judge.verify_batch(claims, item.contexts))
        if len(raw) != len(claims):
            raise ValueError(f"verify_batch returned {len(raw)} verdicts for {len(claims)} claims")
        out = []
        for claim, verdict in zip(claims, raw):
            if verdict.claim != claim:
                verdict = dataclasses.replace(verdict, claim=claim)
            out.append(check_quote(verdict, item.contexts))
        return out


# One function per judging method; the task registry (``workbench.tasks``) names the method of
# each task, so the dispatch below has no task list of its own.
async def _verify_claim(unit: Unit, item: EvalItem, repeat: int, judge: Judge, embedder: Embedder, *,
                        base: dict, claims: Sequence[Unit], thresholds: Thresholds, verifier: _Verifier) -> Judgment:
    verdict = await verifier.verdict(item, unit.text, [c.text for c in claims], repeat)
    if verdict.error:
        return Judgment(**base, value="", score=None, error=verdict.error)
    task = registry.get(unit.task)
    return Judgment(**base, value=task.positive if verdict.supported else task.negative,
                    score=min(1.0, max(0.0, float(verdict.score))), quote=verdict.quote,
                    quote_found=verdict.quote_found)


async def _faithfulness(unit: Unit, item: EvalItem, repeat: int, judge: Judge, embedder: Embedder, *,
                        base: dict, claims: Sequence[Unit], thresholds: Thresholds, verifier: _Verifier) -> Judgment:
    texts = [c.text for c in claims]
    if not texts and await judge.is_refusal(item.answer):
        return Judgment(**base, value="", error="answer abstains: faithfulness not scored")
    if texts:
        result = faithfulness_from_verdicts(await verifier.verdicts(item, texts, repeat))
    else:  # no claim units for this item: the judge decomposes the answer itself
        result = await faithfulness(item.answer, item.contexts, judge)
    if result.score is None:
        failed = [v.error for v in result.verdicts if v.error]
        reason = f"verification failed: {failed[0]}" if failed else "no claims to verify"
        return Judgment(**base, value="", error=f"faithfulness not scored: {reason}")
    task = registry.get(unit.task)
    value = task.positive if result.score >= thresholds.faithfulness else task.negative
    return Judgment(**base, value=value, score=float(result.score))


async def _answer_relevance(unit: Unit, item: EvalItem, repeat: int, judge: Judge, embedder: Embedder, *,
                            base: dict, claims: Sequence[Unit], thresholds: Thresholds,
                            verifier: _Verifier) -> Judgment:
    result = await answer_relevance(item.question, item.answer, judge, embedder)
    if result.score is None:
        return Judgment(**base, value="", error=f"relevance not scored: {result.note or 'no score'}")
    score = min(1.0, max(0.0, float(result.score)))
    task = registry.get(unit.task)
    return Judgment(**base, value=task.positive if score >= thresholds.answer_relevance else task.negative,
                    score=score)


async def _is_refusal(unit: Unit, item: EvalItem, repeat: int, judge: Judge, embedder: Embedder, *,
                      base: dict, claims: Sequence[Unit], thresholds: Thresholds, verifier: _Verifier) -> Judgment:
    refused = bool(await judge.is_refusal(item.answer))
    task = registry.get(unit.task)
    return Judgment(**base, value=task.positive if refused else task.negative, score=1.0 if refused else 0.0)


async def _judge_context(unit: Unit, item: EvalItem, repeat: int, judge: Judge, embedder: Embedder, *,
                         base: dict, claims: Sequence[Unit], thresholds: Thresholds, verifier: _Verifier) -> Judgment:
    if not isinstance(judge, ContextJudge):
        return Judgment(**base, value="", error=f"judge {judge.fingerprint} cannot judge context relevance")
    if unit.claim_index is None or not 0 <= unit.claim_index < len(item.contexts):
        return Judgment(**base, value="", error="no retrieved passage at this rank")
    verdict = await judge.judge_context(item.question, item.contexts[unit.claim_index])
    task = registry.get(unit.task)
    return Judgment(**base, value=task.positive if verdict.relevant else task.negative,
                    score=min(1.0, max(0.0, float(verdict.score))))


async def _answer_correctness(unit: Unit, item: EvalItem, repeat: int, judge: Judge, embedder: Embedder, *,
                              base: dict, claims: Sequence[Unit], thresholds: Thresholds,
                              verifier: _Verifier) -> Judgment:
    from workbench.metrics.correctness import answer_correctness

    texts = [c.text for c in claims] or await judge.decompose(item.answer)
    result = await answer_correctness(item.answer, texts, item.reference, judge)
    if result is None or result.f1 is None:
        return Judgment(**base, value="", error="correctness not scored: no reference or a failed verification")
    task = registry.get(unit.task)
    return Judgment(**base, value=task.positive if result.f1 >= CORRECTNESS_THRESHOLD else task.negative,
                    score=float(result.f1))


#: ``Task.method`` -> the function that judges one unit of such a task.
TASK_JUDGES: dict[str, Callable[..., Awaitable[Judgment]]] = {
    "verify_claim": _verify_claim,
    "faithfulness": _faithfulness,
    "answer_relevance": _answer_relevance,
    "is_refusal": _is_refusal,
    "judge_context": _judge_context,
    "answer_correctness": _answer_correctness,
}
#: Every registry task the dispatch can judge (all of them; a test checks it).
JUDGED_TASKS: tuple[str, ...] = tuple(task.name for task in registry.REGISTRY if task.method in TASK_JUDGES)


async def _judge_one(unit: Unit, item: EvalItem, repeat: int, judge: Judge, embedder: Embedder, *,
                     fingerprint: str, claims: Sequence[Unit], thresholds: Thresholds,
                     verifier: _Verifier) -> Judgment:
    """One judgment for one unit; raises on judge failure (the caller records it)."""
    base = {"unit_id": unit.unit_id, "task": unit.task, "judge": fingerprint, "repeat": repeat}
    task = registry.BY_NAME.get(unit.task)
    method = TASK_JUDGES.get(task.method) if task is not None else None
    if method is None:
        raise ValueError(f"no judge mapping for task {unit.task!r}")
    return await method(unit, item, repeat, judge, embedder, base=base, claims=claims, thresholds=thresholds,
                        verifier=verifier)


async def judge_units(db_items: Mapping[str, EvalItem], units: Sequence[Unit], judge: Judge, embedder: Embedder, *,
                      repeats: int = 1, verify_mode: str = "per-claim",
                      claims_by_item: Mapping[str, Sequence[Unit]] | None = None,
                      thresholds: Thresholds = DEFAULT_THRESHOLDS,
                      skip: Iterable[tuple[str, int]] = (),
                      units_in_flight: int = 64,
                      on_judgment: Callable[[Judgment], None] | None = None) -> list[Judgment]:
    """Ask ``judge`` about every unit ``repeats`` times; returns one ``Judgment`` per (unit, repeat).

    Args:
        db_items: item id -> ``EvalItem`` (question, answer, passages) for every unit's item.
        units: the units to judge (tasks without a judge mapping are left out of the result).
        judge, embedder: the judge and the embedder answer relevance needs.
        repeats: ask each unit this many times (repeat index ``0..repeats-1``).
        verify_mode: ``"per-claim"`` (one call per claim) or ``"batched"`` (``verify_batch``).
        claims_by_item: item id -> its ``claim_support`` units, the claims faithfulness verifies;
            defaults to the claim units found in ``units``.
        thresholds: faithfulness / relevance thresholds that turn scores into values.
        skip: ``(unit_id, repeat)`` pairs already judged (resume); they are not asked again.
        units_in_flight: at most this many units are judged at once (the judge bounds its calls).
        on_judgment: called with each judgment as it completes (progress, incremental storage).

    Returns:
        Judgments in ``units`` order, repeat-major within a unit. A failure of any kind is a
        judgment with ``error`` set and ``value=""``; nothing is raised for one bad unit.

    Raises:
        BatchedModeUnsupported: batched mode with a judge that has no ``verify_batch``.
    """
    if repeats < 1:
        raise ValueError(f"repeats: expected at least 1, got {repeats}")
    _check_mode(judge, verify_mode)
    fingerprint = judgment_fingerprint(judge, verify_mode)
    claims = (group_claims(units) if claims_by_item is None
              else {item_id: _in_claim_order(c) for item_id, c in claims_by_item.items()})
    done = set(skip)
    jobs = [(u, r) for u in units if u.task in JUDGED_TASKS for r in range(repeats) if (u.unit_id, r) not in done]
    verifier = _Verifier(judge, batched=verify_mode == "batched")
    gate = asyncio.Semaphore(max(1, units_in_flight))

    async def one(unit: Unit, repeat: int) -> Judgment:
        async with gate:
            item = db_items.get(unit.item_id)
            try:
                if item is None:
                    raise KeyError(f"item {unit.item_id!r} not found")
                judgment = await _judge_one(unit, item, repeat, judge, embedder, fingerprint=fingerprint,
                                            claims=claims.get(unit.item_id, ()), thresholds=thresholds,
                                            verifier=verifier)
            except Exception as exc:  # a judge or backend fault must not kill the run
                judgment = Judgment(unit.unit_id, unit.task, fingerprint, "", error=_error_text(exc), repeat=repeat)
        if on_judgment is not None:
            on_judgment(judgment)
        return judgment

    return list(await asyncio.gather(*(one(u, r) for u, r in jobs)))


def run_judges(db, config: JudgeConfig | None = None, *, repeats: int = 1, verify_mode: str = "per-claim",
               tasks: Sequence[str] | None = None, progress: bool = True,
               judge: Judge | None = None, embedder: Embedder | None = None,
               thresholds: Thresholds = DEFAULT_THRESHOLDS, flush_every: int = 50,
               max_failed: float = 0.05) -> dict:
    """Judge every unit in the store (of ``tasks``, default all) and store the judgments.

    The judge comes from ``workbench.judges.factory.build_judge(config)`` unless ``judge`` (and
    ``embedder``) are given. With ``repeats > 1`` and a cached remote judge, repeats after the
    first bypass the call cache (same fingerprint), so they are real re-asks; a deterministic
    judge gives identical repeats, which is its true test-retest answer. Judgments are written
    every ``flush_every`` results, so an interrupted run resumes where it stopped.

    Returns:
        ``{"judge", "embedder", "verify_mode", "repeats", "units", "asked", "skipped",
        "judged": {task: n}, "errors": {task: n}, "not_judged": {task: n}, "first_errors": [...],
        "test_retest": {task: result of calibration.agreement.retest_agreement} (only when repeats > 1),
        "usage": {...}, "failures": workbench.failures.unit_failure_summary(asked, errors,
        max_failed=max_failed)}`` (``failures.too_many``: more than ``max_failed`` of the units
        asked got an error; the CLI then exits 4, after every judgment is stored).

    Raises:
        BatchedModeUnsupported: ``verify_mode="batched"`` with a judge without ``verify_batch``.
    """
    from tqdm import tqdm

    from workbench import store
    from workbench.judges.base import run_sync

    if judge is None:
        from workbench.judges.factory import build_judge

        judge, embedder = build_judge(config or JudgeConfig.from_env())
    if embedder is None:
        raise ValueError("run_judges: a judge given without its embedder")
    _check_mode(judge, verify_mode)
    fingerprint = judgment_fingerprint(judge, verify_mode)
    all_units = store.list_units(db)
    units = [u for u in all_units if tasks is None or u.task in tasks]
    claims = group_claims(all_units)  # all of them: faithfulness needs claims even when tasks exclude them
    items = {item.id: item for item in store.list_items(db)}
    skip = {(j.unit_id, j.repeat) for j in store.list_judgments(db, judge=fingerprint) if j.error is None}
    not_judged = Counter(u.task for u in units if u.task not in JUDGED_TASKS)
    todo = sum(1 for u in units if u.task in JUDGED_TASKS for r in range(repeats) if (u.unit_id, r) not in skip)

    # Repeats > 0 of a cached remote judge must not be answered from the cache.
    retest_judge = judge
    if repeats > 1 and config is not None and config.use_cache and config.backend != "offline":
        from workbench.judges.factory import build_judge

        retest_judge, _ = build_judge(dataclasses.replace(config, use_cache=False))

    buffer: list[Judgment] = []
    results: list[Judgment] = []
    try:
        asyncio.get_running_loop()
        incremental = False  # run_sync will use another thread; sqlite connections stay in theirs
    except RuntimeError:
        incremental = True
    bar = tqdm(total=todo, desc=f"judging ({fingerprint})", unit="unit", file=sys.stderr, disable=not progress)

    def on_judgment(j: Judgment) -> None:
        bar.update(1)
        results.append(j)
        buffer.append(j)
        if incremental and len(buffer) >= flush_every:
            store.add_judgments(db, buffer)
            buffer.clear()

    units_in_flight = max(8, 2 * (getattr(config, "concurrency", None) or 32))

    async def run_all() -> None:
        def judge_all(with_judge: Judge, *, repeats: int, skip: Iterable[tuple[str, int]]) -> Awaitable[list[Judgment]]:
            return judge_units(items, units, with_judge, embedder, repeats=repeats, verify_mode=verify_mode,
                               claims_by_item=claims, thresholds=thresholds, skip=skip,
                               units_in_flight=units_in_flight, on_judgment=on_judgment)

        if retest_judge is judge:
            await judge_all(judge, repeats=repeats, skip=skip)
            return
        await judge_all(judge, repeats=1, skip=skip)
        # repeats 1..K-1 with the uncached judge; skip repeat 0 by marking it done
        await judge_all(retest_judge, repeats=repeats, skip=set(skip) | {(u.unit_id, 0) for u in units})

    try:
        run_sync(run_all())
    finally:
        bar.close()
        if buffer:
            store.add_judgments(db, buffer)
            buffer.clear()

    judged = Counter(j.task for j in results if j.error is None)
    errors = Counter(j.task for j in results if j.error is not None)
    summary = {
        "judge": fingerprint,
        "embedder": embedder_fingerprint(embedder),
        "verify_mode": verify_mode,
        "repeats": repeats,
        "units": len(units),
        "asked": len(results),
        "skipped": sum(1 for u in units if u.task in JUDGED_TASKS for r in range(repeats) if (u.unit_id, r) in skip),
        "judged": dict(sorted(judged.items())),
        "errors": dict(sorted(errors.items())),
        "not_judged": dict(sorted(not_judged.items())),
        "first_errors": [f"{j.unit_id} (repeat {j.repeat}): {j.error}" for j in results if j.error][:5],
        "usage": dataclasses.asdict(combined_usage(judge, embedder)),
    }
    from workbench.failures import unit_failure_summary

    summary["failures"] = unit_failure_summary(len(results), sum(errors.values()), max_failed=max_failed)
    if repeats > 1:
        from workbench.calibration.agreement import retest_agreement

        present = sorted({u.task for u in units if u.task in JUDGED_TASKS})
        summary["test_retest"] = {task: retest_agreement(db, task=task, judge=fingerprint) for task in present}
    return summary
