"""EmbeddingBatcher: concurrent embed() calls share requests, each gets its own rows, failures stay per caller."""
from __future__ import annotations

import asyncio

import numpy as np

from workbench.judges.base import JudgeError
from workbench.scoring.embed_batch import EmbeddingBatcher


class RecordingEmbedder:
    """Vectors from a table; records every call's texts; may fail calls containing a given text."""

    fingerprint = "recording@test"

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.fail_on = fail_on

    async def embed(self, texts):
        texts = list(texts)
        self.calls.append(texts)
        await asyncio.sleep(0)
        if self.fail_on in texts:
            raise JudgeError(f"embeddings: {self.fail_on} failed")
        return np.asarray([[float(len(t)), float(sum(map(ord, t)) % 97)] for t in texts], dtype=float)

    def usage(self):
        return None


def test_concurrent_calls_share_one_request_and_get_their_own_rows():
    inner = RecordingEmbedder()
    batcher = EmbeddingBatcher(inner, window=0.01)

    async def run():
        return await asyncio.gather(batcher.embed(["a", "bb"]), batcher.embed(["ccc"]), batcher.embed(["bb", "a"]))

    results = asyncio.run(run())
    assert inner.calls == [["a", "bb", "ccc"]]  # one request, duplicates sent once
    alone = RecordingEmbedder()
    for texts, rows in zip((["a", "bb"], ["ccc"], ["bb", "a"]), results):
        assert np.array_equal(rows, asyncio.run(alone.embed(texts)))


def test_max_texts_sends_at_once_without_waiting_for_the_window():
    inner = RecordingEmbedder()
    batcher = EmbeddingBatcher(inner, window=60.0, max_texts=3)

    async def run():
        return await asyncio.wait_for(asyncio.gather(batcher.embed(["a", "b"]), batcher.embed(["c"])), timeout=5)

    asyncio.run(run())
    assert inner.calls == [["a", "b", "c"]]


def test_prefetched_text_is_not_sent_again():
    inner = RecordingEmbedder()
    batcher = EmbeddingBatcher(inner, window=0.01)

    async def run():
        batcher.prefetch("question")
        await asyncio.sleep(0.05)  # the prefetch went out on its own
        rows = await batcher.embed(["question", "reverse 1"])
        batcher.forget("question")
        return rows

    rows = asyncio.run(run())
    assert inner.calls == [["question"], ["reverse 1"]]
    assert np.array_equal(rows, asyncio.run(RecordingEmbedder().embed(["question", "reverse 1"])))
    assert batcher._prefetched == {}


def test_a_failed_shared_request_is_retried_per_caller_and_fails_only_its_own():
    inner = RecordingEmbedder(fail_on="bad")
    batcher = EmbeddingBatcher(inner, window=0.01)

    async def run():
        return await asyncio.gather(batcher.embed(["good"]), batcher.embed(["bad"]), return_exceptions=True)

    good, bad = asyncio.run(run())
    assert isinstance(bad, JudgeError) and "bad failed" in str(bad)
    assert good.shape == (1, 2)
    assert inner.calls[0] == ["good", "bad"] and sorted(map(tuple, inner.calls[1:])) == [("bad",), ("good",)]


def test_no_texts_passes_through():
    inner = RecordingEmbedder()
    rows = asyncio.run(EmbeddingBatcher(inner).embed([]))
    assert rows.shape[0] == 0
