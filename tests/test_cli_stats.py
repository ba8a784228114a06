"""`workbench judge | agreement | calibrate | gate` through click's CliRunner.

The scripted flow (12 items, one claim each, annotators a and b) has hand-derived numbers:
claim i gets support score (12 - i) / 12 and the judge says supported when score >= 0.5, so
claims 0..6 are judged supported. People: supported for i < 6; b disagrees with a on claim 0,
a tie left out. Judge vs majority on claims 1..11: [[5, 0], [1, 5]], p_o = 10/11,
p_e = (5*6 + 6*5) / 121 = 60/121, kappa = (110 - 60) / (121 - 60) = 50/61.
Calibration: positives score 7/12..11/12, negatives 1/12..6/12, so kappa is 1 for any threshold
in (0.5, 7/12]; the candidates there are 7/12 and the midpoint 13/24, and the tie rule (closest
to 0.5) picks 13/24. Answer relevance is scripted to the same scores, so the same threshold.
"""
from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from workbench import cli, store
from workbench.cli import calibration as cli_stats
from workbench.cli import gate as cli_gate
from workbench.config import load_thresholds
from workbench.judges import factory
from workbench.judges.scripted import ScriptedEmbedder, ScriptedJudge
from workbench.types import ClaimVerdict, EvalItem, Label, Passage, Unit

N = 12


def score_of(i: int) -> float:
    return (N - i) / N


def build_store(path) -> None:
    db = store.open_db(path)
    items = [EvalItem(f"q{i}", f"question {i}", f"Answer {i}.", (Passage(f"p{i}", f"Fact number {i} holds."),))
             for i in range(N)]
    store.add_items(db, items)
    units, labels = [], []
    for i in range(N):
        claim = Unit(Unit.make_id("claim_support", f"q{i}", 0), "claim_support", f"q{i}", 0, f"claim {i}")
        rel = Unit(Unit.make_id("answer_relevance", f"q{i}"), "answer_relevance", f"q{i}", None, f"Answer {i}.")
        faith = Unit(Unit.make_id("answer_faithfulness", f"q{i}"), "answer_faithfulness", f"q{i}", None, "a")
        units += [claim, rel, faith]
        human = "supported" if i < 6 else "unsupported"
        labels.append(Label(claim.unit_id, "claim_support", "a", human))
        labels.append(Label(claim.unit_id, "claim_support", "b", "unsupported" if i == 0 else human))
        labels.append(Label(rel.unit_id, "answer_relevance", "a", "relevant" if i < 6 else "not_relevant"))
    store.add_units(db, units)
    store.append_labels(db, labels)


def scripted() -> tuple[ScriptedJudge, ScriptedEmbedder]:
    judge = ScriptedJudge()

    def verify(claim, passages):
        i = int(claim.split()[-1])
        s = score_of(i)
        return ClaimVerdict(claim, s >= 0.5, s, quote=f"Fact number {i}" if s >= 0.5 else None)

    judge.set_default("verify", verify)
    judge.set_default("is_refusal", False)
    judge.set_default("reverse_questions", lambda answer, n: [f"rq {answer}"])
    table = {}
    for i in range(N):
        c = score_of(i)
        table[f"question {i}"] = [1.0, 0.0]
        table[f"rq Answer {i}."] = [c, math.sqrt(max(0.0, 1 - c * c))]
    return judge, ScriptedEmbedder(table)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def scripted_judge(monkeypatch):
    judge, embedder = scripted()
    monkeypatch.setattr(factory, "build_judge", lambda config: (judge, embedder))
    return judge


def invoke(runner, *args):
    return runner.invoke(cli.main, [str(a) for a in args], catch_exceptions=False)


def test_every_command_has_help_ending_in_an_example(runner):
    assert [c.name for c in cli_stats.COMMANDS] == ["judge", "agreement", "calibrate"]
    assert [c.name for c in cli_gate.COMMANDS] == ["gate"]
    for command in [*cli_stats.COMMANDS, *cli_gate.COMMANDS]:
        lines = [line.strip() for line in (command.help or "").strip().splitlines() if line.strip()]
        assert lines[-1].startswith(f"Example: workbench {command.name}"), command.name
        assert invoke(runner, command.name, "--help").exit_code == 0


