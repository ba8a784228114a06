"""The offline judge: a deterministic BASELINE to be calibrated, not an LLM.

No network, no model downloads, same output for the same input on every machine. It exists so
the workbench runs end to end without an API key and so calibration has a cheap reference point;
expect it to miss paraphrases and subtle contradictions that an LLM judge catches. Calibrate its
threshold on your own labels (``workbench calibrate``) before trusting its pass rates.

- ``decompose``: the answer's sentences (``text.split_sentences``: newlines and bullets first,
  then blingfire), citation markers stripped, empty and pure-citation pieces dropped.
- ``verify``: lexical features of the claim against the passages (``offline_features``: content
  word coverage in the best sentence, best passage and all passages pooled; a number the passages
  lack; claim length; a negation mismatch) combined by a small logistic model whose weights live
  in ``offline_model.json`` (fitted by ``scripts/fit_offline_judge.py`` on half of the shipped
  WiCE + BEGIN labels; held-out agreement is recorded in that file). ``score`` is the model's
  probability; ``supported`` is ``score >= threshold`` (0.5, class-balanced fit). The quote is
  the best-matching passage sentence, always a genuine substring of its passage.
- ``reverse_questions``: see the method (it cannot write questions).
- ``is_refusal``: ``refusal.RefusalDetector``, a small logistic model over the bundled sentence
  embedding of the answer's head plus lexical cues (first person + inability, "not in / not
  covered by the documents", false-premise rejections, apology + refusal, ...), weights in
  ``refusal_model.json`` (fitted by ``scripts/fit_refusal_detector.py``; held-out figures are
  recorded in that file and printed by the script). ``refusal_score`` gives its probability.
- ``OfflineEmbedder``: bundled ``wordllama`` static embeddings (256 dimensions), used for answer
  relevance.
- ``score_declarations``: faithfulness and abstention are measurements (baselines, with their
  held-out agreement); answer relevance is a PLACEHOLDER: with the answer's own sentences in place
  of generated questions it barely separates relevant from irrelevant answers on ALCE's human
  ratings. Its AUC, measured by ``scripts/measure_offline_relevance.py``, is stored in
  ``offline_relevance_baseline.json`` and goes into ``summary.json`` (``placeholders``).
"""
from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from workbench.jsonl import read_json_object
from workbench.judges.base import ScoreDeclaration
from workbench.judges.base import fingerprint as make_fingerprint
from workbench.judges.embedder import WORDLLAMA_DIM, WORDLLAMA_MODEL, OfflineEmbedder  # noqa: F401  (re-exported)
from workbench.judges.offline_features import (
    FEATURE_NAMES,
    FEATURE_VERSION,
    build_index,
    claim_features,
    content_stems,
    tokens,
)
from workbench.judges.refusal import RefusalDetector
from workbench.text import split_sentences, strip_citations
from workbench.types import ClaimVerdict, ContextVerdict, JudgeUsage, Passage

#: Question words that carry no topic (left out of context-relevance coverage).
QUESTION_WORDS = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "why", "how", "many", "much",
                            "doe", "did", "can", "could", "would", "should", "tell", "explain", "describe"})

DEFAULT_MODEL_PATH = Path(__file__).resolve().parent / "offline_model.json"
#: Offline answer relevance measured against people (written by scripts/measure_offline_relevance.py).
DEFAULT_RELEVANCE_BASELINE_PATH = Path(__file__).resolve().parent / "offline_relevance_baseline.json"

__all__ = ["DEFAULT_MODEL_PATH", "OfflineEmbedder", "OfflineJudge", "LogisticModel", "load_model"]


class LogisticModel:
    """``p = sigmoid(bias + weights . features)`` over ``offline_features.FEATURE_NAMES``."""

    def __init__(self, weights: Sequence[float], bias: float, threshold: float, sha256: str) -> None:
        self.weights = np.asarray(weights, dtype=float)
        self.bias = float(bias)
        self.threshold = float(threshold)
        self.sha256 = sha256

    def probability(self, values: Sequence[float]) -> float:
        z = self.bias + float(np.dot(self.weights, np.asarray(values, dtype=float)))
        return 1.0 / (1.0 + math.exp(-z)) if z >= -700 else 0.0


