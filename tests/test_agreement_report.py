"""``workbench.calibration.agreement`` on small hand-built stores, with hand-derived values.

Store A (claim_support, 9 units u0..u8 of item "i"; S = supported, U = unsupported):

    unit   u0 u1 u2 u3 u4 u5 u6 u7 u8
    a      S  S  S  U  U  U  S  U  S
    b      S  S  U  U  U  S  S  U  U
    c      S  S  S  U  U  U  .  .  .
    major  S  S  S  U  U  U  S  U  tie   (u8: one S, one U -> left out, ties = 1)
    judge  S  U  S  U  S  U  S  U  S     (u1: an older "S" row is superseded by "U")

Judge vs majority on u0..u7: human S -> judge S,U,S,S; human U -> judge U,S,U,U, so the
confusion is [[3, 1], [1, 3]], accuracy 6/8 = 0.75, p_o = 0.75, p_e = 0.5*0.5 + 0.5*0.5 = 0.5,
kappa = (0.75 - 0.5) / 0.5 = 0.5; AC1: pi_S = 0.5, p_e = 2 * 0.25 / 1 = 0.5, AC1 = 0.5.
Pairwise a|b on u0..u8: agree on 6 of 9; a has 5 S, b has 4 S: p_e = (5*4 + 4*5) / 81 = 40/81,
kappa = (54/81 - 40/81) / (41/81) = 14/41.
Judge quotes: u0 found, u2 not found, u6 found -> quote hallucination rate 1/3.
"""
from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from workbench import store
from workbench.calibration.agreement import (
    MIN_CALIBRATION_UNITS,
    agreement_report,
    calibration_curves,
    calibration_report,
    disagreements,
    pick_judge,
    retest_agreement,
)
from workbench.config import load_thresholds, save_thresholds
from workbench.types import EvalItem, Judgment, Label, Passage, Unit

A = "S S S U U U S U S".split()
B = "S S U U U S S U U".split()
C = "S S S U U U".split()
JUDGE = "S U S U S U S U S".split()
NAME = {"S": "supported", "U": "unsupported"}
UNITS = [f"claim_support:i:{k}" for k in range(9)]


def _judgment(unit, value, judge="judge@1", **kw):
    return Judgment(unit, "claim_support", judge, NAME.get(value, value), **kw)


@pytest.fixture
def db(tmp_path):
    db = store.open_db(tmp_path / "a.db")
    store.add_items(db, [EvalItem("i", "q?", "answer", (Passage("p", "text"),)),
                         EvalItem("j", "q2?", "answer 2", (Passage("p2", "text 2"),))])
    store.add_units(db, [Unit(u, "claim_support", "i", k, f"claim {k}") for k, u in enumerate(UNITS)])
    store.add_units(db, [Unit(Unit.make_id("answer_relevance", i), "answer_relevance", i, None, "answer")
                         for i in ("i", "j")])
    labels = [Label(UNITS[k], "claim_support", name, NAME[v])
              for name, row in (("a", A), ("b", B), ("c", C)) for k, v in enumerate(row)]
    store.append_labels(db, labels)
    quotes = {0: ("q0", True), 2: ("q2", False), 6: ("q6", True)}
    store.add_judgments(db, [_judgment(UNITS[1], "S", score=0.9)])  # superseded below
    store.add_judgments(db, [
        _judgment(UNITS[k], v, score=0.8 if v == "S" else 0.3,
                  quote=quotes.get(k, (None, None))[0], quote_found=quotes.get(k, (None, None))[1])
        for k, v in enumerate(JUDGE)])
    # repeat 1 flips u0 and u3 (ignored by agreement, used by test-retest)
    rep1 = "U U S S S U S U".split()
    store.add_judgments(db, [_judgment(UNITS[k], v, repeat=1) for k, v in enumerate(rep1)])
    # a second judge: always "supported", one failed call on u3
    store.add_judgments(db, [_judgment(UNITS[k], "S", judge="always@2") for k in range(8) if k != 3]
                        + [Judgment(UNITS[3], "claim_support", "always@2", "", error="timeout")])
    return db


