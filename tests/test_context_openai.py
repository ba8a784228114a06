"""Context precision and correctness through the real openai client against the loopback server."""
from __future__ import annotations

import asyncio

import pytest

from workbench.config import JudgeConfig
from workbench.judges.openai_compat import OpenAICompatJudge
from workbench.metrics.context import context_precision
from workbench.types import Passage


def make_judge(fake_openai, tmp_path):
    config = JudgeConfig(backend="openai", model="fake-judge", base_url=fake_openai.base_url,
                         cache_path=tmp_path / "cache.db", max_retries=1)
    return OpenAICompatJudge(config)


def test_context_precision_over_the_wire_ranks_1_and_3_of_4(fake_openai, tmp_path):
    judge = make_judge(fake_openai, tmp_path)
    passages = (Passage("a", "The refund window on annual plans is 30 days."),
                Passage("b", "SMS codes are sent by text message."),
                Passage("c", "Annual plans: the refund window opens at purchase."),
                Passage("d", "Our office is in Lisbon."))
    result = asyncio.run(context_precision("What is the refund window on annual plans?", passages, judge,
                                           gold_ids=["a"]))
    assert [v.relevant for v in result.verdicts] == [True, False, True, False]
    assert result.score == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert result.id_based == 1.0
    prompts = [r for r in fake_openai.requests if '{"relevant"' in str(r)]
    assert len(prompts) == 4  # one call per passage


def test_verify_batch_one_call_for_all_claims_same_verdicts_as_per_claim(fake_openai, tmp_path):
    judge = make_judge(fake_openai, tmp_path)
    passages = (Passage("a", "The refund window on annual plans is 30 days."),)
    claims = ["The refund window on annual plans is 30 days.", "Monthly plans include free SMS codes."]
    before = fake_openai.count("/v1/chat/completions")
    batched = asyncio.run(judge.verify_batch(claims, passages))
    assert fake_openai.count("/v1/chat/completions") == before + 1
    single = [asyncio.run(judge.verify(c, passages)) for c in claims]
    assert [v.supported for v in batched] == [v.supported for v in single] == [True, False]
    assert batched[0].quote == "The refund window on annual plans is 30 days."


def test_parse_verdict_batch_rejects_missing_or_repeated_claims():
    from workbench.judges.parsing import ParseError, parse_verdict_batch

    ok = parse_verdict_batch('{"verdicts": [{"claim_index": 1, "supported": false, "quote": "NONE"},'
                             ' {"claim_index": 0, "supported": true, "quote": "x"}]}', 2)
    assert [v["supported"] for v in ok.value] == [True, False] and ok.value[1]["quote"] is None
    for bad in ('{"verdicts": [{"supported": true}]}', '{"verdicts": [{"claim_index": 0, "supported": true},'
                                                       ' {"claim_index": 0, "supported": true}]}', '{"v": 1}'):
        with pytest.raises(ParseError):
            parse_verdict_batch(bad, 2)


def test_an_endpoint_without_embeddings_costs_relevance_only(fake_openai, tmp_path):
    """A failing embedder is recorded on each item; faithfulness and the rest are still scored."""
    from workbench.judges.openai_compat import OpenAICompatEmbedder
    from workbench.scoring.pipeline import ScoreOptions, run_scoring
    from workbench.types import EvalItem

    del fake_openai.routes[("POST", "/v1/embeddings")]
    judge = make_judge(fake_openai, tmp_path)
    embedder = OpenAICompatEmbedder(judge.config, judge.client)
    item = EvalItem("e1", "What is the refund window?", "The refund window on annual plans is 30 days.",
                    (Passage("a", "The refund window on annual plans is 30 days."),), reference="30 days.")
    records, summary = run_scoring([item], judge, embedder, ScoreOptions(), progress=False)
    record = records[0].to_record()
    assert record["faithfulness"] == 1.0 and record["answer_relevance"] is None
    assert record["quadrant"] == "unscored" and record["correctness"]["similarity"] is None
    assert any(e.startswith("answer_relevance: ") and "404" in e for e in record["errors"])
    assert summary["judge"]["failures"] >= 1


def test_context_recall_and_correctness_over_the_wire_hand_derived(fake_openai, tmp_path):
    """The fake judge supports a statement when >= 75% of its content words are in the passages."""
    from workbench.metrics.context import context_recall
    from workbench.metrics.correctness import answer_correctness

    judge = make_judge(fake_openai, tmp_path)
    reference = "The refund window is 30 days. Gift cards never expire."
    passages = (Passage("a", "The refund window on annual plans is 30 days."),)
    recall = asyncio.run(context_recall(reference, passages, judge))
    # statements: "The refund window is 30 days." (in the passage), "Gift cards never expire." (not)
    assert [v.supported for v in recall.verdicts] == [True, False] and recall.score == 0.5

    answer = "The refund window is 30 days. Support is open on Sundays."
    result = asyncio.run(answer_correctness(answer, ["The refund window is 30 days.", "Support is open on Sundays."],
                                            reference, judge))
    # tp 1 (refund claim in the reference), fp 1 (Sundays); reference covered 1 of 2 -> P = R = F1 = 0.5
    assert (result.tp, result.fp, result.fn) == (1, 1, 1)
    assert (result.precision, result.recall, result.f1) == (0.5, 0.5, 0.5)
