"""Where a run has no signal: score declarations, summary.json placeholders, the warnings of `score`."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from workbench import store
from workbench.calibration.placeholders import (
    calibration_checks,
    calibration_warnings,
    placeholder_fields,
    placeholder_warnings,
)
from workbench.cli.score import score
from workbench.judges.base import DeclaresScores, ScoreDeclaration, placeholder_scores
from workbench.judges.offline import OfflineJudge, offline_score_declarations
from workbench.judges.scripted import ScriptedJudge
from workbench.types import Judgment, Label, Unit


def test_offline_judge_declares_relevance_a_placeholder_with_its_auc():
    judge = OfflineJudge()
    assert isinstance(judge, DeclaresScores)
    declared = judge.score_declarations()
    assert {k: d.kind for k, d in declared.items()} == {
        "faithfulness": "measurement", "answer_relevance": "placeholder", "abstention": "measurement"}
    evidence = declared["answer_relevance"].evidence
    assert 0.0 <= evidence["auc"] <= 1.0 and evidence["n"] > 300
    assert f"AUC {evidence['auc']:.2f}" in declared["answer_relevance"].note
    assert "held-out kappa" in declared["faithfulness"].note
    fields = placeholder_fields(judge)
    assert fields["placeholders"] == ["answer_relevance"]
    assert "ALCE" in fields["placeholder_notes"]["answer_relevance"]


def test_missing_figure_file_keeps_the_kind_and_says_so(tmp_path):
    declared = offline_score_declarations(relevance_path=tmp_path / "absent.json")
    assert declared["answer_relevance"].kind == "placeholder"
    assert declared["answer_relevance"].evidence == {} and "not measured" in declared["answer_relevance"].note


def test_declaration_kind_is_checked_and_undeclared_judges_claim_nothing():
    with pytest.raises(ValueError, match="ScoreDeclaration.kind"):
        ScoreDeclaration("guess", "x")
    assert placeholder_scores(ScriptedJudge()) == {}
    assert placeholder_fields(ScriptedJudge()) == {"placeholders": [], "placeholder_notes": {}}


def test_warnings_only_where_a_rate_rests_on_the_score():
    summary = {"placeholders": ["answer_relevance"], "placeholder_notes": {"answer_relevance": "AUC 0.52"},
               "answer_relevance": {"n": 3, "mean": 0.5, "pass_rate": 0.3}}
    (line,) = placeholder_warnings(summary)
    assert "relevance pass rate and the quadrant rest on answer_relevance" in line and "AUC 0.52" in line
    assert placeholder_warnings({**summary, "answer_relevance": None}) == []  # nothing scored on it
    checks = {"faithfulness": {"n": 40, "auc": 0.9, "p_value": 0.001, "beats_chance": True},
              "answer_relevance": {"n": 40, "auc": 0.55, "p_value": 0.4, "beats_chance": False}}
    summary["faithfulness"] = {"n": 3, "mean": 0.9, "pass_rate": 0.6}
    (line,) = calibration_warnings(summary, checks, "labels.db")
    assert line.startswith("warning: the answer relevance pass rate") and "AUC 0.55" in line and "40 human" in line


def _store(path, fingerprint, *, relevance_scores, faith_scores):
    """Units labelled alternately positive/negative; the judge's stored scores as given."""
    db = store.open_db(path)
    n = len(relevance_scores)
    units, labels, judgments = [], [], []
    for task, scores, values in (("answer_relevance", relevance_scores, ("relevant", "not_relevant")),
                                 ("answer_faithfulness", faith_scores, ("faithful", "unfaithful"))):
        for i, s in enumerate(scores):
            uid = Unit.make_id(task, f"i-{i}")
            units.append(Unit(uid, task, f"i-{i}", None, "answer"))
            labels.append(Label(uid, task, "ann", values[i % 2]))
            judgments.append(Judgment(uid, task, fingerprint, values[0] if s >= 0.5 else values[1], s))
    from workbench.types import EvalItem

    store.add_items(db, [EvalItem(f"i-{i}", "q", "answer", ()) for i in range(n)])
    store.add_units(db, units, source="test")
    store.append_labels(db, labels)
    store.add_judgments(db, judgments)
    return db


def test_calibration_check_against_the_store(tmp_path):
    # relevance: the same scores for both classes -> AUC 0.5 (no signal); faithfulness: positives
    # (even i) 0.9, negatives 0.1 -> AUC 1.0, p < 0.05.
    db = _store(tmp_path / "l.db", "fp", relevance_scores=[0.6, 0.6, 0.4, 0.4] * 5,
                faith_scores=[0.9, 0.1] * 10)
    checks = calibration_checks(db, "fp")
    assert checks["answer_relevance"]["auc"] == pytest.approx(0.5) and checks["answer_relevance"]["beats_chance"] is False
    assert checks["faithfulness"]["auc"] == pytest.approx(1.0) and checks["faithfulness"]["beats_chance"] is True
    other = calibration_checks(db, "another-judge")  # no judgments by that fingerprint: not checked
    assert other["faithfulness"] == {"n": 0, "auc": None, "p_value": None, "beats_chance": None}


def test_score_records_placeholders_and_warns(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache.db"))
    monkeypatch.setenv("WORKBENCH_DB", str(tmp_path / "absent.db"))
    runner = CliRunner()
    result = runner.invoke(score, ["data/demo_rag.jsonl", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["placeholders"] == ["answer_relevance"]
    assert "AUC" in summary["placeholder_notes"]["answer_relevance"]
    assert "calibration_check" not in summary
    assert "rest on answer_relevance, which this judge declares a PLACEHOLDER" in result.output

    db = _store(tmp_path / "labels.db", summary["judge"]["fingerprint"],
                relevance_scores=[0.6, 0.6, 0.4, 0.4] * 5, faith_scores=[0.9, 0.1] * 10)
    db.conn.close()
    result = runner.invoke(score, ["data/demo_rag.jsonl", "--out", str(tmp_path / "run2"), "--db",
                                   str(tmp_path / "labels.db")])
    assert result.exit_code == 0, result.output
    assert "whose calibration on 20 human labels" in result.output and "does not beat chance (AUC 0.50" in result.output
    checks = json.loads((tmp_path / "run2" / "summary.json").read_text())["calibration_check"]
    assert checks["faithfulness"]["beats_chance"] is True and checks["answer_relevance"]["beats_chance"] is False
