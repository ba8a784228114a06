"""Agreement statistics: golden cases (hand-derived), cross-checks with scikit-learn and the
krippendorff package, property tests and the degenerate-case rules."""
from __future__ import annotations

import json
import math
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from workbench.stats import (
    Confusion,
    accuracy,
    agreement_with_ci,
    cohen_kappa,
    confusion,
    gwet_ac1,
    gwet_ac1_raters,
    human_agreement,
    krippendorff_alpha,
    majority_label,
)

CASES = Path(__file__).parent / "cases" / "agreement"
KAPPA_CASES = json.loads((CASES / "kappa.json").read_text())["cases"]
ALPHA_CASES = json.loads((CASES / "alpha.json").read_text())["cases"]


def _units(case: dict) -> tuple[list, list]:
    if "table" in case:
        a, b = [], []
        for i, row in enumerate(case["table"]):
            for j, count in enumerate(row):
                a += [case["labels"][i]] * count
                b += [case["labels"][j]] * count
        return a, b
    return case["a"], case["b"]


@pytest.mark.parametrize("case", KAPPA_CASES, ids=[c["id"] for c in KAPPA_CASES])
def test_kappa_golden(case):
    a, b = _units(case)
    got = cohen_kappa(a, b, labels=case["labels"], weights=case["weights"])
    if case["kappa"] is None:
        assert got is None
    else:
        assert got == pytest.approx(case["kappa"], abs=1e-12)
        # cross-check: scikit-learn on the same units
        assert got == pytest.approx(
            cohen_kappa_score(a, b, labels=case["labels"], weights=case["weights"]), abs=1e-12
        )
    if "ac1" in case:
        ac1 = gwet_ac1(a, b, labels=case["labels"])
        assert ac1 is None if case["ac1"] is None else ac1 == pytest.approx(case["ac1"], abs=1e-12)
    if "accuracy" in case:
        acc = accuracy(a, b)
        assert acc is None if case["accuracy"] is None else acc == pytest.approx(case["accuracy"])


@pytest.mark.parametrize("case", ALPHA_CASES, ids=[c["id"] for c in ALPHA_CASES])
def test_alpha_golden(case):
    got = krippendorff_alpha(case["data"], level=case["level"], labels=case["labels"])
    if case["alpha"] is None:
        assert got is None
        return
    assert got == pytest.approx(case["alpha"], abs=case.get("tolerance", 1e-12))
    # cross-check against the krippendorff package on the coded matrix
    codes = {lab: i for i, lab in enumerate(case["labels"])}
    numeric = all(isinstance(x, int | float) for x in case["labels"])
    data = np.array(
        [[np.nan if v is None else (v if numeric else codes[v]) for v in row] for row in case["data"]], dtype=float
    )
    domain = case["labels"] if numeric else list(range(len(case["labels"])))
    assert got == pytest.approx(krippendorff.alpha(data, value_domain=domain, level_of_measurement=case["level"]))


def test_alpha_mapping_form_equals_matrix_form():
    rows = {"ann": {"u1": "x", "u2": "y", "u3": "y"}, "bob": {"u1": "x", "u3": "x", "u2": "y"}, "cy": {"u2": "y"}}
    matrix = [["x", "y", "y"], ["x", "y", "x"], [None, "y", None]]
    assert krippendorff_alpha(rows, labels=["x", "y"]) == pytest.approx(krippendorff_alpha(matrix, labels=["x", "y"]))


def test_alpha_ordinal_strings_need_labels():
    with pytest.raises(ValueError, match="labels"):
        krippendorff_alpha([["low", "high"], ["low", "low"]], level="ordinal")


def test_alpha_unknown_value_names_rater_and_unit():
    with pytest.raises(ValueError, match=r"rater 1, unit 2: value 'maybe'"):
        krippendorff_alpha([["x", "y", "x"], ["x", "y", "maybe"]], labels=["x", "y"])


def test_alpha_ordinal_matches_package_random():
    rng = np.random.default_rng(3)
    data = rng.integers(1, 6, size=(3, 40)).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan
    rows = [[None if math.isnan(v) else int(v) for v in r] for r in data]
    for level in ("nominal", "ordinal", "interval"):
        assert krippendorff_alpha(rows, level=level, labels=[1, 2, 3, 4, 5]) == pytest.approx(
            krippendorff.alpha(data, value_domain=[1, 2, 3, 4, 5], level_of_measurement=level)
        )


