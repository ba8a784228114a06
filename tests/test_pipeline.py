"""The scoring pipeline end to end with a scripted judge: hand-derived records and summary."""
from __future__ import annotations

import asyncio
import json

import pytest

from workbench.judges.base import JudgeError
from workbench.judges.scripted import ScriptedEmbedder, ScriptedJudge
from workbench.scoring.pipeline import ScoreOptions, estimate_calls, score_items, summarize, write_outputs
from workbench.types import ClaimVerdict, EvalItem, ItemScore, JudgeUsage, Passage, Thresholds

P1 = Passage("p1", "The refund window on annual plans is 30 days.")
P2 = Passage("p2", "Monthly plans cannot be refunded.")

ITEMS = [
    # faithful + relevant; retrieval: gold p1 at rank 1 of 2
    EvalItem("a", "What is the refund window?", "The refund window is 30 days [p1].", (P1, P2), gold_context_ids=("p1",)),
    # one of two claims supported -> 0.5; gold p9 not retrieved
    EvalItem("b", "Can monthly plans be refunded?", "Monthly plans can be refunded.\nAnnual plans too.", (P2,),
             gold_context_ids=("p9",)),
    # unanswerable, refuses
    EvalItem("c", "What is the CEO's salary?", "I cannot answer that from the documents.", (P1,), answerable=False),
]

DECOMPOSE = {ITEMS[0].answer: ["The refund window is 30 days."],
             ITEMS[1].answer: ["Monthly plans can be refunded.", "Annual plans too."],
             ITEMS[2].answer: ["I cannot answer that from the documents."]}
SUPPORTED = {"The refund window is 30 days.": "refund window on annual plans is 30 days",
             "Monthly plans can be refunded.": "Monthly plans cannot be refunded"}


def scripted():
    judge = ScriptedJudge()
    judge.set_default("decompose", lambda answer: DECOMPOSE[answer])
    judge.set_default("verify", lambda claim, passages: ClaimVerdict(
        claim, claim in SUPPORTED, 1.0 if claim in SUPPORTED else 0.0, quote=SUPPORTED.get(claim)))
    judge.set_default("reverse_questions", lambda answer, n: ["RQ " + answer[:5]])
    judge.set_default("is_refusal", lambda answer: answer.startswith("I cannot"))
    vectors = {"What is the refund window?": [1, 0], "RQ The r": [1, 0],
               "Can monthly plans be refunded?": [1, 0], "RQ Month": [0.6, 0.8],
               "What is the CEO's salary?": [0, 1], "RQ I can": [1, 0]}
    return judge, ScriptedEmbedder(vectors)