def test_agreement_block_matches_hand_derivation(db):
    report = agreement_report(db, rng=np.random.default_rng(0), n_boot=200)
    block = report["claim_support"]
    assert block["units"] == 9 and block["labelled_units"] == 9
    assert block["annotators"] == ["a", "b", "c"] and block["ties"] == 1
    j = block["judges"]["judge@1"]
    assert j["n"] == 8
    assert j["confusion"] == {"labels": ["supported", "unsupported"], "matrix": [[3, 1], [1, 3]]}
    assert j["kappa"] == pytest.approx(0.5) and j["ac1"] == pytest.approx(0.5) and j["accuracy"] == 0.75
    assert j["quote_hallucination_rate"] == pytest.approx(1 / 3)
    # all nine claims belong to one answer (item "i"): answers are resampled, and one answer
    # gives no interval (a claim-level interval here would pretend to 8 independent units)
    assert block["clustered_by"] == "item"
    assert j["kappa_ci"] == [None, None]
    assert j["too_small"] is True and "only 8 unit(s)" in j["too_small_reason"]
    assert block["human"]["too_small"] is True
    # the judge's scores (0.8 for S, 0.3 for U) against the majority: AUC = P(score of a human
    # positive > score of a human negative), ties counted half, over all 4 x 4 pairs
    pos = [0.8 if v == "S" else 0.3 for v, m in zip(JUDGE[:8], "S S S U U U S U".split()) if m == "S"]
    neg = [0.8 if v == "S" else 0.3 for v, m in zip(JUDGE[:8], "S S S U U U S U".split()) if m == "U"]
    hand_auc = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg) / (len(pos) * len(neg))
    assert j["auc"] == pytest.approx(hand_auc) and 0 < j["auc_p"] <= 1
    assert block["judges"]["always@2"]["auc"] is None  # no scores stored
    # cross-check kappa with scikit-learn on the majority labels
    majority = [NAME[v] for v in "S S S U U U S U".split()]
    assert j["kappa"] == pytest.approx(cohen_kappa_score(majority, [NAME[v] for v in JUDGE[:8]]), abs=1e-12)
    # second judge: errors left out (7 units), one class only -> kappa 0 (p_o = p_e = 4/7)
    j2 = block["judges"]["always@2"]
    assert j2["n"] == 7 and j2["confusion"]["matrix"] == [[4, 0], [3, 0]]
    assert j2["kappa"] == pytest.approx(0.0) and j2["accuracy"] == pytest.approx(4 / 7)
    assert j2["quote_hallucination_rate"] is None


def test_human_ceiling_and_alpha_with_humans_match_reference_packages(db):
    block = agreement_report(db, rng=np.random.default_rng(0), n_boot=200)["claim_support"]
    code = {"S": 0.0, "U": 1.0}
    rows = [[code[v] for v in A], [code[v] for v in B], [code[v] for v in C] + [math.nan] * 3]
    expected_alpha = krippendorff.alpha(reliability_data=rows, level_of_measurement="nominal")
    assert block["human"]["alpha"] == pytest.approx(expected_alpha, abs=1e-9)
    pk = block["human"]["pairwise_kappa"]
    assert pk["a|b"] == pytest.approx(14 / 41, abs=1e-12)
    assert pk["a|c"] == pytest.approx(cohen_kappa_score(A[:6], C), abs=1e-12)
    assert pk["b|c"] == pytest.approx(cohen_kappa_score(B[:6], C), abs=1e-12)
    with_judge = krippendorff.alpha(reliability_data=rows + [[code[v] for v in JUDGE]],
                                    level_of_measurement="nominal")
    assert block["judges"]["judge@1"]["alpha_with_humans"] == pytest.approx(with_judge, abs=1e-9)


def test_tasks_without_labels_or_units(db):
    report = agreement_report(db, rng=np.random.default_rng(0), n_boot=50)
    assert report["answer_faithfulness"] == {} and report["abstention"] == {}
    rel = report["answer_relevance"]
    assert {k: rel[k] for k in ("units", "labelled_units", "annotators", "ties", "judges")} == {
        "units": 2, "labelled_units": 0, "annotators": [], "ties": 0, "judges": {}}
    assert {k: rel["human"][k] for k in ("alpha", "alpha_ci", "pairwise_kappa", "too_small")} == {
        "alpha": None, "alpha_ci": [None, None], "pairwise_kappa": {}, "too_small": True}
    assert rel["clustered_by"] is None
    assert list(report)[:4] == ["claim_support", "answer_relevance", "answer_faithfulness", "abstention"]


def test_same_rng_seed_gives_same_report(db):
    one = agreement_report(db, rng=np.random.default_rng(7), n_boot=100)
    two = agreement_report(db, rng=np.random.default_rng(7), n_boot=100)
    assert one == two


