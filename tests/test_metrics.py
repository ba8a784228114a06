"""Metric logic with the ScriptedJudge: hand-derived expected values."""
from __future__ import annotations

import asyncio

import pytest

from workbench.judges.base import JudgeError
from workbench.judges.scripted import ScriptedEmbedder, ScriptedJudge
from workbench.metrics.abstention import abstention_summary
from workbench.metrics.citations import check_citations, cited_sentences
from workbench.metrics.faithfulness import faithfulness
from workbench.metrics.quadrant import quadrant, quadrant_counts
from workbench.metrics.relevance import answer_relevance
from workbench.metrics.retrieval import retrieval_scores
from workbench.types import ClaimVerdict, EvalItem, Passage, Thresholds

PASSAGES = (Passage("p1", "Annual plans renew automatically on the anniversary date."),
            Passage("p2", "Refunds are available within 30 days of purchase."))


def run(coro):
    return asyncio.run(coro)


def test_faithfulness_counts_supported_over_total_and_catches_invented_quotes():
    judge = ScriptedJudge()
    judge.enqueue("decompose", ["Annual plans renew automatically.", "Refunds take 60 days.", "Support is 24/7."])
    judge.enqueue(
        "verify",
        ClaimVerdict("x", True, 0.9, quote="renew automatically on the anniversary"),  # genuine
        ClaimVerdict("x", True, 0.8, quote="Refunds are available within 60 days"),   # invented (60 vs 30)
        ClaimVerdict("x", False, 0.1, quote=None),                                     # NONE
    )
    result = run(faithfulness("...", PASSAGES, judge))
    # 1 supported of 3 claims: the invented quote is a hallucination and scored unsupported.
    assert result.score == pytest.approx(1 / 3)
    assert result.n_quotes == 2 and result.n_quote_hallucinated == 1
    first, second, third = result.verdicts
    assert first.quote_found is True and first.passage_id == "p1"
    assert second.quote_found is False and second.quote_hallucinated and not second.supported
    assert third.quote_found is None and not third.supported
    assert [m for m, _ in judge.history] == ["decompose", "verify", "verify", "verify"]


def test_faithfulness_can_keep_hallucinated_quotes_supported_when_configured():
    judge = ScriptedJudge().enqueue("verify", ClaimVerdict("c", True, 0.8, quote="not in any passage at all"))
    result = run(faithfulness("", PASSAGES, judge, claims=["c"], hallucination_unsupported=False))
    assert result.score == 1.0 and result.n_quote_hallucinated == 1


def test_faithfulness_is_none_without_claims_or_with_a_failed_verification():
    assert run(faithfulness("", PASSAGES, ScriptedJudge(), claims=[])).score is None
    judge = ScriptedJudge().enqueue("verify", JudgeError("timeout"), ClaimVerdict("b", True, 1.0, quote="Refunds are available"))
    result = run(faithfulness("", PASSAGES, judge, claims=["a", "b"]))
    assert result.score is None and result.verdicts[0].error == "timeout" and result.verdicts[1].supported


def test_support_threshold_overrides_the_judges_decision():
    from workbench.metrics.faithfulness import verify_claim
    judge = ScriptedJudge().set_default("verify", ClaimVerdict("c", False, 0.6, quote="Refunds are available"))
    assert run(verify_claim("c", PASSAGES, judge, support_threshold=0.55)).supported
    assert not run(verify_claim("c", PASSAGES, judge, support_threshold=0.65)).supported


def test_answer_relevance_is_mean_cosine_clipped_at_zero():
    judge = ScriptedJudge().enqueue("reverse_questions", ["q1", "q2"])
    embedder = ScriptedEmbedder({"Q": [1, 0], "q1": [1, 0], "q2": [0, 1]})
    result = run(answer_relevance("Q", "an answer", judge, embedder))
    # cos(q1, Q) = 1, cos(q2, Q) = 0 -> mean 0.5
    assert result.score == pytest.approx(0.5)
    assert result.questions == (("q1", 1.0), ("q2", 0.0))
    embedder = ScriptedEmbedder({"Q": [1, 0], "q1": [-1, 0]})
    assert run(answer_relevance("Q", "a", ScriptedJudge().enqueue("reverse_questions", ["q1"]), embedder)).score == 0.0
    assert run(answer_relevance("Q", "   ", ScriptedJudge(), embedder)).score is None


