"""Turn eval items into label-store units: the one path shared by ``labels add``, the app's Data
page and the demo.

A unit is one thing to label. Answer-level tasks get one unit per item (text = the answer);
``claim_support`` gets one unit per claim, decomposed ONCE by a judge (the same claim texts are
later shown to people and to judges); ``context_relevance`` gets one unit per retrieved passage.
"""
from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Callable, Sequence

from tqdm import tqdm

from workbench import store
from workbench.judges.base import Judge, run_sync
from workbench.tasks import BY_NAME, DEFAULT_TASKS, tasks_of_unit  # noqa: F401  (DEFAULT_TASKS re-exported)
from workbench.types import EvalItem, Unit

(CLAIM_TASK,) = tasks_of_unit("claim")
(PASSAGE_TASK,) = tasks_of_unit("passage")
ANSWER_TASKS = tasks_of_unit("answer")


def answer_units(items: Sequence[EvalItem], tasks: Sequence[str]) -> list[Unit]:
    """Answer-level units (text = the answer) for every item and every answer-level task given,
    plus one ``context_relevance`` unit per retrieved passage (claim_index = its rank from 0,
    text = the passage) when that task is asked for. Units of a task that ``needs_reference``
    (``answer_correctness``) are made only for items with a ``reference`` (there is nothing to be
    correct against otherwise)."""
    units = [
        Unit(Unit.make_id(task, item.id), task, item.id, None, item.answer)
        for item in items
        for task in tasks
        if task in ANSWER_TASKS and (not BY_NAME[task].needs_reference or item.reference)
    ]
    if PASSAGE_TASK in tasks:
        units += [Unit(Unit.make_id(PASSAGE_TASK, item.id, rank), PASSAGE_TASK, item.id, rank, passage.text)
                  for item in items for rank, passage in enumerate(item.contexts)]
    return units


def claim_units(item_id: str, claims: Sequence[str]) -> list[Unit]:
    """``claim_support`` units for an item's claims, numbered from 0; blank claims are dropped."""
    texts = [c.strip() for c in claims if isinstance(c, str) and c.strip()]
    return [Unit(Unit.make_id(CLAIM_TASK, item_id, i), CLAIM_TASK, item_id, i, text) for i, text in enumerate(texts)]


async def decompose_all(judge: Judge, items: Sequence[EvalItem], *,
                        progress: bool | None = None) -> list[list[str] | BaseException]:
    """Decompose every answer concurrently (the judge bounds its own calls), a bar on stderr.

    Returns, per item, its claims or the exception its decomposition raised (never raises for one).
    """
    bar = tqdm(total=len(items), desc="decomposing answers", unit="answer", file=sys.stderr,
               disable=None if progress is None else not progress)

    async def one(item: EvalItem) -> list[str]:
        try:
            return list(await judge.decompose(item.answer)) if item.answer.strip() else []
        finally:
            bar.update(1)

    try:
        return await asyncio.gather(*(one(item) for item in items), return_exceptions=True)
    finally:
        bar.close()


def decomposed_claim_units(judge: Judge, items: Sequence[EvalItem], *,
                           progress: bool | None = None) -> tuple[list[Unit], list[str]]:
    """Claim units for ``items`` decomposed by ``judge``; ``(units, failures)`` where failures are
    ``"<item id>: <error>"`` for answers the judge could not decompose."""
    units: list[Unit] = []
    failures: list[str] = []
    for item, result in zip(items, run_sync(decompose_all(judge, items, progress=progress))):
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result
            failures.append(f"{item.id}: {type(result).__name__}: {result}")
        else:
            units.extend(claim_units(item.id, result))
    return units, failures


def judge_from_env() -> Judge:
    """The judge ``WORKBENCH_JUDGE`` / ``WORKBENCH_MODEL`` name (default: offline)."""
    from workbench.config import JudgeConfig
    from workbench.judges.factory import build_judge

    return build_judge(JudgeConfig.from_env())[0]


def store_eval_set(db, items: Sequence[EvalItem], *, tasks: Sequence[str] = DEFAULT_TASKS,
                   make_judge: Callable[[], Judge] = judge_from_env, progress: bool | None = None) -> dict:
    """Store ``items`` and make their units; claims are decomposed only for items without any.

    ``make_judge`` (default: the environment's judge) is called only when some answer still needs
    decomposing.

    An item stored again with changed text gets new units (new versions); the old units stay,
    stale, with their labels, which never count for the new text (``workbench.store.versions``).

    Returns:
        ``{"items", "new_items", "new_units", "changed_units", "stale_labels", "judge", "failures"}``:
        ``changed_units`` counts units whose text changed (old version kept as stale),
        ``stale_labels`` the labels left on those old versions; ``judge`` is the fingerprint
        that decomposed answers (``None`` when none was needed); ``failures`` lists
        ``"<item id>: <error>"`` for answers that could not be decomposed (run again to retry).
    """
    tasks = tuple(tasks)
    before = Counter(unit.task for unit in store.list_units(db))
    stale_before = store.stale_label_count(db)
    item_counts = store.store_items(db, items)
    changed = len(set(item_counts["stale_units"]))
    changed += store.store_units(db, answer_units(items, tasks), source="answer")["changed"]
    fingerprint, failures = None, []
    if CLAIM_TASK in tasks:
        decomposed = store.items_with_claim_units(db)
        todo = [item for item in items if item.id not in decomposed]
        if todo:
            judge = make_judge()
            fingerprint = judge.fingerprint
            units, failures = decomposed_claim_units(judge, todo, progress=progress)
            changed += store.store_units(db, units, source=fingerprint)["changed"]
    after = Counter(unit.task for unit in store.list_units(db))
    return {"items": len(items), "new_items": item_counts["new"], "new_units": sum((after - before).values()),
            "changed_units": changed, "stale_labels": store.stale_label_count(db) - stale_before,
            "judge": fingerprint, "failures": failures}
