"""`score --metrics`: only the chosen metrics are computed and called for; the rest are null and listed."""
from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_openai import CHAT_PATH, EMBEDDINGS_PATH, FakeOpenAI, _last_user_text, detect_task

from workbench.cli import main
from workbench.judges.scripted import ScriptedEmbedder, ScriptedJudge
from workbench.scoring.pipeline import METRICS, ScoreOptions, estimate_calls, parse_metrics, score_items, summarize
from workbench.types import ClaimVerdict, EvalItem, JudgeUsage, Passage, Thresholds

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo_rag.jsonl"
P1 = Passage("p1", "The refund window on annual plans is 30 days.")
ITEM = EvalItem("a", "What is the refund window?", "The refund window is 30 days [p1].", (P1,),
                gold_context_ids=("p1",), reference="Thirty days.")


class CountingJudge(ScriptedJudge):
    """A scripted judge that also counts calls per method (and context judgments)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: Counter = Counter()
        self.set_default("decompose", lambda text: [text.split(" [")[0]])
        self.set_default("verify", lambda claim, passages: ClaimVerdict(claim, True, 1.0, quote="30 days"))
        self.set_default("reverse_questions", lambda answer, n: ["What is the refund window?"])
        self.set_default("is_refusal", lambda answer: False)

    def _next(self, method, args):
        self.seen[method] += 1
        return super()._next(method, args)

    async def judge_context(self, question, passage):
        from workbench.types import ContextVerdict

        self.seen["judge_context"] += 1
        return ContextVerdict(passage.id, True, 1.0)


def test_parse_metrics_orders_checks_and_names_unknown_ones():
    assert parse_metrics(None) == METRICS and parse_metrics("all") == METRICS
    assert parse_metrics("answer_relevance, faithfulness") == ("faithfulness", "answer_relevance")
    with pytest.raises(ValueError, match="unknown metric.*faithfullness.*expected"):
        parse_metrics("faithfullness,answer_relevance")
    with pytest.raises(ValueError, match="no metric named"):
        parse_metrics(" , ")


def test_two_metrics_call_only_for_those_and_null_the_rest():
    judge = CountingJudge()
    embedder = ScriptedEmbedder({"What is the refund window?": [1, 0]})
    options = ScoreOptions(metrics=parse_metrics("faithfulness,answer_relevance"))
    (scored,) = asyncio.run(score_items([ITEM], judge, embedder, options))
    record = scored.to_record()
    # one decompose (the answer's, not the reference's), one verify, one reverse-questions call
    assert judge.seen == Counter({"decompose": 1, "verify": 1, "reverse_questions": 1})
    assert record["faithfulness"] == 1.0 and record["answer_relevance"] == 1.0 and record["quadrant"] == "pass"
    for key in ("abstained", "retrieval", "context_precision", "context_recall", "correctness"):
        assert record[key] is None, key
    assert record["citations"] == [] and record["context_judgments"] == [] and record["reference_statements"] == []
    summary = summarize([scored], thresholds=Thresholds(), usage=JudgeUsage(), fingerprint="x",
                        metrics=options.metrics)
    assert summary["metrics_skipped"] == ["abstention", "citations", "context_precision", "context_recall",
                                          "correctness", "retrieval"]
    assert all(summary[m] is None for m in summary["metrics_skipped"])
    assert summary["faithfulness"]["n"] == 1


def test_all_metrics_by_default_and_nothing_skipped():
    judge = CountingJudge()
    embedder = ScriptedEmbedder({"What is the refund window?": [1, 0], "Thirty days.": [1, 0],
                                 ITEM.answer: [1, 0]})
    (scored,) = asyncio.run(score_items([ITEM], judge, embedder, ScoreOptions()))
    record = scored.to_record()
    assert judge.seen["is_refusal"] == 1 and judge.seen["judge_context"] == 1 and judge.seen["decompose"] == 2
    assert record["abstained"] is False and record["retrieval"] is not None and record["correctness"] is not None
    summary = summarize([scored], thresholds=Thresholds(), usage=JudgeUsage(), fingerprint="x")
    assert summary["metrics_skipped"] == [] and summary["abstention"] is not None


def test_abstention_alone_makes_only_refusal_calls():
    judge = CountingJudge()
    (scored,) = asyncio.run(score_items([ITEM], judge, ScriptedEmbedder({}), ScoreOptions(metrics=("abstention",))))
    record = scored.to_record()
    assert judge.seen == Counter({"is_refusal": 1})
    assert record["abstained"] is False and record["faithfulness"] is None and record["quadrant"] == "unscored"


def test_estimate_counts_only_the_chosen_metrics():
    est = estimate_calls([ITEM], metrics=parse_metrics("faithfulness,answer_relevance"))
    assert est["decompose"] == 1 and est["refusal"] == 0 and est["context_judgments"] == 0
    assert est["citation_checks"] == 0 and est["correctness_verify_estimated"] == 0
    assert est["chat_calls_estimated"] == 1 + 1 + 1 and est["embedding_calls"] == 1


def test_cli_two_metrics_against_the_fake_server(tmp_path):
    with FakeOpenAI() as fake:
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "", "WORKBENCH_CACHE": str(tmp_path / "c.db"),
               "WORKBENCH_DB": str(tmp_path / "none.db")}
        result = CliRunner().invoke(main, ["score", str(DEMO), "--judge", "openai", "--model", "m",
                                           "--metrics", "faithfulness,answer_relevance", "--out", str(tmp_path / "o")],
                                    env=env)
        assert result.exit_code == 0, result.output
        tasks = Counter(detect_task(_last_user_text(body)) for body in fake.bodies(CHAT_PATH))
        n_embed = fake.count(EMBEDDINGS_PATH)
    assert set(tasks) == {"decompose", "verify", "reverse_questions"}, tasks
    n_items = len(DEMO.read_text().splitlines())
    assert tasks["decompose"] <= n_items and tasks["reverse_questions"] <= n_items and n_embed >= 1
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["metrics_skipped"] == ["abstention", "citations", "context_precision", "context_recall",
                                          "correctness", "retrieval"]
    assert summary["abstention"] is None and summary["retrieval"] is None and summary["faithfulness"]["n"] > 0
    records = [json.loads(line) for line in (tmp_path / "o" / "items.jsonl").read_text().splitlines()]
    assert all(r["abstained"] is None and r["context_precision"] is None and r["citations"] == [] for r in records)
    assert "abstention           skipped (--metrics)" in result.output
    assert "skipped metrics      abstention, citations" in result.output


def test_cli_unknown_metric_exits_2_naming_it(tmp_path):
    result = CliRunner().invoke(main, ["score", str(DEMO), "--metrics", "faithfulness,relevance",
                                       "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "--metrics" in result.output and "relevance" in result.output and "answer_relevance" in result.output
