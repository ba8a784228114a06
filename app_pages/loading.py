"""Put an eval set into the label store from the app: what ``workbench labels add`` does, through
the shared ``workbench.labelling.store_eval_set`` (same units, claims decomposed once with the
configured judge, ``WORKBENCH_JUDGE``, default offline)."""
from __future__ import annotations

from collections.abc import Sequence

from workbench import cli_labels
from workbench.labelling import DEFAULT_TASKS, store_eval_set as _store_eval_set
from workbench.types import EvalItem


def store_eval_set(db, items: Sequence[EvalItem], *, tasks: Sequence[str] = DEFAULT_TASKS) -> dict:
    """Store ``items`` and make their units (see ``workbench.labelling.store_eval_set``)."""
    return _store_eval_set(db, items, tasks=tasks, make_judge=lambda: cli_labels._build_judge(None, None),
                           progress=False)