def test_full_flow_labels_judge_agreement_calibrate(tmp_path, runner, scripted_judge):
    db = tmp_path / "flow.db"
    build_store(db)
    res = invoke(runner, "judge", "--db", db, "--repeats", "2")
    assert res.exit_code == 0, res.output
    assert "judge: scripted@test" in res.output
    assert "claim_support" in res.stdout and "test-retest" in res.stdout

    res = invoke(runner, "agreement", "--db", db, "--json", "--n-boot", "100")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    cs = report["claim_support"]
    assert cs["ties"] == 1 and cs["annotators"] == ["a", "b"] and cs["labelled_units"] == N
    j = cs["judges"]["scripted@test"]
    assert j["n"] == 11 and j["confusion"]["matrix"] == [[5, 0], [1, 5]]
    assert j["kappa"] == pytest.approx(50 / 61) and j["quote_hallucination_rate"] == 0.0
    assert report["abstention"] == {}

    table = invoke(runner, "agreement", "--db", db, "--n-boot", "50")
    assert table.exit_code == 0 and "humans: alpha (ceiling)" in table.stdout and "0.820" in table.stdout

    out = tmp_path / "thresholds.json"
    res = invoke(runner, "calibrate", "--db", db, "--out", out, "--n-boot", "100")
    assert res.exit_code == 0, res.output
    assert "not calibrated" in res.stdout  # faithfulness has no human labels
    th = load_thresholds(out)
    assert th.claim_support == pytest.approx(13 / 24) and th.answer_relevance == pytest.approx(13 / 24)
    assert th.faithfulness == 0.85 and th.judge == "scripted@test"
    payload = json.loads(out.read_text())
    assert payload["criterion"] == "kappa" and payload["claim_support"]["kappa"] == 1.0
    assert payload["claim_support"]["n"] == 11 and payload["answer_relevance"]["n"] == N

    again = invoke(runner, "judge", "--db", db, "--repeats", "2")
    assert "asked 0" in again.stdout and "nothing to ask" in again.stdout


def test_judge_json_and_batched_refusal(tmp_path, runner, scripted_judge):
    db = tmp_path / "j.db"
    build_store(db)
    res = invoke(runner, "judge", "--db", db, "--json", "--task", "claim_support")
    summary = json.loads(res.stdout)
    assert summary["judged"] == {"claim_support": N} and summary["asked"] == N
    res = invoke(runner, "judge", "--db", db, "--verify-mode", "batched")
    assert res.exit_code == 2 and "no batched verification mode" in res.output


def test_calibrate_errors(tmp_path, runner):
    db = tmp_path / "empty.db"
    store.open_db(db)
    res = invoke(runner, "calibrate", "--db", db, "--out", tmp_path / "t.json")
    assert res.exit_code == 2 and "run `workbench judge` first" in res.output
    res = invoke(runner, "calibrate", "--db", db, "--judge", "nope@1")
    assert res.exit_code == 2 and "no judgments with this fingerprint" in res.output
    assert not (tmp_path / "t.json").exists()


def test_offline_judge_end_to_end(tmp_path, runner):
    """The real offline judge: verbatim claims are supported, unrelated ones are not."""
    db_path = tmp_path / "off.db"
    db = store.open_db(db_path)
    facts = ["The Eiffel Tower is 330 metres tall.", "Annual plans renew on the anniversary date.",
             "The library holds 260,000 volumes.", "Support is open from 9 to 5 on weekdays.",
             "The river flows north into the lake.", "Refunds are issued within 30 days."]
    other = ["The moon is made of green cheese and sings.", "Penguins operate the national railway.",
             "The president owns eleven purple submarines.", "Volcanoes grow bananas in winter.",
             "Dolphins invented the printing press.", "The stadium seats four cats."]
    items, units, labels = [], [], []
    for i, (fact, wrong) in enumerate(zip(facts, other)):
        item = EvalItem(f"o{i}", "q?", f"{fact} {wrong}", (Passage(f"p{i}", f"Intro text. {fact} More text."),))
        items.append(item)
        for k, (text, value) in enumerate(((fact, "supported"), (wrong, "unsupported"))):
            unit = Unit(Unit.make_id("claim_support", item.id, k), "claim_support", item.id, k, text)
            units.append(unit)
            labels.append(Label(unit.unit_id, "claim_support", "ann", value))
    store.add_items(db, items)
    store.add_units(db, units)
    store.append_labels(db, labels)
    res = invoke(runner, "judge", "--db", db_path, "--judge", "offline")
    assert res.exit_code == 0, res.output
    report = json.loads(invoke(runner, "agreement", "--db", db_path, "--json", "--n-boot", "50").stdout)
    (fp, j), = report["claim_support"]["judges"].items()
    assert fp.startswith("offline:") and j["n"] == 12
    assert j["accuracy"] >= 11 / 12 and j["quote_hallucination_rate"] == 0.0


