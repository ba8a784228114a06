"""Per-item input limits: bounded memory and a bounded number of judge calls per item.

An eval-set item over a limit is an input error naming ``file:line`` and the field (checked by
``dataset.load_eval_set`` before anything is spent). Claims past ``max_claims`` per answer (or
reference) are not verified; the truncation is recorded on the item (``notes`` in
``items.jsonl``). The defaults, documented in ``docs/local-models.md``:

========================  =======  ==========================================================
limit                     default  why
========================  =======  ==========================================================
``max_question_chars``      4,000  a question, not a document
``max_answer_chars``       20,000  ~5k tokens: every answer prompt must fit a model's context
``max_reference_chars``    20,000  as the answer
``max_passage_chars``      20,000  one passage, ~5k tokens
``max_passages``              200  retrieved passages per item (one judgment call each)
``max_claims``                 64  claims verified per answer / reference statements per item
========================  =======  ==========================================================
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.types import EvalItem


@dataclass(frozen=True)
class InputLimits:
    """The per-item limits (see the module docstring for the defaults and why)."""

    max_question_chars: int = 4_000
    max_answer_chars: int = 20_000
    max_reference_chars: int = 20_000
    max_passage_chars: int = 20_000
    max_passages: int = 200
    max_claims: int = 64


DEFAULT_LIMITS = InputLimits()


def item_limit_problems(item, limits: InputLimits = DEFAULT_LIMITS) -> list[tuple[str, str]]:
    """``(field, message)`` for every limit one ``EvalItem`` exceeds; ``[]`` when within all."""
    out: list[tuple[str, str]] = []

    def check(field: str, text: str | None, limit: int, name: str) -> None:
        if text is not None and len(text) > limit:
            out.append((field, f"{len(text):,} characters, above the limit of {limit:,} for {name} "
                               "(split or shorten it; see docs/local-models.md, input limits)"))

    check("question", item.question, limits.max_question_chars, "a question")
    check("answer", item.answer, limits.max_answer_chars, "an answer")
    check("reference", item.reference, limits.max_reference_chars, "a reference")
    if len(item.contexts) > limits.max_passages:
        out.append(("contexts", f"{len(item.contexts)} passages, above the limit of {limits.max_passages} "
                                "per item (keep the top-ranked ones)"))
    for i, passage in enumerate(item.contexts):
        check(f"contexts[{i}]", passage.text, limits.max_passage_chars, "a passage")
    return out


def cap_claims(claims: list[str] | None, what: str, notes: list[str], *,
               limits: InputLimits = DEFAULT_LIMITS) -> list[str] | None:
    """The first ``max_claims`` claims; a note in ``notes`` when more were dropped."""
    if claims is None or len(claims) <= limits.max_claims:
        return claims
    notes.append(f"{what}: {len(claims)} claims, only the first {limits.max_claims} verified (input limit max_claims)")
    return claims[: limits.max_claims]


def over_limit(items: Iterable[EvalItem], limits: InputLimits = DEFAULT_LIMITS) -> list[tuple[EvalItem, str, str]]:
    """``(item, field, message)`` for every item over a limit, in order."""
    return [(item, field, message) for item in items for field, message in item_limit_problems(item, limits)]
