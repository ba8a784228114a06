"""Context precision/recall, correctness and diagnosis with the ScriptedJudge: hand-derived values."""
from __future__ import annotations

import asyncio

import pytest

from workbench.judges.scripted import ScriptedJudge
from workbench.metrics.context import context_precision, context_recall, rank_weighted_precision
from workbench.metrics.correctness import answer_correctness, precision_recall_f1
from workbench.metrics.diagnosis import diagnose, diagnosis_counts, retrieval_failed
from workbench.types import ClaimVerdict, ContextVerdict, Passage

PASSAGES = tuple(Passage(f"p{i}", f"passage {i}") for i in range(1, 5))


class ContextScripted(ScriptedJudge):
    async def judge_context(self, question, passage):
        return self._next("judge_context", (question, passage))


def test_rank_weighted_precision_hand_derived():
    # useful at ranks 1 and 3 of 4: (1/1 + 2/3) / 2
    assert rank_weighted_precision([True, False, True, False]) == pytest.approx(5 / 6)
    # useful at ranks 2 and 4: (1/2 + 2/4) / 2 = 0.5 -> lower: a low-ranked useful passage costs more
    assert rank_weighted_precision([False, True, False, True]) == pytest.approx(0.5)
    assert rank_weighted_precision([False, False]) == 0.0
    assert rank_weighted_precision([]) is None


def test_context_precision_judged_and_id_based():
    judge = ContextScripted().set_default(
        "judge_context", lambda q, p: ContextVerdict(p.id, p.id in {"p1", "p3"}, 0.9 if p.id in {"p1", "p3"} else 0.1))
    result = asyncio.run(context_precision("Q?", PASSAGES, judge, gold_ids=["p3"]))
    assert result.score == pytest.approx(5 / 6)
    assert result.id_based == pytest.approx(1 / 3)  # gold p3 only, at rank 3
    assert [m for m, _ in judge.history] == ["judge_context"] * 4  # one call per passage


def test_context_recall_supported_statements_over_total():
    judge = ScriptedJudge().set_default(
        "verify", lambda claim, ps: ClaimVerdict(claim, claim != "s3", 1.0, quote="passage 1" if claim != "s3" else None))
    result = asyncio.run(context_recall("ref", PASSAGES, judge, statements=["s1", "s2", "s3"]))
    assert result.score == pytest.approx(2 / 3)
    assert asyncio.run(context_recall(None, PASSAGES, judge)).score is None


def test_correctness_precision_recall_f1_hand_derived():
    # answer claims a1, a2, a3; the reference supports a1 and a2 (tp=2, fp=1);
    # reference statements r1, r2; the answer covers r1 only (fn=1).
    supported = {("a1", "reference"), ("a2", "reference"), ("r1", "answer")}
    judge = ScriptedJudge().set_default(
        "verify", lambda claim, ps: ClaimVerdict(claim, (claim, ps[0].id) in supported, 1.0,
                                                 quote=ps[0].text[:5] if (claim, ps[0].id) in supported else None))
    result = asyncio.run(answer_correctness("answer text", ["a1", "a2", "a3"], "reference text", judge,
                                            reference_statements=["r1", "r2"]))
    assert (result.tp, result.fp, result.fn) == (2, 1, 1)
    assert result.precision == pytest.approx(2 / 3) and result.recall == pytest.approx(0.5)
    assert result.f1 == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))  # = 4/7
    assert asyncio.run(answer_correctness("a", ["a1"], None, judge)) is None
    assert precision_recall_f1(0, 0, 0, 0) == (None, None, None)
    assert precision_recall_f1(0, 2, 0, 2) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize("kwargs, expected", [
    (dict(abstained=True, faithfulness=None, relevance=0.9, retrieval_failed=False, correctness_f1=None), "abstained"),
    (dict(abstained=False, faithfulness=0.3, relevance=0.9, retrieval_failed=True, correctness_f1=None),
     "retrieval_failed_confidently_wrong"),
    (dict(abstained=False, faithfulness=1.0, relevance=0.9, retrieval_failed=True, correctness_f1=None), "retrieval_failed"),
    (dict(abstained=False, faithfulness=0.5, relevance=0.9, retrieval_failed=False, correctness_f1=None), "unfaithful"),
    (dict(abstained=False, faithfulness=1.0, relevance=0.2, retrieval_failed=False, correctness_f1=None), "content_gap"),
    (dict(abstained=False, faithfulness=1.0, relevance=0.9, retrieval_failed=None, correctness_f1=0.2), "content_gap"),
    (dict(abstained=False, faithfulness=1.0, relevance=0.9, retrieval_failed=None, correctness_f1=0.9), "ok"),
    (dict(abstained=False, faithfulness=None, relevance=0.9, retrieval_failed=None, correctness_f1=None), "insufficient_data"),
])
def test_diagnosis_rules(kwargs, expected):
    assert diagnose(**kwargs, faithfulness_threshold=0.85, relevance_threshold=0.7) == expected


def test_retrieval_failed_uses_the_most_reliable_available_signal():
    assert retrieval_failed(recall_at_k=None, context_recall=None, context_precision=None) is None
    # gold ids outrank the reference, which outranks the judged context precision
    assert retrieval_failed(recall_at_k=1.0, context_recall=0.4, context_precision=0.0) is False
    assert retrieval_failed(recall_at_k=0.0, context_recall=0.9, context_precision=1.0) is True
    assert retrieval_failed(recall_at_k=None, context_recall=0.4, context_precision=1.0) is True
    assert retrieval_failed(recall_at_k=None, context_recall=None, context_precision=0.0) is True
    assert retrieval_failed(recall_at_k=0.5, context_recall=0.8, context_precision=0.3) is False
    assert sum(diagnosis_counts(["ok", "ok", "abstained"]).values()) == 3


def test_offline_judge_context_relevance_is_question_word_coverage():
    from workbench.judges.offline import OfflineJudge

    judge = OfflineJudge()
    useful = asyncio.run(judge.judge_context("What is the refund window on annual plans?",
                                             Passage("p", "The refund window on annual plans is 30 days.")))
    useless = asyncio.run(judge.judge_context("What is the refund window on annual plans?",
                                              Passage("q", "SMS codes are sent to your phone.")))
    assert useful.relevant and useful.score == 1.0
    assert not useless.relevant and useless.score == 0.0
    assert asyncio.run(judge.judge_context("What is it?", Passage("r", "anything"))).score == 0.0
