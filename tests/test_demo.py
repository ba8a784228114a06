"""`workbench demo` end to end on a slice of the bundled data (the newcomer's main command)."""
from __future__ import annotations

import json

from click.testing import CliRunner

from workbench.cli import main
from workbench.config import load_thresholds


def test_demo_scores_calibrates_and_rescores_with_the_tuned_thresholds(tmp_path):
    out = tmp_path / "demo"
    result = CliRunner().invoke(main, ["demo", "--out", str(out), "--limit", "60"])
    assert result.exit_code == 0, result.output
    rag = json.loads((out / "rag" / "summary.json").read_text())
    assert rag["n_items"] == 13 and sum(rag["quadrant"].values()) == 13
    assert rag["retrieval"]["n"] > 0 and rag["citations"]["missing_from_corpus"] >= 1
    assert rag["abstention"]["unanswerable"] >= 1
    agreement = json.loads((out / "agreement.json").read_text())
    assert set(agreement) >= {"claim_support", "answer_faithfulness", "answer_relevance", "abstention"}
    assert agreement["abstention"]["annotators"] == ["xstest_a1", "xstest_a2"]
    tuned = load_thresholds(out / "thresholds.json")
    assert tuned.source == str(out / "thresholds.json") and tuned.judge == rag["judge"]["fingerprint"]
    begin = json.loads((out / "begin" / "summary.json").read_text())
    assert begin["n_items"] == 60 and begin["thresholds"]["source"] == str(out / "thresholds.json")
    assert begin["thresholds"]["faithfulness"] == tuned.faithfulness
    assert "kappa [95% CI]" in result.output and "quadrant" in result.output


def test_demo_says_where_its_data_is_and_refuses_without_it(tmp_path, monkeypatch):
    from workbench.demo import public_sets

    missing = tmp_path / "no-data"
    monkeypatch.setattr(public_sets, "DATA_DIR", missing)
    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path / "demo")])
    assert result.exit_code == 2
    assert f"error: {missing}: the bundled demo data is missing" in result.output
    assert not (tmp_path / "demo").exists()  # nothing started
