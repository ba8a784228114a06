"""``workbench.calibration.judging``: judges over store units with a ScriptedJudge (values, scores, resume, failures)."""
from __future__ import annotations

import numpy as np
import pytest

from workbench import store
from workbench.calibration.judging import BatchedModeUnsupported, judge_units, run_judges
from workbench.judges.base import JudgeError, run_sync
from workbench.judges.scripted import ScriptedEmbedder, ScriptedJudge
from workbench.types import ClaimVerdict, EvalItem, Passage, Thresholds, Unit

PASSAGE_A = "The refund window on annual plans is 30 days. Plans renew every year."
PASSAGE_B = "Support is open on weekdays."


def _claim_units(item_id: str, texts: list[str]) -> list[Unit]:
    return [Unit(Unit.make_id("claim_support", item_id, i), "claim_support", item_id, i, t) for i, t in enumerate(texts)]


def _answer_units(item_id: str, answer: str) -> list[Unit]:
    return [Unit(Unit.make_id(t, item_id), t, item_id, None, answer)
            for t in ("answer_faithfulness", "answer_relevance", "abstention")]


CLAIMS_A = ["Refunds: 30 days.", "Plans renew yearly.", "Refunds are paid in cash."]
CLAIMS_B = ["Support is open on Sundays."]


def verdict_for(claim: str, passages) -> ClaimVerdict:
    """Scripted verify: two supported with real quotes, one NONE, one invented quote."""
    table = {
        CLAIMS_A[0]: ClaimVerdict(claim, True, 0.9, quote="refund window on annual plans is 30 days"),
        CLAIMS_A[1]: ClaimVerdict(claim, True, 0.75, quote="Plans renew every year"),
        CLAIMS_A[2]: ClaimVerdict(claim, False, 0.2, quote=None),
        CLAIMS_B[0]: ClaimVerdict(claim, True, 0.8, quote="Support is open on Sundays"),  # not in the passage
    }
    return table[claim]


@pytest.fixture
def db(tmp_path):
    db = store.open_db(tmp_path / "t.db")
    items = [
        EvalItem("a", "How long is the refund window?", "Refunds: 30 days. Plans renew yearly. Cash.",
                 (Passage("pa", PASSAGE_A),)),
        EvalItem("b", "When is support open?", "I cannot help with that.", (Passage("pb", PASSAGE_B),)),
    ]
    store.add_items(db, items)
    store.add_units(db, _claim_units("a", CLAIMS_A) + _claim_units("b", CLAIMS_B)
                    + _answer_units("a", items[0].answer) + _answer_units("b", items[1].answer))
    return db


def scripted_judge() -> tuple[ScriptedJudge, ScriptedEmbedder]:
    judge = ScriptedJudge()
    judge.set_default("verify", verdict_for)
    judge.set_default("is_refusal", lambda answer: answer.startswith("I cannot"))
    judge.set_default("reverse_questions", lambda answer, n: ["rq-a"] if answer.startswith("Refunds") else ["rq-b"])
    embedder = ScriptedEmbedder({
        "How long is the refund window?": [1.0, 0.0], "rq-a": [1.0, 0.0],  # cosine 1.0
        "When is support open?": [1.0, 0.0], "rq-b": [0.6, 0.8],          # cosine 0.6
    })
    return judge, embedder


def by_unit(db, judge="scripted@test", repeat=0):
    return {j.unit_id: j for j in store.list_judgments(db, judge=judge) if j.repeat == repeat}


def test_values_scores_quotes_per_task(db):
    judge, embedder = scripted_judge()
    summary = run_judges(db, None, judge=judge, embedder=embedder, progress=False)
    got = by_unit(db)
    assert summary["asked"] == 10 and summary["judged"] == {
        "abstention": 2, "answer_faithfulness": 2, "answer_relevance": 2, "claim_support": 4}
    a0, a1, a2 = (got[f"claim_support:a:{i}"] for i in range(3))
    assert (a0.value, a0.score, a0.quote_found) == ("supported", 0.9, True)
    assert (a1.value, a1.score, a1.quote_found) == ("supported", 0.75, True)
    assert (a2.value, a2.score, a2.quote, a2.quote_found) == ("unsupported", 0.2, None, None)
    b0 = got["claim_support:b:0"]  # "supported" with a quote not in the passage -> unsupported, counted
    assert (b0.value, b0.score, b0.quote_found) == ("unsupported", 0.8, False)
    # faithfulness over the item's claim units: a = 2/3 (< 0.85 default), b = 0/1
    fa, fb = got["answer_faithfulness:a"], got["answer_faithfulness:b"]
    assert fa.value == "unfaithful" and fa.score == pytest.approx(2 / 3)
    assert fb.value == "unfaithful" and fb.score == 0.0
    ra, rb = got["answer_relevance:a"], got["answer_relevance:b"]
    assert (ra.value, ra.score) == ("relevant", pytest.approx(1.0))
    assert rb.value == "not_relevant" and rb.score == pytest.approx(0.6)  # 0.6 < 0.70
    assert (got["abstention:a"].value, got["abstention:a"].score) == ("answered", 0.0)
    assert (got["abstention:b"].value, got["abstention:b"].score) == ("refused", 1.0)
    # each claim verified once: faithfulness reuses the claim units' verdicts
    assert sum(1 for name, _ in judge.history if name == "verify") == 4


