"""Answer relevance: does the answer address the question that was asked?

The judge reads only the answer and writes ``n`` questions it answers; the score is the mean
cosine similarity of their embeddings to the real question, clipped to [0, 1]. The judge never
sees the passages. (The offline judge cannot write questions: it offers the answer's own
sentences instead, and says so in its ``note``.)
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from workbench.judges.base import Embedder, Judge, NotesReverseQuestions, cosine_similarities
from workbench.types import RelevanceResult


def relevance_from_embeddings(question_vector: np.ndarray, reverse_vectors: np.ndarray,
                              reverse_questions: Sequence[str], *, note: str = "") -> RelevanceResult:
    """Mean cosine of each reverse question's vector to the question's, negatives clipped to 0.

    ``None`` score when there are no reverse questions.
    """
    if len(reverse_questions) == 0:
        return RelevanceResult(None, (), note or "no reverse questions")
    sims = np.clip(cosine_similarities(reverse_vectors, question_vector), 0.0, 1.0)
    pairs = tuple((q, round(float(s), 6)) for q, s in zip(reverse_questions, sims))
    return RelevanceResult(float(np.mean(sims)), pairs, note)


async def answer_relevance(question: str, answer: str, judge: Judge, embedder: Embedder, *,
                           n: int = 3, reverse_questions: Sequence[str] | None = None) -> RelevanceResult:
    """Score how well ``answer`` addresses ``question`` in [0, 1] (``None`` for an empty answer).

    ``reverse_questions`` skips the judge call when they are already known.
    """
    if not answer.strip():
        return RelevanceResult(None, (), "empty answer")
    questions = list(reverse_questions) if reverse_questions is not None else await judge.reverse_questions(answer, n)
    questions = [q.strip() for q in questions if q and q.strip()]
    if not questions:
        return RelevanceResult(None, (), "the judge wrote no questions")
    vectors = await embedder.embed([question, *questions])
    note = judge.reverse_question_note if isinstance(judge, NotesReverseQuestions) else ""
    return relevance_from_embeddings(vectors[0], vectors[1:], questions, note=note)
