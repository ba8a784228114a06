"""A judge and an embedder that answer ONLY from the judge cache: the two halves of a batch run.

``workbench score --batch`` (:mod:`workbench.batch.runner`) runs the ordinary pipeline several times with
these in place of :class:`~workbench.judges.openai_compat.OpenAICompatJudge` /
``OpenAICompatEmbedder``. They subclass those classes, so prompts, cache keys, parsers, fingerprint
and the reading of a cached reply are the interactive ones; only a cache MISS differs, by ``mode``:

- ``collect``: record the request the interactive judge would send (same prompt text, same cache
  key; :class:`PendingRequest`) and raise :class:`NotInCache` (a ``JudgeError``, so every metric
  records it and carries on; work that depends on the answer is simply not reached). The
  embedder records the missing texts and returns zero vectors (the records of a collecting pass
  are thrown away).
- ``estimate``: record it and answer with a placeholder (claims = the answer's sentences,
  verdicts unsupported, no refusal), so one pass reaches every later stage; used by
  ``--batch-dry-run`` to estimate the stages after the first.
- ``final``: make no call; raise ``JudgeError`` with the message the batch run recorded for this
  request (``failures``), so the item records the error exactly as an interactive failure would.

Nothing here sends a request: ``usage().calls`` stays 0.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.judges.base import JudgeError
from workbench.judges.cache import JudgeCache
from workbench.judges.openai_compat import OpenAICompatEmbedder, OpenAICompatJudge
from workbench.text import split_sentences

MODES = ("collect", "estimate", "final")
EMBEDDING_TASK = "embedding"

#: id of the item being scored (set per item by the batch driver; names requests in ``custom_id``)
CURRENT_ITEM: ContextVar[str | None] = ContextVar("workbench_batch_item", default=None)


class NotInCache(JudgeError):
    """Raised by a collecting judge on a cache miss (the request was recorded instead)."""


@dataclass
class PendingRequest:
    """One request a batch must answer.

    ``key`` is the interactive cache key; ``text`` the prompt (chat) or the text to embed;
    ``parse`` the interactive parser (``None`` for embeddings); ``item_id`` / ``index`` name the
    first item that needed it and its order among that item's requests of ``task``.
    """

    key: str
    task: str
    text: str
    json_mode: bool = False
    logprobs: bool = False
    logprob_key: str = "supported"
    parse: Callable[[str], Any] | None = None
    item_id: str | None = None
    index: int = 0

    @property
    def estimated_tokens(self) -> int:
        """Prompt tokens, estimated as characters / 4 (at least 1)."""
        return max(1, len(self.text) // 4)


class _Recorder:
    """Pending requests keyed by cache key (first requester wins), with per-item counters."""

    def __init__(self) -> None:
        self.pending: dict[str, PendingRequest] = {}
        self._counters: dict[tuple[str | None, str], int] = {}

    def record(self, request: PendingRequest) -> None:
        if request.key in self.pending:
            return
        item_id = CURRENT_ITEM.get()
        slot = (item_id, request.task)
        request.item_id, request.index = item_id, self._counters.get(slot, 0)
        self._counters[slot] = request.index + 1
        self.pending[request.key] = request

    def reset(self) -> None:
        self.pending = {}
        self._counters = {}


def _check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return mode


def _placeholder_reply(task: str, fields: Mapping[str, Any]) -> str:
    """A parseable stand-in reply for ``estimate`` mode (shapes only; never cached)."""
    if task == "decompose":
        return json.dumps({"claims": split_sentences(str(fields.get("answer", ""))) or ["placeholder claim"]})
    if task == "verify":
        return json.dumps({"quote": "NONE", "passage_id": "NONE", "supported": False, "reason": "estimate"})
    if task == "refusal":
        return json.dumps({"refusal": False})
    if task == "context_relevance":
        return json.dumps({"relevant": False, "reason": "estimate"})
    n = int(fields.get("n", 3) or 3)
    words = " ".join(str(fields.get("answer", "")).split()[:8])
    return "\n".join(f"What does it say about {words}, question {i + 1}?" for i in range(n))


class _CacheOnly:
    """What the cache-only judge and embedder share: a required cache, a mode, the given-up
    requests and a recorder of the requests still missing."""

    cache: JudgeCache | None

    def __init__(self, mode: str, failures: Mapping[str, str] | None) -> None:
        if self.cache is None:
            raise ValueError("a batch run needs the judge cache (it is where batch results go); drop --no-cache")
        self.mode = _check_mode(mode)
        self.failures = dict(failures or {})
        self.recorder = _Recorder()

    @property
    def pending(self) -> dict[str, PendingRequest]:
        return self.recorder.pending


class CacheOnlyJudge(_CacheOnly, OpenAICompatJudge):
    """The OpenAI-compatible judge with calls replaced by cache reads (see the module docstring).

    Args:
        config / client / cache / logprobs: as for ``OpenAICompatJudge`` (a cache is required).
        mode: ``collect``, ``estimate`` or ``final``.
        failures: ``{cache key: message}`` of requests the batch run gave up on (``final`` mode).
    """

    def __init__(self, config=None, *, client=None, cache: JudgeCache | None = None, logprobs: bool = True,
                 mode: str = "collect", failures: Mapping[str, str] | None = None) -> None:
        OpenAICompatJudge.__init__(self, config, client=client, cache=cache, logprobs=logprobs)
        _CacheOnly.__init__(self, mode, failures)

    async def _call(self, task: str, fields: dict[str, Any], key_input: dict[str, Any], parse: Callable[[str], Any],
                    *, json_mode: bool, logprobs: bool = False, logprob_key: str = "supported") -> tuple[Any, dict]:
        key = self.chat_cache_key(task, key_input, json_mode)
        hit = self._from_cache(key, parse)
        if hit is not None:
            return hit
        if self.mode == "final":
            self._ledger.failures += 1
            raise JudgeError(self.failures.get(key) or f"{task}: no batch result for this request")
        self.recorder.record(PendingRequest(key, task, self.prompts[task].render(**fields), json_mode, logprobs,
                                            logprob_key, parse))
        if self.mode == "estimate":
            return parse(_placeholder_reply(task, fields)), {}
        raise NotInCache(f"{task}: waiting for a batch result")


class CacheOnlyEmbedder(_CacheOnly, OpenAICompatEmbedder):
    """The OpenAI-compatible embedder with calls replaced by cache reads (per-text keys as interactive).

    In ``collect`` / ``estimate`` mode a missing text is recorded and its row is zeros; in ``final``
    mode any missing text raises ``JudgeError`` (the failure message recorded by the batch run).
    """

    coalescable = False  # its zero rows and per-call failures are per item: never merged

    def __init__(self, config=None, client=None, *, cache: JudgeCache | None = None, mode: str = "collect",
                 failures: Mapping[str, str] | None = None) -> None:
        OpenAICompatEmbedder.__init__(self, config, client, cache=cache)
        _CacheOnly.__init__(self, mode, failures)

    def text_key(self, text: str) -> str:
        """The interactive embedder's cache key for ``text``."""
        return self._key(text)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text from the cache, shape ``(len(texts), dim)``; ``(0, 0)`` for no texts."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, 0))
        assert self.cache is not None, "a cache-only embedder has a cache"
        rows, missing = self._cached_rows(texts)
        if missing:
            if self.mode == "final":
                self._ledger.failures += 1
                messages = [self.failures.get(self._key(t)) for t in missing]
                raise JudgeError(next((m for m in messages if m), "embeddings: no batch result for this text"))
            for text in missing:
                self.recorder.record(PendingRequest(self._key(text), EMBEDDING_TASK, text))
            dim = len(next(iter(rows.values()))) if rows else 1
            rows.update({text: [0.0] * dim for text in missing})
        return np.asarray([rows[t] for t in texts], dtype=float)
