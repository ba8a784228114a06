"""The judges and embedders satisfy the protocols they claim (``workbench.judges.base``).

Checked twice: at run time with ``isinstance`` against the runtime-checkable protocols (which
capabilities the pipeline finds on each backend), and statically by pyright through the
annotated assignments in ``_static_claims`` (a class that stops satisfying a protocol it is
assigned to fails the type check; the function is never called).
"""
from __future__ import annotations

import dataclasses

import pytest

from workbench.batch.judge import CacheOnlyEmbedder, CacheOnlyJudge
from workbench.config import JudgeConfig
from workbench.judges.base import (
    BatchVerifier,
    CoalescableEmbedder,
    ContextJudge,
    DeclaresScores,
    Embedder,
    FailsFast,
    Judge,
    KeepsUsage,
    NotesReverseQuestions,
    ReportsEndpoint,
)
from workbench.judges.cache import JudgeCache
from workbench.judges.offline import OfflineEmbedder, OfflineJudge
from workbench.judges.openai_compat import OpenAICompatEmbedder, OpenAICompatJudge
from workbench.judges.scripted import ScriptedEmbedder, ScriptedJudge
from workbench.scoring.embed_batch import EmbeddingBatcher

# no call is made: the client is built on the first call, and nothing here calls
CONFIG = JudgeConfig(backend="openai", model="judge-m", embedding_model="embed-m",
                     base_url="http://127.0.0.1:9/v1", use_cache=False)

_scripted: Judge = ScriptedJudge()
_scripted_embedder: Embedder = ScriptedEmbedder({})


def _static_claims(offline: OfflineJudge, offline_embedder: OfflineEmbedder, remote: OpenAICompatJudge,
                   remote_embedder: OpenAICompatEmbedder, cache_only: CacheOnlyJudge,
                   cache_only_embedder: CacheOnlyEmbedder, batcher: EmbeddingBatcher) -> None:
    """Never called: pyright checks that each class is assignable to the protocols it claims."""
    judges: list[Judge] = [offline, remote, cache_only]
    context: list[ContextJudge] = [offline, remote, cache_only]
    batched: list[BatchVerifier] = [offline, remote, cache_only]
    fail_fast: list[FailsFast] = [remote, cache_only]
    endpoint: list[ReportsEndpoint] = [remote, cache_only]
    declares: list[DeclaresScores] = [offline]
    notes: list[NotesReverseQuestions] = [offline]
    embedders: list[Embedder] = [offline_embedder, remote_embedder, cache_only_embedder, batcher]
    coalescable: list[CoalescableEmbedder] = [remote_embedder, cache_only_embedder]
    ledgers: list[KeepsUsage] = [offline, remote, cache_only, remote_embedder, cache_only_embedder, batcher]
    del judges, context, batched, fail_fast, endpoint, declares, notes, embedders, coalescable, ledgers


JUDGE_CAPABILITIES = (ContextJudge, BatchVerifier, FailsFast, ReportsEndpoint, NotesReverseQuestions, DeclaresScores,
                      KeepsUsage)


def _backends(tmp_path):
    cached = dataclasses.replace(CONFIG, use_cache=True)
    cache = JudgeCache(tmp_path / "cache.db")
    return {
        "scripted": ScriptedJudge(),
        "offline": OfflineJudge(),
        "openai": OpenAICompatJudge(CONFIG),
        "cache-only": CacheOnlyJudge(cached, cache=cache),
        "scripted-embedder": ScriptedEmbedder({}),
        "offline-embedder": OfflineEmbedder(),
        "openai-embedder": OpenAICompatEmbedder(CONFIG),
        "cache-only-embedder": CacheOnlyEmbedder(cached, cache=cache),
        "batcher": EmbeddingBatcher(ScriptedEmbedder({})),
    }


@pytest.fixture(scope="module")
def backends(tmp_path_factory):
    return _backends(tmp_path_factory.mktemp("protocols"))


@pytest.mark.parametrize(("name", "claimed"), [
    ("scripted", {KeepsUsage}),
    ("offline", {ContextJudge, BatchVerifier, NotesReverseQuestions, DeclaresScores, KeepsUsage}),
    ("openai", {ContextJudge, BatchVerifier, FailsFast, ReportsEndpoint, KeepsUsage}),
    ("cache-only", {ContextJudge, BatchVerifier, FailsFast, ReportsEndpoint, KeepsUsage}),
])
def test_every_judge_is_a_judge_with_exactly_its_optional_capabilities(backends, name, claimed):
    judge = backends[name]
    assert isinstance(judge, Judge) and not isinstance(judge, Embedder)
    found = {p for p in JUDGE_CAPABILITIES if isinstance(judge, p)}
    assert found == claimed, sorted(p.__name__ for p in found ^ claimed)


@pytest.mark.parametrize(("name", "usage", "coalescable"), [
    ("scripted-embedder", False, None),
    ("offline-embedder", False, None),
    ("openai-embedder", True, True),
    ("cache-only-embedder", True, False),  # its zero rows are per item: never merged
    ("batcher", True, None),
])
def test_every_embedder_is_an_embedder_and_says_whether_it_may_be_merged(backends, name, usage, coalescable):
    embedder = backends[name]
    assert isinstance(embedder, Embedder) and not isinstance(embedder, Judge)
    assert isinstance(embedder, KeepsUsage) is usage
    if coalescable is None:
        assert not isinstance(embedder, CoalescableEmbedder)
    else:
        assert isinstance(embedder, CoalescableEmbedder) and embedder.coalescable is coalescable


def test_a_fresh_remote_judge_has_no_fatal_error_and_reports_its_endpoint(backends):
    judge = backends["openai"]
    assert isinstance(judge, FailsFast) and judge.fatal is None
    assert isinstance(judge, ReportsEndpoint) and (judge.timeouts, judge.truncated) == (0, 0)