# ------------------------------------------------------------------ properties

labels_st = st.lists(st.sampled_from(["p", "q", "r"]), min_size=2, max_size=40)


@st.composite
def paired(draw):
    a = draw(labels_st)
    b = draw(st.lists(st.sampled_from(["p", "q", "r"]), min_size=len(a), max_size=len(a)))
    return a, b


@settings(max_examples=60, deadline=None, derandomize=True)
@given(paired(), st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_symmetric_and_matches_sklearn(pair, weights):
    a, b = pair
    labels = ["p", "q", "r"]
    k_ab = cohen_kappa(a, b, labels=labels, weights=weights)
    k_ba = cohen_kappa(b, a, labels=labels, weights=weights)
    assert (k_ab is None) == (k_ba is None)
    if k_ab is not None:
        assert k_ab == pytest.approx(k_ba, abs=1e-12)
        assert -1.0 - 1e-12 <= k_ab <= 1.0 + 1e-12
        assert k_ab == pytest.approx(cohen_kappa_score(a, b, labels=labels, weights=weights), abs=1e-9)
    else:
        # the one rule: None exactly when both raters used the same single class
        assert len(set(a) | set(b)) == 1


@settings(max_examples=60, deadline=None, derandomize=True)
@given(paired(), st.randoms(use_true_random=False))
def test_kappa_invariant_to_order_and_renaming(pair, rnd):
    a, b = pair
    base = cohen_kappa(a, b)
    order = list(range(len(a)))
    rnd.shuffle(order)
    shuffled = cohen_kappa([a[i] for i in order], [b[i] for i in order])
    rename = {"p": "zeta", "q": "alpha", "r": "mid"}
    renamed = cohen_kappa([rename[x] for x in a], [rename[x] for x in b])
    for other in (shuffled, renamed):
        assert (base is None) == (other is None)
        if base is not None:
            assert other == pytest.approx(base, abs=1e-12)
    ac1 = gwet_ac1(a, b, labels=["p", "q", "r"])
    ac1_renamed = gwet_ac1([rename[x] for x in a], [rename[x] for x in b], labels=["zeta", "alpha", "mid"])
    assert ac1 == pytest.approx(ac1_renamed, abs=1e-12)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(paired())
def test_two_rater_ac1_equals_multi_rater_form(pair):
    a, b = pair
    assert gwet_ac1_raters([a, b], labels=["p", "q", "r"]) == pytest.approx(
        gwet_ac1(a, b, labels=["p", "q", "r"]), abs=1e-12
    )


# ------------------------------------------------------------------ degenerate rules


def test_ac1_defined_when_one_class_dominates_and_kappa_collapses():
    a = ["yes"] * 100
    b = ["yes"] * 98 + ["no"] * 2
    assert cohen_kappa(a, b, labels=["yes", "no"]) == 0.0
    assert gwet_ac1(a, b, labels=["yes", "no"]) > 0.97
    # one class only: kappa undefined (None), AC1 still 1
    assert cohen_kappa(a, a, labels=["yes", "no"]) is None
    assert gwet_ac1(a, a, labels=["yes", "no"]) == 1.0
    # AC1 needs K >= 2 categories: without labels only one is observed
    assert gwet_ac1(a, a) is None


def test_fewer_than_two_units_is_none():
    assert cohen_kappa(["x"], ["y"], labels=["x", "y"]) is None
    assert cohen_kappa([], [], labels=["x", "y"]) is None
    assert gwet_ac1(["x"], ["x"], labels=["x", "y"]) is None
    assert krippendorff_alpha([["x"], ["y"]], labels=["x", "y"]) is None
    assert gwet_ac1_raters([["x"], ["y"]], labels=["x", "y"]) is None


def test_all_raters_agree_alpha_none_but_ac1_one():
    data = [["x"] * 5, ["x"] * 5, ["x"] * 5]
    assert krippendorff_alpha(data, labels=["x", "y"]) is None
    assert gwet_ac1_raters(data, labels=["x", "y"]) == 1.0


def test_missing_pairs_are_left_out():
    a = ["x", "y", None, "x", float("nan")]
    b = ["x", "y", "x", None, "y"]
    assert cohen_kappa(a, b, labels=["x", "y"]) == 1.0
    assert agreement_with_ci(a, b, labels=["x", "y"], rng=np.random.default_rng(0), n_boot=50)["n"] == 2


def test_value_outside_labels_raises():
    with pytest.raises(ValueError, match=r"second rater's value 'maybe' is not one of labels"):
        cohen_kappa(["x", "y"], ["x", "maybe"], labels=["x", "y"])
    with pytest.raises(ValueError, match="same units"):
        cohen_kappa(["x"], ["x", "y"])
    with pytest.raises(ValueError, match="weights"):
        cohen_kappa(["x", "y"], ["x", "y"], weights="cubic")


# ------------------------------------------------------------------ confusion, majority


def test_confusion_rows_are_first_argument():
    human = ["supported", "supported", "unsupported", "unsupported", "unsupported"]
    judge = ["supported", "unsupported", "supported", "supported", "unsupported"]
    c = confusion(human, judge, labels=["supported", "unsupported"])
    # row "supported" (human): judge said supported once, unsupported once
    assert c.matrix == ((1, 1), (2, 1))
    assert c.n == 5
    assert c.to_dict() == {"labels": ["supported", "unsupported"], "matrix": [[1, 1], [2, 1]]}
    assert isinstance(c, Confusion)
    assert confusion(judge, human, labels=["supported", "unsupported"]).matrix == ((1, 2), (1, 1))


def test_majority_label_ties_left_out_and_listed():
    maj, ties = majority_label(
        {"u1": ["a", "a", "b"], "u2": ["a", "b"], "u3": ["b"], "u4": [], "u5": ["a", None, None], "u6": ["b", "a", "c", "a", "b"]}
    )
    assert maj == {"u1": "a", "u3": "b", "u5": "a"}
    assert ties == ["u2", "u6"]


# ------------------------------------------------------------------ summaries


def test_agreement_with_ci_shape_and_values():
    a, b = _units(KAPPA_CASES[0])  # the hand-derived 2x2 case: kappa 0.4
    out = agreement_with_ci(a, b, labels=["yes", "no"], rng=np.random.default_rng(7), n_boot=400)
    assert out["n"] == 50
    assert out["kappa"] == pytest.approx(0.4)
    assert out["accuracy"] == pytest.approx(0.7)
    assert out["ac1"] == pytest.approx(0.205 / 0.505)
    lo, hi = out["kappa_ci"]
    assert lo < 0.4 < hi and hi - lo < 0.7
    assert out["confusion"] == {"labels": ["yes", "no"], "matrix": [[20, 5], [10, 15]]}
    json.dumps(out)  # JSON-ready
    again = agreement_with_ci(a, b, labels=["yes", "no"], rng=np.random.default_rng(7), n_boot=400)
    assert again == out  # explicit rng -> reproducible


def test_human_agreement():
    rng = np.random.default_rng(0)
    truth = rng.random(120) < 0.5
    ann = {}
    for name, noise in (("b", 0.1), ("a", 0.15), ("c", 0.2)):
        flip = rng.random(120) < noise
        ann[name] = {f"u{i}": ("supported" if t ^ f else "unsupported") for i, (t, f) in enumerate(zip(truth, flip))}
    del ann["c"]["u0"]  # c skipped a unit
    out = human_agreement(ann, labels=["supported", "unsupported"], rng=np.random.default_rng(1), n_boot=300)
    assert {"alpha", "alpha_ci", "pairwise_kappa"} <= set(out)
    assert out["pairwise_n"] == {"a|b": 120, "a|c": 119, "b|c": 119}
    assert out["n"] == 120 and sum(out["class_counts"].values()) == 3 * 120 - 1
    assert set(out["pairwise_kappa"]) == {"a|b", "a|c", "b|c"}
    units = [f"u{i}" for i in range(1, 120)]
    assert out["pairwise_kappa"]["a|c"] == pytest.approx(
        cohen_kappa_score([ann["a"][u] for u in units], [ann["c"][u] for u in units])
    )
    lo, hi = out["alpha_ci"]
    assert lo < out["alpha"] < hi
    assert 0.3 < out["alpha"] < 0.9
    single = human_agreement({"a": ann["a"]}, labels=["supported", "unsupported"], rng=rng, n_boot=50)
    assert {k: single[k] for k in ("alpha", "alpha_ci", "pairwise_kappa")} == {
        "alpha": None, "alpha_ci": [None, None], "pairwise_kappa": {}}
