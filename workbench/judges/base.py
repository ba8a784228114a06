"""The ``Judge`` and ``Embedder`` protocols every backend satisfies, and the fingerprint.

A judge is async: metrics ``await`` it, and one sync wrapper (``run_sync``) serves the CLI and app.
A judge call that still fails after its retries raises ``JudgeError``; metrics catch it and record
it on the item, so one bad call never kills a run.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from workbench.types import ClaimVerdict, ContextVerdict, JudgeUsage, Passage


class JudgeError(RuntimeError):
    """A judge call that failed after all retries (timeout, HTTP error, unparseable output)."""


@runtime_checkable
class Judge(Protocol):
    """What every judge backend provides.

    ``fingerprint`` names everything that changes verdicts (backend, model, endpoint host,
    prompt hashes, decoding parameters) and nothing that does not (retries, timeouts, concurrency).
    """

    fingerprint: str

    async def decompose(self, answer: str) -> list[str]:
        """Split an answer into standalone atomic claims (citation markers removed)."""
        ...

    async def verify(self, claim: str, passages: Sequence[Passage]) -> ClaimVerdict:
        """Judge one claim against the passages, in its own call.

        Returns supported, a score in [0, 1], the supporting quote (or ``None`` for NONE) and the
        passage id. ``quote_found`` is left ``None``: the metric locates the quote in code.
        """
        ...

    async def reverse_questions(self, answer: str, n: int) -> list[str]:
        """Write up to ``n`` questions the answer answers, reading only the answer."""
        ...

    async def is_refusal(self, answer: str) -> bool:
        """True when the answer declines to answer (abstains)."""
        ...

    def usage(self) -> JudgeUsage:
        """Cost ledger so far."""
        ...


@runtime_checkable
class ContextJudge(Protocol):
    """Optional judge capability: is one retrieved passage useful for the question?

    Reads the question and ONE passage only (never the answer). Used by context precision.
    """

    async def judge_context(self, question: str, passage: Passage) -> ContextVerdict:
        ...


@runtime_checkable
class BatchVerifier(Protocol):
    """Optional judge capability: verify several claims against the same passages in one call.

    Used only by ``workbench judge --verify-mode batched`` (a measured alternative); ``score``
    always verifies one claim per call. Returns one verdict per claim, in order.
    """

    async def verify_batch(self, claims: Sequence[str], passages: Sequence[Passage]) -> list[ClaimVerdict]:
        ...


@runtime_checkable
class FailsFast(Protocol):
    """Optional judge capability: ``fatal`` is the error that made the endpoint unusable on the
    first call (401/403/404, nothing listening; every later call would fail the same way), else
    ``None``. A run stops on it instead of recording the same failure on every item."""

    @property
    def fatal(self) -> Exception | None: ...


@runtime_checkable
class ReportsEndpoint(Protocol):
    """Optional judge capability: what a remote judge learnt about its endpoint during a run
    (calls that timed out, replies cut at the token limit, the JSON mode the endpoint accepted),
    added to ``summary["judge"]`` under the same names."""

    @property
    def timeouts(self) -> int: ...

    @property
    def truncated(self) -> int: ...

    @property
    def response_format(self) -> str | None: ...


@runtime_checkable
class NotesReverseQuestions(Protocol):
    """Optional judge capability: a sentence saying how the judge's reverse questions are made,
    when not by asking a model (kept as the relevance result's ``note``)."""

    @property
    def reverse_question_note(self) -> str: ...


#: The scores a judge produces for ``workbench score`` (the keys of a score declaration).
DECLARED_SCORES = ("faithfulness", "answer_relevance", "abstention")
SCORE_KINDS = ("measurement", "placeholder")


@dataclass(frozen=True)
class ScoreDeclaration:
    """What one of a judge's scores is worth.

    ``kind`` is ``"measurement"`` (the score tracks what it names; calibrate its threshold on your
    labels) or ``"placeholder"`` (a baseline with no useful signal, kept so a run completes:
    pass rates and quadrants built on it are not measurements). ``note`` says why, in one
    sentence; ``evidence`` holds the measured figures behind the claim (e.g. ``{"auc": 0.6,
    "n": 400, "data": ...}``), empty when none were measured.
    """

    kind: str
    note: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in SCORE_KINDS:
            raise ValueError(f"ScoreDeclaration.kind: expected one of {SCORE_KINDS}, got {self.kind!r}")


@runtime_checkable
class DeclaresScores(Protocol):
    """Optional judge capability: say, per score in :data:`DECLARED_SCORES`, whether it is a
    measurement or a placeholder. A judge without it makes no claim (its scores count as
    measurements, to be calibrated like any other)."""

    def score_declarations(self) -> dict[str, ScoreDeclaration]:
        ...


def placeholder_scores(judge: object) -> dict[str, ScoreDeclaration]:
    """The scores ``judge`` declares placeholders, in :data:`DECLARED_SCORES` order (``{}`` when
    it declares nothing)."""
    if not isinstance(judge, DeclaresScores):
        return {}
    declared = judge.score_declarations()
    return {name: declared[name] for name in DECLARED_SCORES
            if name in declared and declared[name].kind == "placeholder"}


@runtime_checkable
class KeepsUsage(Protocol):
    """Optional capability of a judge or embedder: a ledger of calls and tokens (``usage()``)."""

    def usage(self) -> JudgeUsage: ...


@runtime_checkable
class Embedder(Protocol):
    """Text embedder used for answer relevance."""

    fingerprint: str

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one row per text, shape ``(len(texts), dim)`` (not necessarily normalised)."""
        ...


@runtime_checkable
class CoalescableEmbedder(Protocol):
    """Optional embedder capability: ``coalescable`` says whether concurrent ``embed`` calls may be
    merged into shared requests (``workbench.scoring.embed_batch.EmbeddingBatcher``). An embedder
    without the attribute is never merged."""

    @property
    def coalescable(self) -> bool: ...


def embedder_fingerprint(embedder: object, default: str | None = None) -> str | None:
    """The fingerprint of ``embedder`` when it is an :class:`Embedder`, else ``default``."""
    return embedder.fingerprint if isinstance(embedder, Embedder) else default


def fingerprint(parts: dict[str, Any]) -> str:
    """A short readable fingerprint: ``<backend>:<model>@<hash of all parts>``.

    ``parts`` must hold only what changes verdicts (never keys, retries, timeouts, concurrency).
    """
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:12]
    backend = parts.get("backend", "judge")
    model = parts.get("model")
    return f"{backend}:{model}@{digest}" if model else f"{backend}@{digest}"


def combined_usage(*backends: object) -> JudgeUsage:
    """The cost ledger of a run: the sum over the judge and the embedder (those keeping one)."""
    parts: list[JudgeUsage] = [b.usage() for b in backends if isinstance(b, KeepsUsage)]
    return JudgeUsage(**{f: sum(getattr(p, f) for p in parts) for f in JudgeUsage.__dataclass_fields__})


def cosine_similarities(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of ``matrix`` to ``vector``; 0 where a norm is 0."""
    matrix = np.asarray(matrix, dtype=float)
    vector = np.asarray(vector, dtype=float)
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(vector)
    dots = matrix @ vector
    with np.errstate(divide="ignore", invalid="ignore"):
        sims = np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0)
    return np.clip(sims, -1.0, 1.0)


def run_sync(coro):
    """Run a coroutine from sync code (CLI, app); works whether or not a loop is already running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
