"""``ScriptedJudge``: a judge whose replies are queued by a test, recording every call.

Use it to test metric logic without any backend::

    judge = ScriptedJudge()
    judge.enqueue("decompose", ["Paris is in France."])
    judge.enqueue("verify", ClaimVerdict("Paris is in France.", True, 1.0, quote="Paris is in France"))
    await faithfulness(item, judge)
    judge.history  # [("decompose", (...)), ("verify", (...))]

An ``Exception`` instance queued as a reply is raised instead of returned. When a queue for a
method is empty, the method's ``default`` (``set_default``) is used, or ``AssertionError`` raised.
"""
from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.types import ClaimVerdict, JudgeUsage, Passage


class ScriptedJudge:
    """A `Judge` that replays queued answers per method and records ``history``."""

    def __init__(self, fingerprint: str = "scripted@test") -> None:
        self.fingerprint = fingerprint
        self._queues: dict[str, deque] = defaultdict(deque)
        self._defaults: dict[str, Any] = {}
        self.history: list[tuple[str, tuple]] = []
        self._calls = 0

    def enqueue(self, method: str, *replies: Any) -> ScriptedJudge:
        self._queues[method].extend(replies)
        return self

    def set_default(self, method: str, reply: Any) -> ScriptedJudge:
        self._defaults[method] = reply
        return self

    def _next(self, method: str, args: tuple) -> Any:
        self.history.append((method, args))
        self._calls += 1
        if self._queues[method]:
            reply = self._queues[method].popleft()
        elif method in self._defaults:
            reply = self._defaults[method]
        else:
            raise AssertionError(f"ScriptedJudge: no reply queued for {method}{args!r}")
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply) and not isinstance(reply, (ClaimVerdict, list, bool, str)):
            reply = reply(*args)
        return reply

    async def decompose(self, answer: str) -> list[str]:
        return list(self._next("decompose", (answer,)))

    async def verify(self, claim: str, passages: Sequence[Passage]) -> ClaimVerdict:
        return self._next("verify", (claim, tuple(passages)))

    async def reverse_questions(self, answer: str, n: int) -> list[str]:
        return list(self._next("reverse_questions", (answer, n)))

    async def is_refusal(self, answer: str) -> bool:
        return bool(self._next("is_refusal", (answer,)))

    def usage(self) -> JudgeUsage:
        return JudgeUsage(calls=self._calls)


class ScriptedEmbedder:
    """An `Embedder` from a fixed ``{text: vector}`` table (unknown texts embed to zeros)."""

    fingerprint = "scripted-embedder"

    def __init__(self, table: dict[str, Sequence[float]], dim: int | None = None) -> None:
        self.table = {k: np.asarray(v, dtype=float) for k, v in table.items()}
        self.dim = dim or (len(next(iter(self.table.values()))) if self.table else 2)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table.get(t, np.zeros(self.dim)) for t in texts]) if texts else np.zeros((0, self.dim))
