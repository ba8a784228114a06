"""Units are versions of text: the hash of what an annotator sees, and staleness when it changes.

A unit's identity is its slot ``(task, item_id, claim_index)`` plus ``text_hash``, the hash of the
text labelled. When an item is stored again with other text, the units whose hash no longer
matches become *stale* (``stale_at`` set): their labels and judgments stay attached to the old
text, are exported with it, and are never counted for the new text. The new text gets a new unit
(a new version) in the same slot; its ``unit_id`` is the slot id when that is free, else
``"<slot id>@<first 12 hex of the hash>"``.

What is hashed per task (``TASK_FIELDS``): always the task and the unit's own text (the claim,
the answer, or the passage), plus the item's question, and:

- ``claim_support``: the answer the claim came from and the passages' texts;
- ``answer_faithfulness``: the passages' texts;
- ``answer_correctness``: the reference answer;
- ``answer_relevance``, ``abstention``, ``context_relevance``: nothing more.

``text_hash`` is the first 16 hex digits of SHA-256 over the UTF-8 JSON array
``[task, question, unit text, answer or null, [passage texts] or null, reference or null]``
(``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``), so another tool can compute it.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from workbench.tasks import REGISTRY
from workbench.types import EvalItem

if TYPE_CHECKING:
    import sqlite_utils  # the label store's API; imported when a store is opened (it imports pandas)

HASH_HEX = 16
ID_HASH_HEX = 12

# which item fields besides the question and the unit's own text each task's label depends on
TASK_FIELDS: dict[str, tuple[str, ...]] = {task.name: task.hashed_fields for task in REGISTRY}


def text_hash(task: str, question: str, text: str, *, answer: str | None = None,
              passages: Sequence[str] | None = None, reference: str | None = None) -> str:
    """The hash of the text a label on a ``task`` unit is about (16 lowercase hex digits).

    Args:
        task: the label task; decides which of the optional fields count (``TASK_FIELDS``).
        question: the item's question.
        text: the unit's own text (claim, answer or passage).
        answer, passages, reference: the item's fields; ignored unless the task uses them.

    Returns:
        Equal strings exactly when every counted field is equal, character for character.
    """
    fields = TASK_FIELDS.get(task, ())
    payload = [
        task,
        question,
        text,
        answer if "answer" in fields else None,
        list(passages or ()) if "passages" in fields else None,
        reference if "reference" in fields else None,
    ]
    encoded = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(encoded).hexdigest()[:HASH_HEX]


def unit_text_hash(task: str, item: EvalItem, text: str) -> str:
    """``text_hash`` of a ``task`` unit with ``text`` made from ``item``."""
    return text_hash(task, item.question, text, answer=item.answer, passages=[p.text for p in item.contexts],
                     reference=item.reference)


def item_text_key(item: EvalItem) -> tuple:
    """Everything of an item a label can depend on: question, answer, passage texts, reference.

    Two items with equal keys show annotators the same text for every task.
    """
    return (item.question, item.answer, tuple(p.text for p in item.contexts), item.reference)


def version_id(slot_id: str, digest: str) -> str:
    """The ``unit_id`` of a later version of a slot: ``"<slot id>@<first 12 hex of the hash>"``."""
    return f"{slot_id}@{digest[:ID_HASH_HEX]}"


def unit_text_now(task: str, item: EvalItem, claim_index: int | None, stored_text: str) -> str | None:
    """The text a unit of this slot shows for ``item`` as it is now (``None``: the slot is gone).

    Answer-level units show the answer; ``context_relevance`` units the passage at their rank;
    claim units their own (decomposed) text.
    """
    if task == "context_relevance":
        rank = claim_index if claim_index is not None else -1
        return item.contexts[rank].text if 0 <= rank < len(item.contexts) else None
    if claim_index is None:
        return item.answer
    return stored_text


def mark_stale_units(db: sqlite_utils.Database, item: EvalItem, *, now: str) -> list[str]:
    """Mark the live units of ``item`` whose hash no longer matches its text stale; return their ids.

    Runs inside the caller's transaction. A unit already stale is left as it is.
    """
    stale = []
    for row in db["units"].rows_where("item_id = ? AND stale_at IS NULL", [item.id],
                                      select="unit_id, task, claim_index, text, text_hash"):
        text = unit_text_now(row["task"], item, row["claim_index"], row["text"])
        if text is None or unit_text_hash(row["task"], item, text) != row["text_hash"]:
            stale.append(row["unit_id"])
    if stale:
        marks = ",".join("?" * len(stale))
        # one statement for all of them: ``Table.update`` changes one row per call and reads the
        # schema twice each time (about 1 ms a row: seconds when a re-import changes many items)
        db.execute(f"UPDATE units SET stale_at = ? WHERE unit_id IN ({marks})", [now, *stale])
        db.table("leases").delete_where(f"unit_id IN ({marks})", stale)  # a stale unit is never handed out again
    return stale
