"""Numbers as people read them: ``workbench.formatting`` and the plain-language tables."""
from __future__ import annotations

import pandas as pd
import pytest

from workbench.formatting import interval, num, pct, pct_range, pct_with_interval, rounded, value_text, wilson_interval
from workbench.reports.tables import (
    human_summary,
    judge_summary,
    markdown_section,
    quadrant_summary,
    rate_interval,
    summary_rows,
    threshold_rows,
)


def test_percentages_and_numbers_are_rounded_and_missing_reads_na():
    assert pct(0.0213) == "2.1%" and pct(1.0) == "100.0%" and pct(0.0) == "0.0%"
    assert pct(0.0004) == "<0.1%"  # rare, not none
    assert pct(None) == "n/a" and pct(float("nan")) == "n/a"
    assert num(0.05739008087303366) == "0.06" and num(0.05739008087303366, 3) == "0.057"
    assert num(7) == "7" and num(None) == "n/a"
    assert value_text("0.3628841607565012") == "0.363" and value_text("default") == "default"
    assert value_text(None) == "n/a" and value_text(12) == "12"


def test_intervals_print_both_ends_or_nothing():
    assert interval([0.671, 0.8102]) == "[0.67, 0.81]"
    assert interval([None, 0.5]) == "" and interval(None) == ""
    assert pct_with_interval(0.363, [0.331, 0.396]) == "36.3% [33.1, 39.6]"
    assert pct_with_interval(0.363, None) == "36.3%"
    assert pct_range([0.331, 0.396]) == "33.1–39.6%"


def test_rounded_copies_nested_json_and_turns_nan_into_none():
    value = {"a": 0.123456789, "b": [1, 0.5555555, {"c": float("nan")}], "d": "x", "e": True}
    assert rounded(value) == {"a": 0.1235, "b": [1, 0.5556, {"c": None}], "d": "x", "e": True}


def test_wilson_interval_matches_the_closed_form():
    # 1 of 2, z = 1.96: centre (0.5 + 0.9604) / 2.9208 = 0.5; half = 1.96 * sqrt(0.125 + 0.2401) / 1.9208 = 0.4055
    low, high = wilson_interval(1, 2)
    assert low == pytest.approx(0.0945, abs=1e-4) and high == pytest.approx(0.9055, abs=1e-4)
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and 0.2 < high < 0.35  # zero successes still give an interval with width
    assert wilson_interval(0, 0) is None


def _report() -> dict:
    return {
        "claim_support": {
            "units": 10, "labelled_units": 8, "annotators": ["a"],
            "human": {"alpha": None, "alpha_ci": [None, None], "pairwise_kappa": {}},
            "judges": {"fp1": {"n": 8, "kappa": 0.4212345, "kappa_ci": [0.3, 0.5], "ac1": 0.5, "alpha_with_humans": None,
                               "accuracy": 0.74, "quote_hallucination_rate": 0.0123, "auc": 0.81, "auc_p": 0.0004,
                               "too_small": True, "too_small_reason": "8 units (fewer than 30)"}},
        },
        "abstention": {
            "units": 20, "labelled_units": 20, "annotators": ["x", "y"],
            "human": {"alpha": 0.9712, "alpha_ci": [0.95, 0.98], "pairwise_kappa": {"x|y": 0.97}},
            "judges": {},
        },
        "answer_relevance": {},
    }


def test_a_single_rater_alpha_reads_one_rater_never_none():
    humans = human_summary(_report())
    assert list(humans["Task"]) == ["claim_support", "abstention"]
    assert humans.loc[0, "Human agreement (alpha)"] == "n/a (one rater)"
    assert humans.loc[0, "alpha 95% interval"] == "—"
    assert humans.loc[1, "Human agreement (alpha)"] == "0.97" and humans.loc[1, "Pairwise kappa"] == "x & y: 0.97"
    assert "None" not in humans.to_string()


