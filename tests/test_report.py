"""workbench.reports.charts: tables, Altair chart specs and escaped HTML built from plain data."""
from __future__ import annotations

import json
import math
import os

import pandas as pd
import pytest

from workbench.reports.charts import (
    RunError,
    claims_frame,
    confusion_heatmap,
    highlight_quote_html,
    human_table,
    items_frame,
    judges_table,
    list_run_dirs,
    quadrant_cell_counts,
    quadrant_chart,
    quadrant_table,
    read_run,
    reliability_chart,
    summary_table,
    threshold_curve,
)
from workbench.types import QUADRANTS, Thresholds

RECORDS = [
    {"id": "a", "faithfulness": 1.0, "answer_relevance": 0.9, "quadrant": "pass",
     "claims": [{"text": "c1", "supported": True, "quote": "q", "quote_found": True, "passage_id": "p1", "score": 0.9}]},
    {"id": "b", "faithfulness": 0.85, "answer_relevance": 0.70, "quadrant": "pass", "claims": []},  # on both thresholds
    {"id": "c", "faithfulness": 0.5, "answer_relevance": 0.9, "quadrant": "relevant_unfaithful",
     "claims": [{"text": "c2", "supported": False, "quote": "made up", "quote_found": False}]},
    {"id": "d", "faithfulness": 0.9, "answer_relevance": 0.2, "quadrant": "faithful_irrelevant"},
    {"id": "e", "faithfulness": None, "answer_relevance": 0.8, "quadrant": "abstained", "abstained": True},
]


def _layers(spec: dict) -> list[dict]:
    return spec.get("layer", [])


def test_items_frame_keeps_missing_scores_as_nan_and_counts_claims():
    frame = items_frame(RECORDS)
    assert list(frame["id"]) == ["a", "b", "c", "d", "e"]
    assert math.isnan(frame.loc[4, "faithfulness"])
    assert frame.loc[2, "n_unsupported"] == 1
    assert frame.loc[2, "n_quote_missing"] == 1
    assert frame.loc[0, "n_claims"] == 1 and frame.loc[0, "n_unsupported"] == 0
    assert items_frame([{"id": 1}]).loc[0, "quadrant"] == "unscored"


def test_quadrant_table_lists_every_quadrant_in_order_with_shares():
    table = quadrant_table(items_frame(RECORDS))
    assert list(table["quadrant"]) == list(QUADRANTS)
    counts = dict(zip(table["quadrant"], table["count"]))
    assert counts == {"pass": 2, "faithful_irrelevant": 1, "relevant_unfaithful": 1, "fail": 0, "abstained": 1, "unscored": 0}
    assert table["count"].sum() == len(RECORDS)
    assert table.loc[0, "share"] == pytest.approx(2 / 5)


def test_quadrant_table_of_nothing_has_nan_shares_not_zero():
    table = quadrant_table(items_frame([]))
    assert table["count"].sum() == 0
    assert table["share"].isna().all()


def test_cell_counts_put_a_score_on_the_threshold_in_the_passing_cell():
    points = items_frame(RECORDS).dropna(subset=["faithfulness", "answer_relevance"])
    cells = quadrant_cell_counts(points, 0.85, 0.70).set_index("cell")["count"].to_dict()
    assert cells == {"pass": 2, "faithful_irrelevant": 1, "relevant_unfaithful": 1, "fail": 0}


def test_quadrant_chart_draws_threshold_rules_and_cell_counts():
    chart = quadrant_chart(items_frame(RECORDS), Thresholds(faithfulness=0.8, answer_relevance=0.6))
    spec = chart.to_dict()
    datasets = spec["datasets"]
    rule_rows = [rows for rows in datasets.values() if rows and set(rows[0]) == {"x", "y"}]
    assert rule_rows == [[{"x": 0.8, "y": 0.6}]]
    labels = sorted(r["label"] for rows in datasets.values() for r in rows if "label" in r)
    assert labels == ["n=0 (0.0%)", "n=1 (25.0%)", "n=1 (25.0%)", "n=2 (50.0%)"]  # shares of the 4 plotted
    scatter = [rows for rows in datasets.values() if rows and "id" in rows[0]][0]
    assert sorted(r["id"] for r in scatter) == ["a", "b", "c", "d"]  # the abstained item is not plotted
    assert len(_layers(spec)) == 4


def test_quadrant_chart_accepts_the_summary_thresholds_block():
    spec = quadrant_chart(items_frame(RECORDS), {"faithfulness": 0.5, "answer_relevance": 0.5, "source": "x"}).to_dict()
    assert [{"x": 0.5, "y": 0.5}] in spec["datasets"].values()