def test_pipeline_records_and_summary_hand_derived(tmp_path):
    judge, embedder = scripted()
    records = asyncio.run(score_items(ITEMS, judge, embedder, ScoreOptions()))
    a, b, c = (r.to_record() for r in records)
    assert (a["faithfulness"], a["answer_relevance"], a["quadrant"]) == (1.0, 1.0, "pass")
    assert a["retrieval"] == {"k": 2, "recall_at_k": 1.0, "precision_at_k": 0.5, "mrr": 1.0}
    assert a["citations"] == [{"id": "p1", "in_corpus": True, "retrieved": True, "supports": True}]
    assert a["claims"][0]["quote_found"] is True and a["claims"][0]["passage_id"] == "p1"
    # b: 1 of 2 supported; relevance cos([0.6,0.8],[1,0]) = 0.6 < 0.70
    assert b["faithfulness"] == 0.5 and b["answer_relevance"] == pytest.approx(0.6) and b["quadrant"] == "fail"
    assert b["retrieval"]["recall_at_k"] == 0.0 and b["retrieval"]["mrr"] == 0.0
    assert c["abstained"] is True and c["faithfulness"] is None and c["quadrant"] == "abstained"
    assert c["retrieval"] is None

    summary = summarize(records, thresholds=Thresholds(), usage=JudgeUsage(calls=7), fingerprint="scripted@test")
    assert summary["n_items"] == 3
    assert summary["faithfulness"] == {"n": 2, "mean": 0.75, "pass_rate": 0.5}
    assert summary["answer_relevance"]["n"] == 3
    assert summary["quadrant"] == {"pass": 1, "faithful_irrelevant": 0, "relevant_unfaithful": 0, "fail": 1,
                                   "abstained": 1, "unscored": 0}
    assert summary["abstention"] == {"unanswerable": 1, "abstention_rate": 1.0, "answerable": 2, "false_refusal_rate": 0.0}
    assert summary["retrieval"] == {"n": 2, "k": 5, "recall_at_k": 0.5, "precision_at_k": 0.25, "mrr": 0.5}
    assert summary["citations"] == {"n": 1, "missing_from_corpus": 0, "not_retrieved": 0, "unsupported": 0}
    assert summary["quotes"] == {"n": 2, "hallucinated": 0, "rate": 0.0}

    write_outputs(tmp_path, records, summary)
    lines = (tmp_path / "items.jsonl").read_text().splitlines()
    assert [json.loads(l)["id"] for l in lines] == ["a", "b", "c"]
    assert all(not k.startswith("_") for k in json.loads(lines[0]))
    assert json.loads((tmp_path / "summary.json").read_text()) == summary


def test_pipeline_records_judge_failures_per_item_and_goes_on():
    judge, embedder = scripted()
    judge.enqueue("decompose", JudgeError("HTTP 500 after 4 retries"))
    records = [r.to_record() for r in asyncio.run(score_items(ITEMS[:2], judge, embedder, ScoreOptions(items_in_flight=1)))]
    assert records[0]["faithfulness"] is None and records[0]["quadrant"] == "unscored"
    assert records[0]["errors"] == ["decompose answer: HTTP 500 after 4 retries"]
    assert records[1]["faithfulness"] == 0.5 and records[1]["errors"] == []


def test_an_item_whose_scoring_raises_is_unscored_with_the_contract_keys():
    judge, embedder = scripted()
    judge.enqueue("decompose", RuntimeError("bug"))  # not a JudgeError: escapes score_item
    failed, ok = asyncio.run(score_items(ITEMS[:2], judge, embedder, ScoreOptions(items_in_flight=1)))
    assert failed.quadrant == "unscored" and failed.errors == ("internal error: RuntimeError: bug",)
    record = failed.to_record()
    assert list(record) == [k for k in ok.to_record() if k != "notes"]  # same keys and order, no notes
    assert record["faithfulness"] is None and record["claims"] == [] and record["answerable"] is True
    assert record["diagnosis"] == "insufficient_data" and record["abstained"] is None
    summary = summarize([failed, ok], thresholds=Thresholds(), usage=JudgeUsage(), fingerprint="x")
    assert summary["quadrant"]["unscored"] == 1 and summary["errors"] == {"items_with_errors": 1}


def test_quote_tallies_come_from_the_claims_and_internal_fields_are_not_written(tmp_path):
    claims = (ClaimVerdict("x", False, 0.9, quote="made up", quote_found=False, quote_hallucinated=True),
              ClaimVerdict("y", True, 1.0, quote="real", quote_found=True), ClaimVerdict("z", False, 0.0))
    scored = ItemScore("q", claims=claims, gold_context_ids=("p1",))
    assert (scored.n_quotes, scored.n_quote_hallucinated) == (2, 1)
    summary = summarize([scored], thresholds=Thresholds(), usage=JudgeUsage(), fingerprint="x")
    assert summary["quotes"] == {"n": 2, "hallucinated": 1, "rate": 0.5}
    write_outputs(tmp_path, [scored], summary)
    line = json.loads((tmp_path / "items.jsonl").read_text())
    assert line == scored.to_record() and [c["text"] for c in line["claims"]] == ["x", "y", "z"]
    assert not {"gold_context_ids", "n_quotes", "n_quote_hallucinated"} & set(line)