# ------------------------------------------------------------------------------------------
# gate

SUMMARY = {
    "n_items": 400,
    "thresholds": {"faithfulness": 0.85, "answer_relevance": 0.70, "source": "default"},
    "faithfulness": {"n": 390, "mean": 0.93, "pass_rate": 0.92},
    "answer_relevance": {"n": 400, "mean": 0.78, "pass_rate": 0.82},
    "abstention": {"unanswerable": 20, "abstention_rate": 0.9, "answerable": 380, "false_refusal_rate": 0.02},
}


@pytest.fixture
def summary_file(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(SUMMARY))
    return path


def test_gate_passes_within_bounds(runner, summary_file):
    res = invoke(runner, "gate", summary_file, "--min-faithfulness", "0.9", "--min-relevance-pass", "0.8",
                 "--max-false-refusal", "0.05", "--min-abstention", "0.9")
    assert res.exit_code == 0, res.output
    assert "gate passed: 4 bound(s) met" in res.stdout


def test_gate_fails_below_bounds_with_readable_list(runner, summary_file):
    res = invoke(runner, "gate", summary_file, "--min-faithfulness", "0.95", "--min-relevance", "0.5",
                 "--max-false-refusal", "0.01")
    assert res.exit_code == 1
    assert "FAIL  faithfulness mean: 0.9300 is below the bound 0.95" in res.stdout
    assert "FAIL  false refusal rate: 0.0200 is above the bound 0.01" in res.stdout
    assert "ok    answer relevance mean: 0.7800 >= 0.5" in res.stdout
    assert "2 of 3 bound(s) not met" in res.stdout


def test_gate_null_metric_fails(runner, tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**SUMMARY, "faithfulness": None}))
    res = invoke(runner, "gate", path, "--min-faithfulness", "0.5")
    assert res.exit_code == 1 and "not scored" in res.stdout


@pytest.mark.parametrize("content, message", [
    (None, "file not found"),
    ("{not json", "line 1: not valid JSON"),
    ("[1, 2]", "expected a summary.json object"),
    (json.dumps({"n_items": 3}), "field faithfulness: missing"),
    (json.dumps({**SUMMARY, "faithfulness": {"n": 1, "mean": "high"}}), "field faithfulness.mean: expected a number"),
])
def test_gate_bad_file_exits_2(runner, tmp_path, content, message):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    res = invoke(runner, "gate", path, "--min-faithfulness", "0.5")
    assert res.exit_code == 2 and message in res.output


def test_gate_without_bounds_exits_2(runner, summary_file):
    res = invoke(runner, "gate", summary_file)
    assert res.exit_code == 2 and "no bounds given" in res.output


