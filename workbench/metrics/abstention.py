"""Abstention: refusals where refusing is right, and the mirror failure, false refusals."""
from __future__ import annotations

from collections.abc import Sequence


def abstention_summary(answerable: Sequence[bool], abstained: Sequence[bool]) -> dict:
    """Abstention rate on unanswerable items and false-refusal rate on answerable ones.

    Compares the judge's refusal verdicts (``abstained``) against the eval set's ``answerable``
    flags, item by item. Returns ``{"unanswerable", "abstention_rate", "answerable",
    "false_refusal_rate"}``; a rate whose denominator is 0 is ``None``. Both are always reported
    together, since either alone can be gamed (refuse everything / nothing).
    """
    if len(answerable) != len(abstained):
        raise ValueError("answerable and abstained must have the same length")
    unans = [a for ok, a in zip(answerable, abstained) if not ok]
    ans = [a for ok, a in zip(answerable, abstained) if ok]
    return {
        "unanswerable": len(unans),
        "abstention_rate": sum(unans) / len(unans) if unans else None,
        "answerable": len(ans),
        "false_refusal_rate": sum(ans) / len(ans) if ans else None,
    }