def test_thresholds_turn_scores_into_values(db):
    judge, embedder = scripted_judge()
    run_judges(db, None, judge=judge, embedder=embedder, progress=False,
               thresholds=Thresholds(faithfulness=0.6, answer_relevance=0.5))
    got = by_unit(db)
    assert got["answer_faithfulness:a"].value == "faithful"  # 0.667 >= 0.6
    assert got["answer_relevance:b"].value == "relevant"     # 0.6 >= 0.5


def test_resume_skips_units_already_judged(db):
    judge, embedder = scripted_judge()
    run_judges(db, None, judge=judge, embedder=embedder, progress=False)
    calls = len(judge.history)
    rows = db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]
    again = run_judges(db, None, judge=judge, embedder=embedder, progress=False)
    assert again["asked"] == 0 and again["skipped"] == 10
    assert len(judge.history) == calls
    assert db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0] == rows
    # another fingerprint is a new judge: asked again
    other, emb = scripted_judge()
    other.fingerprint = "scripted@other"
    assert run_judges(db, None, judge=other, embedder=emb, progress=False)["asked"] == 10


def test_failures_are_recorded_and_retried_next_run(db):
    judge, embedder = scripted_judge()

    def flaky(claim, passages):
        if claim == CLAIMS_A[1]:
            raise JudgeError("timeout after 4 attempts")
        return verdict_for(claim, passages)

    judge.set_default("verify", flaky)
    judge.set_default("reverse_questions", RuntimeError("backend exploded"))  # not a JudgeError: still recorded
    summary = run_judges(db, None, judge=judge, embedder=embedder, progress=False)
    got = by_unit(db)
    assert got["claim_support:a:1"].error == "timeout after 4 attempts" and got["claim_support:a:1"].value == ""
    assert "verification failed: timeout" in got["answer_faithfulness:a"].error
    assert got["answer_faithfulness:a"].score is None
    assert got["answer_relevance:a"].error == "RuntimeError: backend exploded"
    assert got["claim_support:a:0"].error is None and got["answer_faithfulness:b"].error is None
    assert summary["errors"] == {"answer_faithfulness": 1, "answer_relevance": 2, "claim_support": 1}
    # next run with a healthy judge asks only the failed units again
    healthy, embedder = scripted_judge()
    second = run_judges(db, None, judge=healthy, embedder=embedder, progress=False)
    assert second["asked"] == 4 and second["errors"] == {}
    got = by_unit(db)
    assert got["claim_support:a:1"].value == "supported" and got["answer_faithfulness:a"].score == pytest.approx(2 / 3)


def test_repeats_store_each_repeat_and_report_test_retest(db):
    judge, embedder = scripted_judge()
    summary = run_judges(db, None, judge=judge, embedder=embedder, progress=False, repeats=3)
    assert summary["asked"] == 30
    assert {j.repeat for j in store.list_judgments(db)} == {0, 1, 2}
    cs = summary["test_retest"]["claim_support"]
    # a scripted judge answers identically: all repeats agree; both classes present -> kappa 1
    assert cs["repeats"] == 3 and cs["n"] == 4 and cs["agreement"] == 1.0 and cs["kappa"] == 1.0
    assert set(cs["pairwise"]) == {"0|1", "0|2", "1|2"}


def test_tasks_filter_and_untreated_tasks(db):
    judge, embedder = scripted_judge()
    summary = run_judges(db, None, judge=judge, embedder=embedder, progress=False, tasks=["abstention"])
    assert summary["judged"] == {"abstention": 2} and summary["units"] == 2


def test_item_without_claim_units_that_refuses_is_not_scored(tmp_path):
    db = store.open_db(tmp_path / "t.db")
    store.add_items(db, [EvalItem("r", "q?", "I cannot answer that.", (Passage("p", "text"),))])
    store.add_units(db, [Unit("answer_faithfulness:r", "answer_faithfulness", "r", None, "I cannot answer that.")])
    judge, embedder = scripted_judge()
    run_judges(db, None, judge=judge, embedder=embedder, progress=False)
    j = by_unit(db)["answer_faithfulness:r"]
    assert j.error == "answer abstains: faithfulness not scored" and j.score is None


def test_item_without_claim_units_is_decomposed_by_the_judge(tmp_path):
    db = store.open_db(tmp_path / "t.db")
    store.add_items(db, [EvalItem("d", "q?", "Refunds: 30 days.", (Passage("p", PASSAGE_A),))])
    store.add_units(db, [Unit("answer_faithfulness:d", "answer_faithfulness", "d", None, "Refunds: 30 days.")])
    judge, embedder = scripted_judge()
    judge.enqueue("decompose", [CLAIMS_A[0]])
    run_judges(db, None, judge=judge, embedder=embedder, progress=False)
    j = by_unit(db)["answer_faithfulness:d"]
    assert (j.value, j.score) == ("faithful", 1.0)


