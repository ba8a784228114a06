"""The annotator chooser on the app's Agreement and Calibration pages (``workbench_app/views/annotators.py``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from workbench.store import add_items, add_judgments, add_units, append_labels, open_db
from workbench.types import EvalItem, Judgment, Label, Passage, Unit

APP = str(Path(__file__).resolve().parent.parent / "workbench_app/main.py")
N = 40  # above the 30-unit minimum, so a threshold can be applied without acknowledgement


@pytest.fixture
def store_path(tmp_path, monkeypatch) -> Path:
    """40 claims (one per answer) labelled by ann1 and ann2 alike, and by a test account "robot"
    that labels every claim "supported"; a judge whose score tracks the people's label."""
    path = tmp_path / "labels.db"
    db = open_db(path)
    try:
        add_items(db, [EvalItem(f"c{i}", f"Q{i}?", f"A{i}.", (Passage(f"c{i}p", f"text {i}"),)) for i in range(N)])
        units = [Unit(Unit.make_id("claim_support", f"c{i}", 0), "claim_support", f"c{i}", 0, f"c{i}") for i in range(N)]
        add_units(db, units)
        labels, judgments = [], []
        for i, unit in enumerate(units):
            truth = "supported" if i % 2 == 0 else "unsupported"
            labels += [Label(unit.unit_id, "claim_support", name, truth) for name in ("ann1", "ann2")]
            labels.append(Label(unit.unit_id, "claim_support", "robot", "supported"))
            score = 0.8 if truth == "supported" else 0.2
            judgments.append(Judgment(unit.unit_id, "claim_support", "judge-x", truth, score))
        append_labels(db, labels)
        add_judgments(db, judgments)
    finally:
        db.close()
    monkeypatch.setenv("WORKBENCH_DB", str(path))
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    monkeypatch.delenv("WORKBENCH_APP_TOKEN", raising=False)
    return path


def _app(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page(f"views/{page}.py")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _frame(at: AppTest, *columns: str):
    for element in at.dataframe:
        if all(c in element.value.columns for c in columns):
            return element.value
    raise AssertionError(f"no dataframe with columns {columns}")


def test_agreement_page_counts_only_the_chosen_annotators(store_path):
    at = _app("agreement")
    chooser = at.multiselect(key="agree_annotators")
    assert chooser.options == ["ann1", "ann2", "robot"] and chooser.value == ["ann1", "ann2", "robot"]
    before = _frame(at, "Task", "Annotators", "Human agreement (alpha)")
    assert before.loc[0, "Annotators"] == "ann1, ann2, robot" and float(before.loc[0, "Human agreement (alpha)"]) < 0.9
    chooser.set_value(["ann1", "ann2"]).run()
    assert not at.exception
    after = _frame(at, "Task", "Annotators", "Human agreement (alpha)")
    assert after.loc[0, "Annotators"] == "ann1, ann2" and float(after.loc[0, "Human agreement (alpha)"]) == 1.0
    # without robot, the two people agree perfectly with each other and with the judge
    judges = _frame(at, "Task", "Kappa vs humans")
    assert float(judges.loc[0, "Kappa vs humans"]) == 1.0


def test_calibration_page_records_the_chosen_annotators(store_path, tmp_path):
    at = _app("calibration")
    at.multiselect(key="calib_annotators").set_value(["ann1", "ann2"]).run()
    at.text_input(key="calib_out").input("t.json")
    at.button(key="calib_apply").click().run()
    written = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert written["annotators"] == ["ann1", "ann2"] and written["excluded_annotators"] == ["robot"]
    assert written["claim_support"]["kappa"] == pytest.approx(1.0) and written["claim_support"]["n"] == N