def test_empty_summary_uses_null_not_zero():
    summary = summarize([], thresholds=Thresholds(), usage=JudgeUsage(), fingerprint="x")
    assert summary["faithfulness"] is None and summary["retrieval"] is None and summary["citations"] is None
    assert summary["abstention"]["abstention_rate"] is None and summary["quotes"]["rate"] is None


def test_estimate_calls_counts_per_item():
    est = estimate_calls(ITEMS)
    # sentences 1 + 2 + 1; one citation; passages 2 + 1 + 1; no references
    assert est["verify_estimated"] == 4 and est["citation_checks"] == 1 and est["context_judgments"] == 4
    assert est["decompose"] == 3 and est["correctness_verify_estimated"] == 0
    assert est["chat_calls_estimated"] == 3 + 4 + 3 + 3 + 1 + 4
    with_reference = estimate_calls([EvalItem("r", "Q?", "Refunds take 30 days. Plans renew yearly.", (P1,), reference="Refunds take 30 days. Plans renew yearly. Codes expire after a week.")])
    # decompose answer + reference; 3 statements vs passages; correctness 2 claims + 3 statements
    assert with_reference["decompose"] == 2 and with_reference["context_recall_verify_estimated"] == 3
    assert with_reference["correctness_verify_estimated"] == 5
    assert with_reference["chat_calls_estimated"] == 2 + 2 + 1 + 1 + 0 + 1 + 3 + 5


def test_independent_calls_of_an_item_start_before_any_of_them_returns():
    """Decomposition answers only once the refusal check, the reverse questions and the question's
    embedding have all started; the verification starts once the claims exist."""
    from workbench.scoring.embed_batch import EmbeddingBatcher

    started: dict[str, asyncio.Event] = {}

    class GatedJudge(ScriptedJudge):
        async def decompose(self, answer):
            await asyncio.wait_for(asyncio.gather(*(started[k].wait() for k in ("refusal", "reverse", "embed"))), 5)
            return await super().decompose(answer)

        async def reverse_questions(self, answer, n):
            started["reverse"].set()
            return await super().reverse_questions(answer, n)

        async def is_refusal(self, answer):
            started["refusal"].set()
            return await super().is_refusal(answer)

    class GatedEmbedder(ScriptedEmbedder):
        async def embed(self, texts):
            if ITEMS[0].question in texts:
                started["embed"].set()
            return await super().embed(texts)

    async def run():
        started.update({k: asyncio.Event() for k in ("refusal", "reverse", "embed")})
        base, embedder = scripted()
        judge = GatedJudge()
        judge._defaults = base._defaults
        batcher = EmbeddingBatcher(GatedEmbedder({k: list(v) for k, v in embedder.table.items()}), window=0.001)
        return await score_items(ITEMS[:1], judge, batcher, ScoreOptions()), judge

    (scored,), judge = asyncio.run(run())
    record = scored.to_record()
    assert record["errors"] == [] and record["faithfulness"] == 1.0 and record["answer_relevance"] == 1.0
    order = [name for name, _ in judge.history]
    # the citation check needs nothing and starts at once; the claim's verification follows its decomposition
    assert order.index("verify") < order.index("decompose") and order[order.index("decompose"):].count("verify") == 1


def test_scheduling_does_not_change_records_with_a_batcher():
    """The same replies give the same records with or without coalesced embeddings."""
    from workbench.scoring.embed_batch import EmbeddingBatcher

    judge, embedder = scripted()
    plain = asyncio.run(score_items(ITEMS, judge, embedder, ScoreOptions()))
    judge, embedder = scripted()
    batched = asyncio.run(score_items(ITEMS, judge, EmbeddingBatcher(embedder, window=0.001), ScoreOptions()))
    assert json.dumps([r.to_record() for r in plain]) == json.dumps([r.to_record() for r in batched])