class BatchJudge(ScriptedJudge):
    """A scripted judge with a batched mode: one call for all claims of an answer."""

    def __init__(self):
        super().__init__()
        self.batches: list[tuple[str, ...]] = []

    async def verify_batch(self, claims, passages):
        self.batches.append(tuple(claims))
        return [verdict_for(c, passages) for c in claims]


def test_batched_mode_one_call_per_answer_under_its_own_fingerprint(db):
    judge = BatchJudge()
    _, embedder = scripted_judge()
    base, _ = scripted_judge()
    for name in ("is_refusal", "reverse_questions"):
        judge.set_default(name, base._defaults[name])
    summary = run_judges(db, None, judge=judge, embedder=embedder, progress=False, verify_mode="batched")
    assert summary["judge"] == "scripted@test+batched"
    assert sorted(judge.batches) == sorted([tuple(CLAIMS_A), tuple(CLAIMS_B)])
    got = by_unit(db, judge="scripted@test+batched")
    assert got["claim_support:b:0"].quote_found is False and got["claim_support:b:0"].value == "unsupported"
    assert got["answer_faithfulness:a"].score == pytest.approx(2 / 3)
    assert not any(name == "verify" for name, _ in judge.history)


def test_batched_mode_without_verify_batch_is_refused_clearly(db):
    judge, embedder = scripted_judge()
    with pytest.raises(BatchedModeUnsupported, match="no batched verification mode"):
        run_judges(db, None, judge=judge, embedder=embedder, progress=False, verify_mode="batched")
    assert db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0] == 0


def test_judge_units_is_pure_async_core(db):
    judge, embedder = scripted_judge()
    items = {i.id: i for i in store.list_items(db)}
    units = store.list_units(db, task="claim_support")
    seen = []
    out = run_sync(judge_units(items, units, judge, embedder, repeats=2, skip={("claim_support:a:0", 0)},
                               on_judgment=seen.append))
    assert len(out) == 7 and len(seen) == 7  # 4 units x 2 repeats - 1 skipped
    assert [(j.unit_id, j.repeat) for j in out][:2] == [("claim_support:a:0", 1), ("claim_support:a:1", 0)]
    assert db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0] == 0  # nothing stored by the core
    assert np.isclose(sum(j.score for j in out), 0.9 + 2 * (0.75 + 0.2 + 0.8))


def test_repeats_of_a_cached_remote_judge_bypass_the_cache(db, monkeypatch):
    """Repeat 0 uses the configured (cached) judge; repeats 1.. an uncached one, same fingerprint."""
    from workbench.config import JudgeConfig
    from workbench.judges import factory

    cached, embedder = scripted_judge()
    fresh, _ = scripted_judge()
    fresh.set_default("is_refusal", True)  # the re-asked judge changes its mind on abstention
    built = []

    def fake_build(config):
        built.append(config.use_cache)
        return fresh, embedder

    monkeypatch.setattr(factory, "build_judge", fake_build)
    config = JudgeConfig(backend="openai", model="m", use_cache=True)
    summary = run_judges(db, config, judge=cached, embedder=embedder, progress=False, repeats=2)
    assert built == [False]
    assert by_unit(db, repeat=0)["abstention:a"].value == "answered"
    assert by_unit(db, repeat=1)["abstention:a"].value == "refused"
    tr = summary["test_retest"]["abstention"]
    assert tr["n"] == 2 and tr["agreement"] == 0.5  # item b refused both times, item a flipped


def test_context_relevance_and_correctness_units_are_judged(tmp_path):
    """Passage units use judge_context on the passage at their rank; correctness uses the reference."""
    from workbench import store
    from workbench.calibration.judging import run_judges
    from workbench.calibration.labelling import answer_units
    from workbench.judges.offline import OfflineEmbedder, OfflineJudge
    from workbench.types import EvalItem, Passage

    item = EvalItem("r1", "What is the refund window on annual plans?", "The refund window is 30 days.",
                    (Passage("a", "The refund window on annual plans is 30 days."), Passage("b", "SMS codes are texted.")),
                    reference="The refund window is 30 days.")
    no_ref = EvalItem("r2", "Q?", "A.", (Passage("c", "x"),))
    db = store.open_db(tmp_path / "t.db")
    store.add_items(db, [item, no_ref])
    units = answer_units([item, no_ref], ["context_relevance", "answer_correctness"])
    assert sorted(u.unit_id for u in units) == ["answer_correctness:r1", "context_relevance:r1:0",
                                                "context_relevance:r1:1", "context_relevance:r2:0"]
    store.add_units(db, units)
    judge = OfflineJudge()
    run_judges(db, judge=judge, embedder=OfflineEmbedder(), progress=False)
    got = {j.unit_id: (j.value, j.score) for j in store.list_judgments(db)}
    assert got["context_relevance:r1:0"] == ("relevant", 1.0)
    assert got["context_relevance:r1:1"][0] == "not_relevant"
    assert got["answer_correctness:r1"] == ("correct", 1.0)