def test_gate_with_thresholds_file(runner, summary_file, tmp_path):
    th = tmp_path / "thresholds.json"
    th.write_text(json.dumps({"judge": "x", "faithfulness": {"threshold": 0.95}, "answer_relevance": {"threshold": 0.6}}))
    res = invoke(runner, "gate", summary_file, "--thresholds", th)
    assert res.exit_code == 1  # mean faithfulness 0.93 < tuned threshold 0.95; relevance 0.78 >= 0.6
    assert "faithfulness mean: 0.9300 is below the bound 0.95" in res.stdout and "ok    answer relevance mean" in res.stdout
    assert invoke(runner, "gate", summary_file, "--thresholds", th, "--min-faithfulness", "0.9").exit_code == 0
    # pass-rate bounds against a run scored with other thresholds fail, and say why
    res = invoke(runner, "gate", summary_file, "--thresholds", th, "--min-faithfulness", "0.9",
                 "--min-faithfulness-pass", "0.5")
    assert res.exit_code == 1 and "re-score with --thresholds" in res.stdout
    bad = tmp_path / "bad_th.json"
    bad.write_text("{")
    assert invoke(runner, "gate", summary_file, "--thresholds", bad).exit_code == 2


def test_choosing_annotators_small_samples_pairs_and_auc(tmp_path, runner, scripted_judge):
    db = tmp_path / "choose.db"
    build_store(db)
    # a typo/test account labels every claim the wrong way round
    conn = store.open_db(db)
    store.append_labels(conn, [Label(Unit.make_id("claim_support", f"q{i}", 0), "claim_support", "annie1",
                                     "unsupported" if i < 6 else "supported") for i in range(N)])
    conn.conn.close()
    assert invoke(runner, "judge", "--db", db).exit_code == 0

    everyone = json.loads(invoke(runner, "agreement", "--db", db, "--json", "--n-boot", "50").stdout)
    chosen = json.loads(invoke(runner, "agreement", "--db", db, "--json", "--n-boot", "50",
                               "--exclude-annotators", "annie1").stdout)
    same = json.loads(invoke(runner, "agreement", "--db", db, "--json", "--n-boot", "50",
                             "--annotators", "a,b").stdout)
    assert everyone["claim_support"]["annotators"] == ["a", "annie1", "b"]
    assert chosen["claim_support"]["annotators"] == ["a", "b"] and same == chosen
    # without annie1 the majority is the hand-checked one of the full-flow test (kappa 50/61)
    j = chosen["claim_support"]["judges"]["scripted@test"]
    assert j["kappa"] == pytest.approx(50 / 61)
    assert everyone["claim_support"]["judges"]["scripted@test"]["kappa"] != pytest.approx(50 / 61)
    # 11 units < 30: marked too small, with the reason
    assert j["too_small"] is True and j["too_small_reason"].startswith("only 11 unit(s)")
    assert chosen["claim_support"]["human"]["too_small"] is True
    # AUC of the judge's score (N - i) / N against the majority: every positive (i < 6) scores above every
    # negative -> 1.0; the Mann-Whitney p-value is small
    assert j["auc"] == pytest.approx(1.0) and j["auc_p"] < 0.01

    two = invoke(runner, "agreement", "--db", db, "--n-boot", "50", "--exclude-annotators", "annie1")
    assert "too small to read: only 11 unit(s)" in two.stdout and "humans: kappa a|b" in two.stdout
    table = invoke(runner, "agreement", "--db", db, "--n-boot", "50")
    assert "too small to read: only 12 unit(s)" in table.stdout
    # three annotators: pairs summarised (none shares 30 units), --all-pairs lists them
    assert "no pair of annotators shares 30 labelled units (3 pair(s)" in table.stdout
    assert "humans: kappa a|annie1" not in table.stdout
    every = invoke(runner, "agreement", "--db", db, "--n-boot", "50", "--all-pairs")
    assert "humans: kappa a|annie1" in every.stdout and "(too few units in common)" in every.stdout

    bad = invoke(runner, "agreement", "--db", db, "--annotators", "a,anie1")
    assert bad.exit_code == 2 and "unknown annotator(s) 'anie1'" in bad.output

    out = tmp_path / "t.json"
    res = invoke(runner, "calibrate", "--db", db, "--out", out, "--n-boot", "50", "--exclude-annotators", "annie1")
    assert res.exit_code == 0, res.output
    payload = json.loads(out.read_text())
    assert payload["annotators"] == ["a", "b"] and payload["excluded_annotators"] == ["annie1"]
    assert payload["claim_support"]["kappa"] == 1.0 and payload["claim_support"]["too_small"] is True
    assert "annotators a, b (left out: annie1)" in res.stdout