def load_model(path: str | Path | None = None) -> LogisticModel:
    """Load the logistic weights file; its sha256 goes into the judge fingerprint.

    Raises:
        ValueError: naming the file and field when the file does not match the feature set.
    """
    path = Path(path) if path is not None else DEFAULT_MODEL_PATH
    raw, spec = read_json_object(path)
    if spec.get("features") != list(FEATURE_NAMES):
        raise ValueError(f"{path}: field 'features': expected {list(FEATURE_NAMES)}, got {spec.get('features')!r}")
    if spec.get("feature_version") != FEATURE_VERSION:
        raise ValueError(f"{path}: field 'feature_version': expected {FEATURE_VERSION!r} "
                         f"(refit with scripts/fit_offline_judge.py), got {spec.get('feature_version')!r}")
    weights = spec.get("weights")
    if not isinstance(weights, list) or len(weights) != len(FEATURE_NAMES):
        raise ValueError(f"{path}: field 'weights': expected {len(FEATURE_NAMES)} numbers, got {weights!r}")
    return LogisticModel(weights, spec.get("bias", 0.0), spec.get("threshold", 0.5), hashlib.sha256(raw).hexdigest())


# --------------------------------------------------------------------------------------------
# Embedder
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Judge
# --------------------------------------------------------------------------------------------


def decompose_text(answer: str) -> list[str]:
    """The answer's sentences with citation markers stripped; empty and pure-citation pieces dropped."""
    claims = []
    for sentence in split_sentences(answer or ""):
        stripped = strip_citations(sentence)
        if any(ch.isalnum() for ch in stripped):
            claims.append(stripped)
    return claims


class OfflineJudge:
    """Deterministic lexical judge satisfying ``workbench.judges.base.Judge`` (a baseline, not an LLM).

    Args:
        embedder: Kept for callers that share one embedder between judge and relevance metric;
            ``verify`` does not use embeddings (they added little on the shipped data).
        model_path: The logistic weights file (default: the bundled ``offline_model.json``).
        refusal_model_path: The refusal detector's weights (default: the bundled ``refusal_model.json``).
    """

    def __init__(self, embedder: OfflineEmbedder | None = None, model_path: str | Path | None = None,
                 refusal_model_path: str | Path | None = None) -> None:
        self.embedder = embedder
        self.model_path = Path(model_path) if model_path is not None else DEFAULT_MODEL_PATH
        self.refusal_model_path = refusal_model_path
        self.model = load_model(model_path)
        self.refusal = RefusalDetector((embedder or OfflineEmbedder()).embed_sync, refusal_model_path)
        self.threshold = self.model.threshold
        self.fingerprint = make_fingerprint({
            "backend": "offline",
            "model": "lexical-logistic",
            "weights_sha256": self.model.sha256,
            "feature_version": FEATURE_VERSION,
            "embedder": WORDLLAMA_MODEL,
            "refusal_weights_sha256": self.refusal.model.sha256,
        })
        self._calls = 0
        self._lock = threading.Lock()

    def _count(self) -> None:
        with self._lock:
            self._calls += 1

    async def decompose(self, answer: str) -> list[str]:
        """Split ``answer`` into sentences (newlines/bullets, then blingfire), citations stripped."""
        self._count()
        return decompose_text(answer)

    async def verify(self, claim: str, passages: Sequence[Passage]) -> ClaimVerdict:
        """Judge one claim against the passages (see :meth:`verify_sync`)."""
        return self.verify_sync(claim, passages)

    def verify_sync(self, claim: str, passages: Sequence[Passage]) -> ClaimVerdict:
        """Score ``claim`` against ``passages`` with the logistic model over lexical features.

        Returns ``score`` = model probability in [0, 1], ``supported`` = ``score >= threshold``,
        ``quote`` = the passage sentence covering most of the claim's content words (a genuine
        substring of ``passage_id``'s text; ``None`` when no sentence shares a content word),
        ``reason`` listing the feature values. No passages (or only empty ones): unsupported,
        score 0, quote ``None``. ``quote_found`` is left ``None`` for the metric to check.
        """
        self._count()
        index = build_index(tuple(passages))
        if not index.sentences:
            return ClaimVerdict(claim=claim, supported=False, score=0.0, reason="no passage text to check against")
        features = claim_features(claim, index)
        score = self.model.probability(features.values)
        quote = passage_id = None
        if features.best is not None:
            passage = index.passages[features.best.passage_index]
            quote = passage.text[features.best.start:features.best.end]
            passage_id = passage.id
        reason = "offline baseline: " + ", ".join(f"{k}={v:.2f}" for k, v in features.as_dict().items())
        return ClaimVerdict(claim=claim, supported=score >= self.threshold, score=score, quote=quote,
                            passage_id=passage_id, reason=reason)

    async def verify_batch(self, claims: Sequence[str], passages: Sequence[Passage]) -> list[ClaimVerdict]:
        """Batched mode for the offline judge: each claim is scored independently anyway, so the
        verdicts equal per-claim ones (a deterministic baseline has no shared-context errors)."""
        return [self.verify_sync(claim, passages) for claim in claims]

    async def reverse_questions(self, answer: str, n: int) -> list[str]:
        """NOT questions: the offline judge cannot write questions.

        Returns the answer's own first ``n`` sentences (citation markers stripped), so the
        relevance metric compares the answer's sentences with the question instead of generated
        questions with the question. An empty answer (or ``n <= 0``) gives ``[]``.
        """
        self._count()
        return decompose_text(answer)[: max(n, 0)]

    #: Shown by the relevance metric: what the offline judge's "reverse questions" really are.
    reverse_question_note = "offline judge: the answer's own sentences stand in for generated questions"

    async def judge_context(self, question: str, passage: Passage) -> ContextVerdict:
        """Is ``passage`` useful for answering ``question``? An APPROXIMATION, not an LLM reading.

        Score = share of the question's content words (stop and question words out, light
        stemming) found in the passage, in [0, 1]; relevant when the score is at least 0.5.
        A question with no content words scores 0. Never sees the answer.
        """
        self._count()
        wanted = {w for w in content_stems(tokens(question)) if w not in QUESTION_WORDS}
        if not wanted:
            return ContextVerdict(passage.id, False, 0.0, reason="offline: question has no content words")
        have = content_stems(tokens(passage.text))
        score = len(wanted & have) / len(wanted)
        return ContextVerdict(passage.id, score >= 0.5, score,
                              reason=f"offline: {len(wanted & have)}/{len(wanted)} question content words in passage")

    async def is_refusal(self, answer: str) -> bool:
        """True when :meth:`refusal_score` is at least the detector's threshold (the one the fitting
        script chose, stored in the weights file); an empty answer is a refusal."""
        self._count()
        return self.refusal.is_refusal(answer)

    async def refusal_score(self, answer: str) -> float:
        """Probability in [0, 1] that ``answer`` declines to answer (``refusal.RefusalDetector``);
        1.0 for an empty answer."""
        self._count()
        return self.refusal.score(answer)

    def score_declarations(self) -> dict[str, ScoreDeclaration]:
        """Per score, measurement or placeholder, with the measured figures behind the claim.

        Answer relevance is a placeholder (its AUC against ALCE human ratings comes from
        ``offline_relevance_baseline.json``); faithfulness and abstention are measurements, with
        the held-out agreement recorded in their weights files.
        """
        return offline_score_declarations(self.model_path, self.refusal_model_path)

    def usage(self) -> JudgeUsage:
        """Calls counted (every method call); no tokens, no cache, no failures."""
        return JudgeUsage(calls=self._calls)


