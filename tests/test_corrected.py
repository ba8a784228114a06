"""Corrected rates (workbench.calibration.corrections): hand-derived values, degenerate notes, `score --db`, queue order."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from workbench import store
from workbench.calibration.corrections import (
    corrected_block,
    corrected_from_db,
    corrected_rates,
    record_positive,
)
from workbench.cli.score import score
from workbench.reports.console import format_corrected
from workbench.scoring.dataset import load_eval_set
from workbench.stats.active import priority_order
from workbench.stats.correction import NOT_BETTER_THAN_CHANCE
from workbench.types import ItemScore, Judgment, Label, Thresholds, Unit

T = Thresholds()  # faithfulness 0.85, relevance 0.70


def rng():
    return np.random.default_rng(0)


def rec(i, faith=None, rel=None, abstained=False, answerable=True):
    return ItemScore(f"q{i}", faithfulness=faith, answer_relevance=rel, abstained=abstained, answerable=answerable)


def test_record_positive_uses_thresholds_inclusively_and_populations():
    assert record_positive(rec(0, faith=0.85), "faithfulness_pass", T) is True
    assert record_positive(rec(0, faith=0.84), "faithfulness_pass", T) is False
    assert record_positive(rec(0, rel=0.70), "relevance_pass", T) is True
    assert record_positive(rec(0), "faithfulness_pass", T) is None  # not scored
    assert record_positive(rec(0, abstained=True, answerable=False), "abstention_rate", T) is True
    assert record_positive(rec(0, abstained=True, answerable=False), "false_refusal_rate", T) is None
    assert record_positive(rec(0, abstained=True, answerable=True), "false_refusal_rate", T) is True


def test_rogan_gladen_value_from_store_judgments_hand_derived():
    # Scored run: 10 items, 6 at/above 0.85 -> raw judge rate 0.6.
    records = [rec(i, faith=0.9 if i < 6 else 0.5) for i in range(10)]
    # 10 labelled items from another set (ids l0..l9), judge verdicts from the store (scores):
    # humans positive l0..l4, judge passes l0..l3 -> sensitivity 4/5 = 0.8;
    # humans negative l5..l9, judge passes only l5   -> specificity 4/5 = 0.8.
    human = {"answer_faithfulness": {f"l{i}": i < 5 for i in range(10)}}
    stored = {"answer_faithfulness": {f"l{i}": ("", 0.9 if i in (0, 1, 2, 3, 5) else 0.2) for i in range(10)}}
    out = corrected_rates(records, human, stored, thresholds=T, rng=rng())
    block = out["faithfulness_pass"]
    # Rogan-Gladen: (0.6 + 0.8 - 1) / (0.8 + 0.8 - 1) = 0.4 / 0.6 = 2/3
    assert block["raw"] == pytest.approx(0.6)
    assert block["sensitivity"] == pytest.approx(0.8) and block["specificity"] == pytest.approx(0.8)
    assert block["rogan_gladen"] == pytest.approx(2 / 3)
    low, high = block["rogan_gladen_ci"]
    assert low is not None and low <= 2 / 3 <= high and high - low > 0.2  # 10 labels: a wide interval
    assert block["n_labelled"] == 10 and block["n_ppi_labelled"] == 0
    assert block["ppi"] is None and "PPI: needs at least 2" in block["note"]
    # The same verdicts, stored at a lower threshold, flip with the run's threshold (0.85):
    stored_low = {"answer_faithfulness": {k: ("", 0.8) for k in stored["answer_faithfulness"]}}
    flipped = corrected_rates(records, human, stored_low, thresholds=T, rng=rng())["faithfulness_pass"]
    assert flipped["sensitivity"] == 0.0 and flipped["specificity"] == 1.0 and flipped["rogan_gladen"] is None
    assert NOT_BETTER_THAN_CHANCE in flipped["note"]


def test_ppi_on_labelled_subset_of_the_same_run_hand_derived():
    # 10 scored items; items q0..q3 have human labels [1, 1, 0, 0], judge verdicts [1, 0, 0, 0]
    # (from the run's records); unlabelled q4..q9 judge verdicts [1, 1, 1, 0, 0, 0].
    faith = [0.9, 0.5, 0.5, 0.5, 0.9, 0.9, 0.9, 0.1, 0.1, 0.1]
    records = [rec(i, faith=f) for i, f in enumerate(faith)]
    human = {"answer_faithfulness": {"q0": True, "q1": True, "q2": False, "q3": False}}
    block = corrected_rates(records, human, {}, thresholds=T, rng=rng())["faithfulness_pass"]
    # PPI = mean(unlabelled judge) + mean(human - judge) = 0.5 + 0.25 = 0.75
    # se = sqrt(var([1,1,1,0,0,0])/6 + var([0,1,0,0])/4) = sqrt(0.3/6 + 0.25/4) = sqrt(0.1125)
    assert block["ppi"] == pytest.approx(0.75)
    se = 0.1125 ** 0.5
    assert block["ppi_ci"][0] == pytest.approx(0.75 - 1.959964 * se, abs=1e-5)
    assert block["ppi_ci"][1] == 1.0  # clipped to [0, 1]
    # Rogan-Gladen on the same 4 labelled pairs: sens 1/2, spec 1, raw 4/10 -> (0.4+1-1)/0.5 = 0.8
    assert block["sensitivity"] == 0.5 and block["specificity"] == 1.0
    assert block["rogan_gladen"] == pytest.approx(0.8)
    assert block["n_labelled"] == 4 and block["n_ppi_labelled"] == 4
    assert "resamples had an undefined correction and were skipped" in block["note"]  # 4 labels only


def test_same_id_other_content_is_not_part_of_the_run():
    records = [rec(i, faith=0.9 if i % 2 else 0.1) for i in range(6)]
    human = {"answer_faithfulness": {"q0": True, "q1": False, "q2": True}}
    stored = {"answer_faithfulness": {"q0": ("", 0.9), "q1": ("", 0.1), "q2": ("", 0.9)}}
    block = corrected_rates(records, human, stored, thresholds=T, rng=rng(), same_set=set())["faithfulness_pass"]
    # verdicts come from the store (q0, q2 pass, q1 fails: a perfect judge), no PPI subset
    assert block["sensitivity"] == 1.0 and block["specificity"] == 1.0 and block["n_ppi_labelled"] == 0
    assert block["rogan_gladen"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    "pairs, expected",
    [
        ([], "no human-labelled answer_faithfulness"),
        ([(True, True), (True, False)], "needs human positives and negatives (has 2 positive, 0 negative)"),
        ([(True, True), (True, False), (False, True), (False, False)], NOT_BETTER_THAN_CHANCE),
    ],
    ids=["no-labels", "one-human-class", "chance-judge"],
)
def test_degenerate_cases_give_a_note_and_null_numbers(pairs, expected):
    block = corrected_block([True, False, True], pairs, rng=rng(), task="answer_faithfulness")
    assert block["raw"] == pytest.approx(2 / 3)
    assert block["rogan_gladen"] is None and block["rogan_gladen_ci"] == [None, None]
    assert expected in block["note"]


def test_nothing_scored_is_null_with_a_note():
    block = corrected_block([], [(True, True), (False, False)], rng=rng())
    assert block["raw"] is None and block["rogan_gladen"] is None and block["ppi"] is None
    assert block["note"] == "nothing scored for this rate in the run"


def test_abstention_rates_share_refusal_detection_across_answerability():
    records = [rec(0, abstained=True, answerable=False), rec(1, abstained=False, answerable=False),
               rec(2, abstained=True, answerable=True), rec(3, abstained=False, answerable=True),
               rec(4, abstained=False, answerable=True), rec(5, abstained=False, answerable=True)]
    # humans: q0 refused (judge yes), q1 refused (judge no), q2 answered (judge yes), q3 answered (judge no)
    human = {"abstention": {"q0": True, "q1": True, "q2": False, "q3": False}}
    out = corrected_rates(records, human, {}, thresholds=T, rng=rng())
    for key in ("abstention_rate", "false_refusal_rate"):
        assert out[key]["n_labelled"] == 4
        assert out[key]["sensitivity"] == 0.5 and out[key]["specificity"] == 0.5
        assert out[key]["rogan_gladen"] is None
    assert out["abstention_rate"]["raw"] == 0.5 and out["false_refusal_rate"]["raw"] == 0.25
    assert out["abstention_rate"]["n_ppi_labelled"] == 2 and out["false_refusal_rate"]["n_ppi_labelled"] == 2


def test_priority_order_disagreement_first_then_near_threshold_then_unscored():
    scores = [0.9, 0.52, None, 0.1, 0.45, 0.5]
    assert priority_order(scores, threshold=0.5) == [5, 1, 4, 0, 3, 2]
    second = [0.9, 0.52, 0.7, 0.6, 0.45, None]
    # unit 3: 0.1 vs 0.6 disagree (mean 0.35); unit 2 has only the second score (0.7)
    assert priority_order(scores, threshold=0.5, second_scores=second) == [3, 5, 1, 4, 2, 0]
    with pytest.raises(ValueError, match="second_scores has 1 values"):
        priority_order(scores, threshold=0.5, second_scores=[0.1])


def test_format_corrected_is_readable():
    block = corrected_block([True] * 6 + [False] * 4, [(True, True)] * 4 + [(True, False)] + [(False, False)] * 4
                            + [(False, True)], rng=rng())
    text = "\n".join(format_corrected({"faithfulness_pass": block, "relevance_pass": corrected_block([], [], rng=rng())}))
    assert "faithfulness pass   60.0%      66.7% [" in text
    assert "0.80 / 0.80 (n=10)" in text
    assert "relevance pass: nothing scored for this rate in the run" in text


# ---------------------------------------------------------------------------------------------
# the CLI path: offline judge on 5 demo items, a temp store with a few labels

def _store_with_labels(path, items, fingerprint):
    db = store.open_db(path)
    store.add_items(db, items)
    units = [Unit(Unit.make_id(task, i.id), task, i.id, None, i.answer)
             for i in items for task in ("answer_faithfulness", "answer_relevance")]
    store.add_units(db, units, source="test")
    labels = [("answer_faithfulness", "q-01", "faithful"), ("answer_faithfulness", "q-02", "unfaithful"),
              ("answer_faithfulness", "q-03", "faithful"), ("answer_relevance", "q-01", "relevant")]
    store.append_labels(db, [Label(Unit.make_id(t, i), t, "ann", v) for t, i, v in labels])
    # a stored judgment of this judge is ignored for an item the run scored itself
    store.add_judgments(db, [Judgment("answer_faithfulness:q-02", "answer_faithfulness", fingerprint, "faithful", 1.0)])
    db.conn.close()


def test_score_with_db_fills_corrected(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache.db"))
    monkeypatch.setenv("WORKBENCH_DB", str(tmp_path / "absent.db"))
    lines = open("data/demo_rag.jsonl", encoding="utf-8").read().splitlines()[:5]
    evalset = tmp_path / "five.jsonl"
    evalset.write_text("\n".join(lines) + "\n", encoding="utf-8")
    runner = CliRunner()
    plain = runner.invoke(score, [str(evalset), "--out", str(tmp_path / "plain"), "--json"])
    assert plain.exit_code == 0, plain.output
    summary = json.loads((tmp_path / "plain" / "summary.json").read_text())
    assert summary["corrected"] is None  # no store at the default path
    records = [json.loads(l) for l in (tmp_path / "plain" / "items.jsonl").read_text().splitlines()]
    passed = {r["id"]: r["faithfulness"] >= 0.85 for r in records}
    # the offline judge passes only q-01 (faithfulness 1.0); q-02..q-05 score 0.5
    assert passed == {"q-01": True, "q-02": False, "q-03": False, "q-04": False, "q-05": False}

    db = tmp_path / "labels.db"
    _store_with_labels(db, load_eval_set(evalset), summary["judge"]["fingerprint"])
    result = runner.invoke(score, [str(evalset), "--out", str(tmp_path / "run"), "--db", str(db)])
    assert result.exit_code == 0, result.output
    corrected = json.loads((tmp_path / "run" / "summary.json").read_text())["corrected"]
    faith = corrected["faithfulness_pass"]
    # labelled: q-01 (human T, judge T), q-02 (F, F), q-03 (T, F) -> sens 1/2, spec 1; raw 1/5
    # Rogan-Gladen: (0.2 + 1 - 1) / (0.5 + 1 - 1) = 0.4
    assert faith["raw"] == pytest.approx(0.2) and faith["rogan_gladen"] == pytest.approx(0.4)
    assert faith["sensitivity"] == 0.5 and faith["specificity"] == 1.0 and faith["n_labelled"] == 3
    # PPI: unlabelled q-04, q-05 judge 0, 0; rectifier [0, 0, 1] -> 0 + 1/3
    assert faith["ppi"] == pytest.approx(1 / 3) and faith["n_ppi_labelled"] == 3
    assert corrected["relevance_pass"]["rogan_gladen"] is None
    assert "has 1 positive, 0 negative" in corrected["relevance_pass"]["note"]
    assert "no human-labelled abstention" in corrected["false_refusal_rate"]["note"]
    assert corrected["abstention_rate"]["raw"] is None  # no unanswerable items in the five
    assert "corrected rates (judge errors measured against human labels; 95% CI)" in result.output
    assert "faithfulness pass   20.0%      40.0%" in result.output
    assert "Rogan-Gladen: no interval, too few labelled units" in result.output

    missing = runner.invoke(score, [str(evalset), "--db", str(tmp_path / "nope.db")])
    assert missing.exit_code == 2 and "no such label store" in missing.output

    # the claim threshold is shown beside the other two (default: the judge's own verdict)
    assert "claim support the judge's own verdict (default)" in result.output
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["thresholds"]["claim_support"] is None

    # choosing annotators: a second annotator ("robot") ties q-03 and calls q-04 unfaithful; left out,
    # the numbers are the ones above
    conn = store.open_db(db)
    store.append_labels(conn, [Label("answer_faithfulness:q-03", "answer_faithfulness", "robot", "unfaithful"),
                               Label("answer_faithfulness:q-04", "answer_faithfulness", "robot", "unfaithful")])
    conn.conn.close()
    chosen = runner.invoke(score, [str(evalset), "--out", str(tmp_path / "chosen"), "--db", str(db),
                                   "--exclude-annotators", "robot"])
    assert chosen.exit_code == 0, chosen.output
    faith2 = json.loads((tmp_path / "chosen" / "summary.json").read_text())["corrected"]["faithfulness_pass"]
    assert faith2["rogan_gladen"] == pytest.approx(0.4) and faith2["n_labelled"] == 3
    assert faith2["annotators"] == ["ann"]
    everyone = runner.invoke(score, [str(evalset), "--out", str(tmp_path / "all"), "--db", str(db)])
    assert everyone.exit_code == 0, everyone.output
    faith3 = json.loads((tmp_path / "all" / "summary.json").read_text())["corrected"]["faithfulness_pass"]
    # counted, robot's labels give q-01 (T, T), q-02 (F, F), q-04 (F, F); q-03 tied and left out:
    # sensitivity 1, specificity 1 -> the corrected rate is the raw 0.2
    assert faith3["rogan_gladen"] == pytest.approx(0.2) and "annotators" not in faith3
    typo = runner.invoke(score, [str(evalset), "--db", str(db), "--annotators", "anne"])
    assert typo.exit_code == 2 and "unknown annotator(s) 'anne'" in typo.output


def test_corrected_from_db_direct(tmp_path):
    items = load_eval_set("data/demo_rag.jsonl")[:3]
    db = tmp_path / "s.db"
    _store_with_labels(db, items, "judge-x")
    records = [rec(0, faith=1.0), rec(1, faith=0.5)]  # ids q0, q1: not the store's ids
    out = corrected_from_db(db, records, thresholds=T, fingerprint="judge-x", rng=rng())
    # only q-02 has a stored verdict by judge-x (faithful, score 1.0) and a label (unfaithful)
    assert out["faithfulness_pass"]["n_labelled"] == 1 and out["faithfulness_pass"]["specificity"] == 0.0


def test_rates_stay_in_0_1_with_the_unclipped_estimate_and_a_note():
    # sensitivity 0.8 (4 of 5 human positives), specificity 0.8 (4 of 5): the judge's rate can only
    # range over [0.2, 0.8]; a raw rate of 0.9 gives (0.9 + 0.8 - 1) / 0.6 = 7/6 = 116.7 %
    pairs = [(True, True)] * 4 + [(True, False)] + [(False, False)] * 4 + [(False, True)]
    block = corrected_block([True] * 9 + [False], pairs, rng=rng())
    assert block["rogan_gladen"] == 1.0
    assert block["rogan_gladen_unclipped"] == pytest.approx(7 / 6)
    assert block["clipped"] is True and block["unstable"] is False
    assert "116.7%" in block["note"] and "reported as 100%" in block["note"]
    assert all(0.0 <= v <= 1.0 for v in block["rogan_gladen_ci"])
    # below the range: raw 0.1 -> (0.1 - 0.2) / 0.6 = -16.7 %, reported as 0
    low = corrected_block([True] + [False] * 9, pairs, rng=rng())
    assert low["rogan_gladen"] == 0.0 and low["rogan_gladen_unclipped"] == pytest.approx(-1 / 6)
    assert "-16.7%" in low["note"]
    # inside the range: nothing clipped, no note about it
    mid = corrected_block([True] * 5 + [False] * 5, pairs, rng=rng())
    assert mid["clipped"] is False and mid["rogan_gladen"] == pytest.approx(mid["rogan_gladen_unclipped"])
    assert "outside" not in (mid["note"] or "")
    # and the CLI table prints the note
    text = "\n".join(format_corrected({"faithfulness_pass": block}))
    assert "116.7%" in text


def test_ppi_estimate_clipped_to_0_1():
    # labelled items: humans all positive, judge all negative -> rectifier +1; judge rate on the
    # unlabelled items 0.5 -> PPI = 0.5 + 1 = 150 %, reported as 100 %
    pairs = [(True, False)] * 3
    block = corrected_block([False] * 3 + [True, False], pairs, same_set_pairs=pairs,
                            same_set_unlabelled=[True, False], rng=rng())
    assert block["ppi_unclipped"] == pytest.approx(1.5) and block["ppi"] == 1.0
    assert block["clipped"] is True and "PPI: the estimate 150.0%" in block["note"]


def test_correction_flagged_unstable_when_sensitivity_plus_specificity_near_one():
    # sensitivity 0.6, specificity 0.5: J = 0.1 < 0.2, errors amplified 10 times
    pairs = [(True, True)] * 6 + [(True, False)] * 4 + [(False, False)] * 5 + [(False, True)] * 5
    block = corrected_block([True] * 5 + [False] * 5, pairs, rng=rng())
    assert block["youden_j"] == pytest.approx(0.1) and block["unstable"] is True
    assert "unstable correction" in block["note"] and "amplified 10 times" in block["note"]