def test_retrieval_scores_hand_derived():
    # gold p3 at rank 2 and p9 never retrieved; k=3 -> hits [F, T, F]
    r = retrieval_scores(["p1", "p3", "p4", "p9"], ["p3", "p9"], k=3)
    assert (r.k, r.recall_at_k, r.precision_at_k, r.mrr) == (3, 0.5, pytest.approx(1 / 3), 0.5)
    r = retrieval_scores(["p1", "p3"], ["p3"], k=5)  # fewer retrieved than k: k_eff = 2
    assert (r.k, r.recall_at_k, r.precision_at_k, r.mrr) == (2, 1.0, 0.5, 0.5)
    assert retrieval_scores(["p1"], None) is None and retrieval_scores(["p1"], []) is None
    assert retrieval_scores([], ["p1"]).recall_at_k == 0.0


def test_abstention_reports_both_rates_and_none_for_empty_groups():
    s = abstention_summary([False, False, True, True, True, True], [True, False, True, False, False, False])
    assert s == {"unanswerable": 2, "abstention_rate": 0.5, "answerable": 4, "false_refusal_rate": 0.25}
    assert abstention_summary([True], [False])["abstention_rate"] is None


def test_quadrant_cells_and_thresholds_inclusive():
    t = Thresholds(faithfulness=0.85, answer_relevance=0.70)
    assert quadrant(0.85, 0.70, abstained=False, thresholds=t) == "pass"
    assert quadrant(0.9, 0.5, abstained=False, thresholds=t) == "faithful_irrelevant"
    assert quadrant(0.5, 0.9, abstained=False, thresholds=t) == "relevant_unfaithful"
    assert quadrant(0.5, 0.5, abstained=False, thresholds=t) == "fail"
    assert quadrant(None, 0.9, abstained=True, thresholds=t) == "abstained"
    assert quadrant(None, 0.9, abstained=False, thresholds=t) == "unscored"
    counts = quadrant_counts(["pass", "fail", "pass"])
    assert counts["pass"] == 2 and sum(counts.values()) == 3 and counts["abstained"] == 0
    with pytest.raises(ValueError):
        quadrant_counts(["nope"])


def test_citations_exist_retrieved_and_support():
    item = EvalItem("q", "Q?", "Annual plans renew automatically [p1]. Refunds take 30 days [p2, p7]. Gifts are free [zz].",
                    contexts=(PASSAGES[0],))
    corpus = {"p1": PASSAGES[0], "p2": PASSAGES[1], "p7": Passage("p7", "Gift cards never expire.")}
    judge = ScriptedJudge().set_default(
        "verify", lambda claim, passages: ClaimVerdict(claim, passages[0].id != "p7", 0.9, quote=passages[0].text[:20]))
    checks = run(check_citations(item, judge, corpus=corpus))
    got = {(c.id, c.in_corpus, c.retrieved, c.supports) for c in checks}
    assert got == {("p1", True, True, True), ("p2", True, False, True), ("p7", True, False, False),
                   ("zz", False, False, None)}
    assert cited_sentences("One [a].\n[b]\nTwo.") == [("One.", ["a", "b"])]


def test_found_quote_is_replaced_by_the_passages_own_span_and_the_judges_words_kept():
    judge = ScriptedJudge().enqueue("verify", ClaimVerdict("c", True, 0.9, quote="REFUNDS are available  within 30 days"))
    verdict = run(faithfulness("", PASSAGES, judge, claims=["c"])).verdicts[0]
    assert verdict.quote == "Refunds are available within 30 days" and verdict.quote in PASSAGES[1].text
    record = verdict.to_record()
    assert record["quote_found"] is True and record["judge_quote"] == "REFUNDS are available  within 30 days"
