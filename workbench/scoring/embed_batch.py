"""One embeddings request for many items: an ``Embedder`` wrapper that coalesces calls.

Every ``embed`` call made within ``window`` seconds of the first pending one (or until
``max_texts`` texts are waiting) travels in ONE call to the wrapped embedder, which chunks it into
requests of at most its own batch size. Each caller gets exactly the rows of its own texts, so
the vectors are the ones it would have got alone. ``prefetch(text)`` starts a text's embedding
early (the question, before its reverse questions exist); the next ``embed`` asking for that text
reuses the prefetched row instead of sending the text again.

If a coalesced call fails (``JudgeError``), each caller's texts are sent again on their own, so a
failure stays with the item that caused it, as without coalescing.
"""
from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from workbench.judges.base import Embedder, JudgeError, KeepsUsage
from workbench.types import JudgeUsage

DEFAULT_WINDOW = 0.05
DEFAULT_MAX_TEXTS = 256


class EmbeddingBatcher:
    """Coalesce the ``embed`` calls of concurrent items into few requests (satisfies ``Embedder``).

    Args:
        inner: the embedder that makes the calls (its cache, ledger and limiter are used as is).
        window: seconds a first pending call waits for others to join it.
        max_texts: a batch is sent at once when this many texts are waiting.
    """

    def __init__(self, inner: Embedder, *, window: float = DEFAULT_WINDOW, max_texts: int = DEFAULT_MAX_TEXTS) -> None:
        self.inner = inner
        self.fingerprint = inner.fingerprint
        self.window = window
        self.max_texts = max(1, max_texts)
        self._pending: list[tuple[list[str], asyncio.Future]] = []
        self._n_pending = 0
        self._timer: asyncio.TimerHandle | None = None
        self._prefetched: dict[str, asyncio.Future] = {}
        self._tasks: set[asyncio.Task] = set()

    def usage(self) -> JudgeUsage:
        """The wrapped embedder's cost ledger (empty when it keeps none)."""
        return self.inner.usage() if isinstance(self.inner, KeepsUsage) else JudgeUsage()

    # -- requests ----------------------------------------------------------------------------
    def _submit(self, texts: list[str]) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._pending.append((texts, future))
        self._n_pending += len(texts)
        if self._n_pending >= self.max_texts:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self.window, self._flush)
        return future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending, self._n_pending = self._pending, [], 0
        if batch:
            task = asyncio.ensure_future(self._run(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, batch: list[tuple[list[str], asyncio.Future]]) -> None:
        texts = list(dict.fromkeys(t for group, _ in batch for t in group))
        try:
            matrix = await self.inner.embed(texts)
        except JudgeError:
            await asyncio.gather(*(self._alone(group, future) for group, future in batch))
            return
        except BaseException as exc:  # a bug: every caller sees it
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        index = {t: i for i, t in enumerate(texts)}
        for group, future in batch:
            if not future.done():
                future.set_result(matrix[[index[t] for t in group]])

    async def _alone(self, texts: list[str], future: asyncio.Future) -> None:
        try:
            rows = await self.inner.embed(texts)
        except Exception as exc:  # noqa: BLE001 - handed to the caller
            if not future.done():
                future.set_exception(exc)
            return
        if not future.done():
            future.set_result(rows)

    # -- the Embedder protocol and prefetching -----------------------------------------------
    def prefetch(self, text: str) -> None:
        """Start embedding ``text`` now; a later ``embed`` of it reuses the row."""
        if text not in self._prefetched:
            self._prefetched[text] = self._submit([text])

    def forget(self, text: str) -> None:
        """Drop a prefetched row (call when its item is done, so rows do not pile up)."""
        future = self._prefetched.pop(text, None)
        if future is not None:
            if future.done() and not future.cancelled():
                future.exception()  # retrieved: an unused failure is not reported as lost
            else:
                future.add_done_callback(lambda f: f.cancelled() or f.exception())

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, shape ``(len(texts), dim)``, as the wrapped embedder gives them."""
        texts = list(texts)
        if not texts:
            return await self.inner.embed(texts)
        early = {t: self._prefetched[t] for t in dict.fromkeys(texts) if t in self._prefetched}
        rest = [t for t in dict.fromkeys(texts) if t not in early]
        waits = [asyncio.shield(f) for f in early.values()]
        if rest:
            waits.append(self._submit(rest))
        results = await asyncio.gather(*waits)
        rows: dict[str, np.ndarray] = {}
        for text, matrix in zip(early, results):
            rows[text] = matrix[0]
        if rest:
            rows.update(zip(rest, results[-1]))
        return np.asarray([rows[t] for t in texts], dtype=float)