def test_judge_summary_rounds_and_shows_the_optional_auc_and_sample_fields():
    judges = judge_summary(_report())
    row = judges.iloc[0]
    assert row["Kappa vs humans"] == "0.42" and row["kappa 95% interval"] == "[0.30, 0.50]"
    assert row["Accuracy"] == "74.0%" and row["Quote hallucination"] == "1.2%"
    assert row["Alpha with humans"] == "n/a" and row["Human ceiling (alpha)"] == "n/a (one rater)"
    assert row["AUC"] == "0.81 (p 0.0004)" and row["Sample note"] == "8 units (fewer than 30)"
    plain = judge_summary({"t": {"annotators": ["a", "b"], "human": {"alpha": 0.5},
                                 "judges": {"j": {"n": 3, "kappa": 0.1}}}})
    assert plain.iloc[0]["AUC"] == "n/a" and plain.iloc[0]["Sample note"] == ""


def test_rate_interval_prefers_the_summary_then_computes_wilson():
    assert rate_interval({"n": 2, "pass_rate": 0.5, "pass_rate_ci": [0.1, 0.9]}) == (0.1, 0.9)
    low, high = rate_interval({"n": 2, "pass_rate": 0.5})
    assert (round(low, 4), round(high, 4)) == (0.0945, 0.9055)
    assert rate_interval({"n": 0, "pass_rate": None}) is None and rate_interval(None) is None


def test_quadrant_summary_uses_summary_intervals_where_present():
    summary = {"quadrant": {"pass": 18, "faithful_irrelevant": 289, "relevant_unfaithful": 47, "fail": 492,
                            "abstained": 0, "unscored": 0},
               "quadrant_ci": {"pass": [0.0118, 0.0319]}}
    table = quadrant_summary(summary).set_index("Quadrant")
    assert table.loc["pass", "Share [95% CI]"] == "2.1% [1.2, 3.2]"
    low, high = wilson_interval(289, 846)
    assert table.loc["faithful_irrelevant", "Share [95% CI]"] == f"34.2% [{100 * low:.1f}, {100 * high:.1f}]"
    assert table["Items"].sum() == 846 and table.loc["abstained", "Share [95% CI]"].startswith("0.0% [0.0, ")


def test_summary_rows_and_threshold_rows_print_no_long_floats():
    table = summary_rows(pd.DataFrame({"metric": ["a", "b", "c"], "value": ["0.3628841607565012", None, "12"]}))
    assert list(table["value"]) == ["0.363", "n/a", "12"]
    rows = threshold_rows({"claim_support": {"threshold": 0.49512345, "threshold_ci": [0.398, 0.5391],
                                             "kappa": 0.53, "kappa_ci": [0.4, 0.66], "n": 189}},
                          ("faithfulness", "claim_support"), status={"claim_support": "trusted: written"})
    assert rows.to_dict("records") == [{"Score": "claim_support", "Threshold": "0.495",
                                        "Threshold 95% interval": "[0.398, 0.539]",
                                        "Kappa at threshold": "0.53 [0.40, 0.66]", "Units": "189",
                                        "Status": "trusted: written"}]


def test_markdown_section_reads_the_glossary_of_the_shipped_guidelines(tmp_path, monkeypatch):
    from pathlib import Path

    from workbench_app.common import guidelines_text

    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))  # no labels/ there: the packaged copy is read

    text = (Path(__file__).resolve().parent.parent / "labels" / "guidelines.md").read_text(encoding="utf-8")
    assert text == guidelines_text()  # the checkout's link and the packaged copy are one file
    glossary = markdown_section(text, "Glossary")
    assert glossary and "Krippendorff" in glossary and "AC1" in glossary and "Quote hallucination" in glossary
    assert markdown_section("# x\n## A\none\n## B\ntwo\n", "a") == "one"
    assert markdown_section("no headings", "Glossary") is None