def test_disagreements_lists_units_for_review(db):
    frame = disagreements(db, task="claim_support", judge="judge@1")
    assert list(frame["unit_id"]) == [UNITS[1], UNITS[4]]
    assert list(frame["human"]) == ["supported", "unsupported"]
    assert list(frame["judge"]) == ["unsupported", "supported"]
    assert list(frame["text"]) == ["claim 1", "claim 4"] and list(frame["n_labels"]) == [3, 3]
    assert disagreements(db, task="abstention", judge="judge@1").empty


def test_test_retest_between_repeats(db):
    result = retest_agreement(db, task="claim_support", judge="judge@1")
    rep0 = [NAME[v] for v in JUDGE[:8]]
    rep1 = [NAME[v] for v in "U U S S S U S U".split()]
    assert result["repeats"] == 2 and result["n"] == 8 and result["agreement"] == 0.75
    assert result["kappa"] == pytest.approx(cohen_kappa_score(rep0, rep1), abs=1e-12)
    assert retest_agreement(db, task="claim_support", judge="always@2") == {
        "repeats": 1, "n": 0, "kappa": None, "pairwise": {}, "agreement": None}


# ------------------------------------------------------------------------------------------
# calibration

POS_SCORES = [0.6, 0.7, 0.8, 0.9, 0.95, 0.65]
NEG_SCORES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.55]


@pytest.fixture
def cal_db(tmp_path):
    """12 claims, one annotator; the judge's scores separate the classes between 0.55 and 0.6."""
    db = store.open_db(tmp_path / "c.db")
    store.add_items(db, [EvalItem("k", "q?", "answer", (Passage("p", "t"),))])
    units = [Unit(f"claim_support:k:{i}", "claim_support", "k", i, f"c{i}") for i in range(12)]
    rel = [Unit("answer_relevance:k", "answer_relevance", "k", None, "answer")]
    store.add_units(db, units + rel)
    human = ["supported"] * 6 + ["unsupported"] * 6
    store.append_labels(db, [Label(u.unit_id, u.task, "ann", v) for u, v in zip(units, human)]
                        + [Label(rel[0].unit_id, "answer_relevance", "ann", "relevant")])
    scores = POS_SCORES + NEG_SCORES
    store.add_judgments(db, [Judgment(u.unit_id, u.task, "big@1", "supported" if s >= 0.5 else "unsupported",
                                      score=s) for u, s in zip(units, scores)]
                        + [Judgment(rel[0].unit_id, "answer_relevance", "big@1", "relevant", score=0.9)])
    store.add_judgments(db, [Judgment(units[0].unit_id, "claim_support", "small@2", "supported", score=0.9)])
    return db


def test_calibration_report_picks_threshold_and_judge(cal_db, tmp_path):
    payload = calibration_report(cal_db, rng=np.random.default_rng(0), n_boot=200)
    assert payload["judge"] == "big@1" and "most judgments (13)" in payload["notes"]["judge"]
    cs = payload["claim_support"]
    # kappa is 1 for any threshold in (0.55, 0.6]; candidates are scores and midpoints; the tie
    # rule takes the one closest to 0.5: the midpoint 0.575
    assert cs["threshold"] == pytest.approx(0.575) and cs["kappa"] == 1.0 and cs["n"] == 12
    assert "faithfulness" not in payload
    assert "only 0 unit(s)" in payload["notes"]["faithfulness"]
    assert "only 1 unit(s)" in payload["notes"]["answer_relevance"]
    path = save_thresholds(payload, tmp_path / "thresholds.json")
    th = load_thresholds(path)
    assert th.claim_support == pytest.approx(0.575) and th.judge == "big@1"
    assert th.faithfulness == 0.85 and th.answer_relevance == 0.70  # defaults kept


def test_thresholds_file_problems_name_the_file(tmp_path):
    from workbench.config import ThresholdsError

    path = tmp_path / "thresholds.json"
    for text, fragment in (("[0.8]", "expected a JSON object, got list"), ("{", "line 1: not valid JSON"),
                           ('{"faithfulness": {"threshold": 2}}', "field faithfulness.threshold")):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ThresholdsError, match=fragment) as caught:
            load_thresholds(path)
        assert str(path) in str(caught.value)
    with pytest.raises(ThresholdsError, match="thresholds file not found"):
        load_thresholds(tmp_path / "missing.json")


