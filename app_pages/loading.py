"""Put an eval set into the label store from the app: what ``workbench labels add`` does.

``workbench/cli_labels.py`` keeps that logic inside its click command; this function reuses its
helpers (``answer_units``, ``claim_units``, the judge seam ``_build_judge``) so the app makes the
same units: answer-level units (text = the answer) per task, and claim units from decomposing
each answer once with the configured judge (``WORKBENCH_JUDGE``, default offline). Items that
already have claim units are not decomposed again.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from workbench import cli_labels, store
from workbench.types import EvalItem


def store_eval_set(db, items: Sequence[EvalItem], *, tasks: Sequence[str] = cli_labels.DEFAULT_TASKS) -> dict:
    """Store ``items`` and make their units; returns counts and any decomposition failures.

    Returns:
        ``{"items", "new_items", "new_units", "judge", "failures"}``: ``judge`` is the
        fingerprint that decomposed answers (``None`` when none was needed); ``failures`` lists
        ``"<item id>: <error>"`` for answers the judge could not decompose (run again to retry).
    """
    tasks = tuple(tasks)
    known = {item.id for item in store.list_items(db)}
    before = Counter(unit.task for unit in store.list_units(db))
    store.add_items(db, items)
    store.add_units(db, cli_labels.answer_units(items, tasks), source="answer")
    fingerprint, failures = None, []
    if cli_labels.CLAIM_TASK in tasks:
        decomposed = store.items_with_claim_units(db)
        todo = [item for item in items if item.id not in decomposed]
        if todo:
            from workbench.judges.base import run_sync

            judge = cli_labels._build_judge(None, None)
            fingerprint = judge.fingerprint
            results = run_sync(cli_labels._decompose_all(judge, todo))
            units = []
            for item, result in zip(todo, results):
                if isinstance(result, Exception):
                    failures.append(f"{item.id}: {type(result).__name__}: {result}")
                elif isinstance(result, BaseException):
                    raise result
                else:
                    units.extend(cli_labels.claim_units(item.id, result))
            store.add_units(db, units, source=fingerprint)
    after = Counter(unit.task for unit in store.list_units(db))
    return {
        "items": len(items),
        "new_items": sum(1 for item in items if item.id not in known),
        "new_units": sum((after - before).values()),
        "judge": fingerprint,
        "failures": failures,
    }