def offline_score_declarations(model_path: Path = DEFAULT_MODEL_PATH, refusal_model_path: str | Path | None = None,
                               relevance_path: Path = DEFAULT_RELEVANCE_BASELINE_PATH) -> dict[str, ScoreDeclaration]:
    """The offline judge's declarations, read from the bundled figure files (see
    :meth:`OfflineJudge.score_declarations`). A missing or unreadable figure file leaves that
    score's ``evidence`` empty and says so in its note; the kinds do not change."""
    from workbench.judges.refusal import DEFAULT_REFUSAL_MODEL_PATH

    def read(path: str | Path) -> dict[str, Any]:
        try:
            return json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    relevance = read(relevance_path)
    auc = relevance.get("auc")
    rel_note = ("offline baseline: the answer's own sentences stand in for generated questions; "
                + (f"AUC {auc:.2f} (kappa {relevance.get('kappa_at_default_threshold', float('nan')):.2f} at the "
                   f"default threshold) against human relevance ratings on ALCE (n={relevance.get('n')}), "
                   f"measured by {relevance.get('command', 'scripts/measure_offline_relevance.py')}"
                   if auc is not None else "its agreement with people was not measured (figure file missing)"))
    faith = read(model_path).get("fit", {}).get("held_out", {}).get("all", {})
    faith_note = ("offline baseline (lexical logistic model): "
                  + (f"held-out kappa {faith['kappa']:.2f} on WiCE + BEGIN human labels (n={faith['n']})"
                     if "kappa" in faith else "held-out agreement not recorded"))
    refusal = read(refusal_model_path or DEFAULT_REFUSAL_MODEL_PATH).get("held_out", {})
    rag = refusal.get("rag_test", {}).get("model", {})
    xs = refusal.get("xstest_heldout_pooled", {}).get("model", {})
    refusal_note = ("refusal detector (embedding + cues logistic model): "
                    + (f"held-out RAG abstentions recall {rag['recall']:.2f}, specificity {rag['specificity']:.2f}; "
                       f"XSTest kappa {xs['kappa']:.2f} on model files left out of fitting"
                       if "recall" in rag and "kappa" in xs else "held-out figures not recorded"))
    return {
        "faithfulness": ScoreDeclaration("measurement", faith_note, dict(faith)),
        "answer_relevance": ScoreDeclaration("placeholder", rel_note, relevance),
        "abstention": ScoreDeclaration("measurement", refusal_note, {"rag_test": rag, "xstest_heldout_pooled": xs}),
    }