def test_calibration_for_a_named_judge_and_one_class_note(cal_db):
    payload = calibration_report(cal_db, judge="small@2", rng=np.random.default_rng(0), n_boot=50)
    assert payload["judge"] == "small@2" and "judge" not in payload["notes"]
    assert "claim_support" not in payload and str(MIN_CALIBRATION_UNITS) in payload["notes"]["claim_support"]


def test_calibration_with_no_judgments(tmp_path):
    db = store.open_db(tmp_path / "e.db")
    assert pick_judge(db) == (None, 0)
    payload = calibration_report(db, rng=np.random.default_rng(0))
    assert payload["judge"] is None and "run `workbench judge` first" in payload["notes"]["judge"]


def test_calibration_curves_for_charts(cal_db):
    curves = calibration_curves(cal_db)
    assert set(curves) == {"claim_support"}
    c = curves["claim_support"]
    assert c["chosen"] == pytest.approx(0.575) and c["judge"] == "big@1"
    assert {"threshold", "kappa", "f1", "youden_j"} <= set(c["sweep"].columns)
    assert c["reliability"]["n"].sum() == 12
    # the score separates the classes: the smoothed logistic fit has a positive slope
    assert c["logistic"]["slope"] > 0 and c["logistic"]["method"] == "smoothed"


@pytest.mark.parametrize("errors, expected", [
    # all-or-nothing per answer: grand mean 1/3, MSB = (4/3)/2, MSW = 0 -> ICC 1
    ([[1, 1], [0, 0], [0, 0]], 1.0),
    # one error per answer: MSB = 0, MSW = 1.5/3 = 0.5, k0 = 2 -> ICC = -0.5/0.5 = -1
    ([[1, 0], [1, 0], [0, 1]], -1.0),
])
def test_intra_answer_error_correlation(tmp_path, errors, expected):
    from workbench.calibration.agreement import intra_answer_error_correlation

    db = store.open_db(tmp_path / "icc.db")
    units, labels, judgments = [], [], []
    for g, row in enumerate(errors):
        store.add_items(db, [EvalItem(f"g{g}", "q", "a", (Passage("p", "t"),))])
        for k, err in enumerate(row):
            unit = Unit(f"claim_support:g{g}:{k}", "claim_support", f"g{g}", k, "c")
            units.append(unit)
            labels.append(Label(unit.unit_id, "claim_support", "h", "supported"))
            judgments.append(Judgment(unit.unit_id, "claim_support", "j@1", "unsupported" if err else "supported"))
    store.add_units(db, units)
    store.append_labels(db, labels)
    store.add_judgments(db, judgments)
    result = intra_answer_error_correlation(db, judge="j@1")
    assert result["items"] == 3 and result["claims"] == 6
    assert result["error_rate"] == pytest.approx(sum(map(sum, errors)) / 6)
    assert result["icc"] == pytest.approx(expected)


def test_calibration_warns_when_the_judge_is_no_better_than_chance(tmp_path):
    """Scores unrelated to the human labels: a threshold is still found, with a warning note."""
    import numpy as np

    from workbench import store
    from workbench.calibration.agreement import calibration_report
    from workbench.types import EvalItem, Judgment, Label, Unit

    db = store.open_db(tmp_path / "c.db")
    rng = np.random.default_rng(1)
    items = [EvalItem(f"i{k}", "Q?", "A.", ()) for k in range(60)]
    store.add_items(db, items)
    units = [Unit(Unit.make_id("answer_relevance", i.id), "answer_relevance", i.id, None, "A.") for i in items]
    store.add_units(db, units)
    store.append_labels(db, [Label(u.unit_id, "answer_relevance", "ann", "relevant" if k % 2 else "not_relevant")
                             for k, u in enumerate(units)])
    store.add_judgments(db, [Judgment(u.unit_id, "answer_relevance", "noise", "relevant", score=float(s))
                             for u, s in zip(units, rng.uniform(size=len(units)))])
    payload = calibration_report(db, judge="noise", rng=np.random.default_rng(0), n_boot=300)
    assert "answer_relevance" in payload
    # the kappa at the best of many thresholds is optimistic; the threshold-free AUC test is not
    assert payload["answer_relevance"]["auc_p_value"] >= 0.05
    assert "better than chance" in payload["notes"]["answer_relevance"]