def test_confusion_heatmap_rows_are_human_columns_judge():
    spec = confusion_heatmap(["supported", "unsupported"], [[5, 2], [1, 7]]).to_dict()
    rows = next(iter(spec["datasets"].values()))
    cell = {(r["human"], r["judge"]): r["count"] for r in rows}
    assert cell == {("supported", "supported"): 5, ("supported", "unsupported"): 2,
                    ("unsupported", "supported"): 1, ("unsupported", "unsupported"): 7}


def test_confusion_heatmap_rejects_a_matrix_of_the_wrong_shape():
    with pytest.raises(ValueError, match="expected 2x2"):
        confusion_heatmap(["a", "b"], [[1, 2, 3], [4, 5, 6]])


def test_threshold_curve_marks_the_chosen_threshold_and_drops_missing_values():
    sweep = pd.DataFrame({"threshold": [0.2, 0.5, 0.8], "kappa": [0.1, 0.6, None], "f1": [0.5, 0.7, 0.4],
                          "youden_j": [0.2, 0.5, 0.3], "tp": [1, 2, 3]})
    spec = threshold_curve(sweep, 0.5).to_dict()
    long = [rows for rows in spec["datasets"].values() if rows and "metric" in rows[0] and "gap" not in rows[0]][0]
    assert {r["metric"] for r in long} == {"kappa", "f1", "youden_j"}
    assert len(long) == 8  # 9 values, the missing kappa dropped
    chosen = [rows for rows in spec["datasets"].values() if rows and "label" in rows[0]][0]
    assert chosen == [{"threshold": 0.5, "label": "chosen 0.500"}]
    points = [rows for rows in spec["datasets"].values() if rows and "gap" in rows[0]][0]
    assert {(r["metric"], r["threshold"]) for r in points} == {("kappa", 0.5), ("f1", 0.5), ("youden_j", 0.5)}


def test_threshold_curve_without_chosen_has_no_rule_and_bad_input_raises():
    sweep = pd.DataFrame({"threshold": [0.2, 0.5], "kappa": [0.1, 0.6]})
    assert len(threshold_curve(sweep, None).to_dict()["layer"]) == 1
    with pytest.raises(ValueError, match="threshold"):
        threshold_curve(pd.DataFrame({"t": [0.1], "kappa": [0.2]}), 0.1)
    with pytest.raises(ValueError, match="expected one of"):
        threshold_curve(pd.DataFrame({"threshold": [0.1], "tp": [1]}), 0.1)


def test_reliability_chart_reads_the_calibration_table_columns():
    table = pd.DataFrame({"bin_low": [0.0, 0.5], "bin_high": [0.5, 1.0], "mean_score": [0.3, 0.8],
                          "observed_rate": [0.25, 0.9], "n": [4, 10]})
    spec = reliability_chart(table).to_dict()
    rows = [rows for rows in spec["datasets"].values() if rows and "n" in rows[0]][0]
    assert rows == [{"predicted": 0.3, "observed": 0.25, "n": 4}, {"predicted": 0.8, "observed": 0.9, "n": 10}]
    with pytest.raises(ValueError, match="predicted column"):
        reliability_chart(pd.DataFrame({"x": [1]}))


def test_highlight_escapes_passage_and_quote_before_marking():
    passage = 'Refunds <script>alert(1)</script> within "30 days" & more.'
    html = highlight_quote_html(passage, 'within "30 days"')
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<mark>within &quot;30 days&quot;</mark>" in html
    assert html.count("<mark>") == 1


def test_highlight_a_quote_that_is_itself_markup_stays_escaped():
    html = highlight_quote_html("x <b>bold</b> y", "<b>bold</b>")
    assert html == "x <mark>&lt;b&gt;bold&lt;/b&gt;</mark> y"


def test_highlight_without_a_verbatim_quote_is_plain_escaped_text():
    assert highlight_quote_html("a <i>b</i>\nc", "not there") == "a &lt;i&gt;b&lt;/i&gt;<br>c"
    assert highlight_quote_html("a", None) == "a"


def _agreement_payload() -> dict:
    return {
        "claim_support": {
            "units": 10, "labelled_units": 8, "annotators": ["a", "b"],
            "human": {"alpha": 0.61, "alpha_ci": [0.5, 0.7], "pairwise_kappa": {"a|b": 0.6}},
            "judges": {"fp1": {"n": 8, "kappa": 0.42, "kappa_ci": [0.3, 0.5], "ac1": 0.5, "alpha_with_humans": 0.5,
                               "accuracy": 0.74, "confusion": {"labels": ["supported", "unsupported"],
                                                               "matrix": [[3, 1], [1, 3]]},
                               "quote_hallucination_rate": 0.01}},
        },
        "answer_relevance": {},
    }


def test_agreement_tables_put_the_human_ceiling_beside_each_judge():
    human = human_table(_agreement_payload())
    assert list(human["task"]) == ["claim_support"]
    assert human.loc[0, "alpha_low"] == 0.5 and human.loc[0, "pairwise_kappa"] == "a|b=0.60"
    judges = judges_table(_agreement_payload())
    assert judges.loc[0, "judge"] == "fp1"
    assert judges.loc[0, "kappa_high"] == 0.5
    assert judges.loc[0, "human_alpha"] == 0.61


def test_read_run_and_errors_name_file_and_line(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"n_items": 2}), encoding="utf-8")
    (tmp_path / "items.jsonl").write_text('{"id": "a"}\n\n{"id": "b"}\n', encoding="utf-8")
    summary, records = read_run(tmp_path)
    assert summary == {"n_items": 2} and [r["id"] for r in records] == ["a", "b"]
    (tmp_path / "items.jsonl").write_text('{"id": "a"}\n[1]\n', encoding="utf-8")
    with pytest.raises(RunError, match=r"items.jsonl:2: expected a JSON object"):
        read_run(tmp_path)
    (tmp_path / "items.jsonl").write_text('{"id": "a"}\n{oops\n', encoding="utf-8")
    with pytest.raises(RunError, match=r"items.jsonl:2: not valid JSON"):
        read_run(tmp_path)
    with pytest.raises(RunError, match=r"summary.json: file not found"):
        read_run(tmp_path / "nothing")


def test_list_run_dirs_newest_first_and_only_runs(tmp_path):
    for name, mtime in (("old", 1_000_000), ("new", 2_000_000)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "summary.json").write_text("{}", encoding="utf-8")
        os.utime(folder / "summary.json", (mtime, mtime))
    (tmp_path / "not_a_run").mkdir()
    assert [p.name for p in list_run_dirs(tmp_path)] == ["new", "old"]
    assert list_run_dirs(tmp_path / "missing") == []


def test_summary_table_keeps_null_metrics_as_none():
    table = summary_table({"n_items": 3, "faithfulness": None, "answer_relevance": {"n": 3, "mean": 0.5, "pass_rate": 0.3},
                           "thresholds": {"faithfulness": 0.85, "answer_relevance": 0.7, "source": "default"}})
    values = dict(zip(table["metric"], table["value"]))
    assert values["items"] == "3"
    assert values["faithfulness"] is None
    assert values["answer_relevance.pass_rate"] == "0.3"
    assert values["thresholds.source"] == "default"


def test_claims_frame_has_one_row_per_claim():
    frame = claims_frame(RECORDS[2])
    assert frame.loc[0, "quote"] == "made up" and not bool(frame.loc[0, "quote_found"])
    assert claims_frame({"id": "x"}).empty


def test_list_run_dirs_finds_runs_one_and_two_levels_down(tmp_path):
    import os

    from workbench.reports.charts import list_run_dirs

    for i, rel in enumerate(["a", "demo/rag", "demo/begin", "demo/begin/deeper/x"]):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "summary.json").write_text("{}")
        os.utime(tmp_path / rel / "summary.json", (1000 + i, 1000 + i))
    (tmp_path / "empty").mkdir()
    assert [p.relative_to(tmp_path).as_posix() for p in list_run_dirs(tmp_path)] == ["demo/begin", "demo/rag", "a"]


def test_list_run_dirs_merges_roots_newest_first_and_lists_each_run_once(tmp_path):
    # The app looks under <home>/runs and beside its label store; the two may be the same folder
    # or one inside the other, and a run must then appear once.
    for mtime, rel in ((3000, "home/runs/r-home"), (1000, "store/rag"), (2000, "store/begin")):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "summary.json").write_text("{}", encoding="utf-8")
        os.utime(tmp_path / rel / "summary.json", (mtime, mtime))
    found = list_run_dirs(tmp_path / "home" / "runs", tmp_path / "store", tmp_path / "store", tmp_path / "nowhere")
    assert [p.relative_to(tmp_path.resolve()).as_posix() for p in found] == ["home/runs/r-home", "store/begin", "store/rag"]
    assert list_run_dirs(tmp_path / "home", tmp_path / "home" / "runs") == [(tmp_path / "home/runs/r-home").resolve()]
