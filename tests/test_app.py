"""The Streamlit app through ``streamlit.testing.v1.AppTest`` (no browser), and ``workbench app``.

Each test builds its own label store with the store API and points the app at it with
``WORKBENCH_DB`` (what ``workbench app --db`` sets).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from workbench.cli import app as cli_app
from workbench.store import add_items, add_judgments, add_units, append_labels, current_labels, label_history, open_db
from workbench.types import EvalItem, Judgment, Label, Passage, Unit

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "workbench_app/main.py")
SCRIPT = "<script>alert(1)</script>"


def _build_store(path: Path, *, n: int = 4) -> None:
    """``n`` items, one claim unit each; item 0's passage and question carry a script tag."""
    db = open_db(path)
    try:
        items = [
            EvalItem(
                id=f"q{i}",
                question=f"Question {i}? {SCRIPT}" if i == 0 else f"Question {i}?",
                answer=f"Answer {i}.",
                contexts=(Passage(f"p{i}", f"Passage {i}: {SCRIPT} the sky is blue {i}."),),
            )
            for i in range(n)
        ]
        add_items(db, items)
        add_units(db, [Unit(Unit.make_id("claim_support", f"q{i}", 0), "claim_support", f"q{i}", 0, f"claim text {i}")
                       for i in range(n)])
        add_judgments(db, [Judgment("claim_support:q0:0", "claim_support", "judge-x", "supported", 0.9,
                                    quote="the sky is blue 0", quote_found=True)])
    finally:
        db.close()


@pytest.fixture
def store_path(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "labels.db"
    _build_store(path)
    monkeypatch.setenv("WORKBENCH_DB", str(path))
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    monkeypatch.delenv("WORKBENCH_APP_TOKEN", raising=False)
    return path


def _app(page: str | None = None, annotator: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    if annotator is not None:
        at.session_state["annotator"] = annotator
    if page is not None:
        at.switch_page(f"views/{page}.py")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def _keyed(widgets, prefix: str):
    """The current view's widget whose key starts with ``prefix`` (Label page keys end in the view
    number; the previous view's buttons are kept, hidden, so the highest number is the one shown)."""
    found = [w for w in widgets if w.key and w.key.startswith(prefix)]
    assert found, [w.key for w in widgets]
    return max(found, key=lambda w: int(w.key.rsplit("_", 1)[1]))


def _value(at: AppTest, index: int):
    """The button for the task's first (index 0, positive) or second value on the unit shown."""
    return _keyed(at.button, ("label_pos_", "label_neg_")[index])


def _note(at: AppTest):
    return _keyed(at.text_input, "label_note_")


def _frame(at: AppTest, *columns: str):
    """The first dataframe shown that has all ``columns`` (AppTest does not expose dataframe keys)."""
    for element in at.dataframe:
        value = element.value
        if all(c in value.columns or c == value.index.name for c in columns):
            return value
    raise AssertionError(f"no dataframe with columns {columns}")


def _rows(path: Path, sql: str) -> list[dict]:
    db = open_db(path)
    try:
        return list(db.query(sql))
    finally:
        db.close()


# --- Label page -----------------------------------------------------------------------------


def test_label_page_asks_for_a_name_before_showing_units(store_path):
    at = _app()
    assert at.text_input(key="annotator").value == ""
    assert "claim text 0" not in _texts(at)
    assert any("Enter your name" in i.value for i in at.info)


def test_labelling_writes_a_row_and_advances(store_path):
    at = _app()
    at.text_input(key="annotator").input("alice").run()
    assert "claim text 0" in _texts(at)
    assert "0 of 4" in at.get("progress")[0].proto.text
    _note(at).input("clear case")
    _value(at, 0).click().run()
    rows = _rows(store_path, "SELECT unit_id, annotator, value, note FROM labels")
    assert rows == [{"unit_id": "claim_support:q0:0", "annotator": "alice", "value": "supported", "note": "clear case"}]
    assert "claim text 1" in _texts(at) and "claim text 0" not in _texts(at)
    assert "1 of 4" in at.get("progress")[0].proto.text
    assert _note(at).value == ""  # note cleared for the next unit
    _value(at, 1).click().run()
    assert _rows(store_path, "SELECT unit_id, value FROM labels ORDER BY id")[1] == {
        "unit_id": "claim_support:q1:0", "value": "unsupported"}
    assert "claim text 2" in _texts(at)


def test_a_press_for_a_unit_no_longer_shown_is_refused_with_a_message(store_path):
    at = _app(annotator="alice")
    assert _value(at, 0).key == "label_pos_1"  # view 1 shows q0
    _value(at, 0).click().run()
    assert "claim text 1" in _texts(at)  # view 2 shows q1
    late = [b for b in at.button if b.key == "label_pos_1"]  # view 1's button, kept hidden
    assert len(late) == 1
    late[0].click().run()  # a press sent from the old page, arriving after it moved on
    assert _rows(store_path, "SELECT unit_id FROM labels") == [{"unit_id": "claim_support:q0:0"}]
    assert any("Not saved" in e.value and "claim_support:q0:0" in e.value for e in at.error)
    assert "claim text 1" in _texts(at)  # still the unit on screen, unlabelled
    # the next press's message replaces that one, but the count of refused presses stays; a late
    # press of the button that saved its view is not counted (Streamlit may deliver a click twice)
    assert not any("not saved" in w.value for w in at.warning)
    other = [b for b in at.button if b.key == "label_neg_1"]  # view 1's other value: a real lost press
    assert len(other) == 1
    other[0].click().run()
    _value(at, 0).click().run()
    assert not at.error and any("At least 1 key press was not saved" in w.value for w in at.warning)
    at.button(key="label_refused_dismiss").click().run()
    assert not any("not saved" in w.value for w in at.warning)


def test_undo_retracts_the_last_label_and_shows_its_unit_again(store_path):
    at = _app(annotator="alice")
    _value(at, 0).click().run()
    _value(at, 0).click().run()
    assert "claim text 2" in _texts(at)
    at.button(key="label_undo").click().run()
    assert "claim text 1" in _texts(at)
    db = open_db(store_path)
    try:
        assert [l.unit_id for l in current_labels(db)] == ["claim_support:q0:0"]
        history = label_history(db, "claim_support:q1:0")
    finally:
        db.close()
    assert len(history) == 1  # kept in the log, only retracted
    assert _rows(store_path, "SELECT retracted_at IS NOT NULL AS r FROM labels ORDER BY id") == [{"r": 0}, {"r": 1}]
    _value(at, 1).click().run()  # relabel the undone unit
    assert _rows(store_path, "SELECT unit_id, value FROM labels ORDER BY id")[-1] == {
        "unit_id": "claim_support:q1:0", "value": "unsupported"}
    assert "claim text 2" in _texts(at)


def test_skip_moves_on_without_writing_and_comes_back_when_asked(store_path):
    at = _app(annotator="alice")
    for _ in range(4):
        _keyed(at.button, "label_skip_").click().run()
    assert _rows(store_path, "SELECT COUNT(*) AS n FROM labels") == [{"n": 0}]
    assert any("Only units you skipped" in i.value for i in at.info)
    at.button(key="label_unskip").click().run()
    assert "claim text 0" in _texts(at)


def test_resume_at_the_first_unit_this_annotator_has_not_labelled(store_path):
    db = open_db(store_path)
    try:
        append_labels(db, [Label("claim_support:q0:0", "claim_support", "alice", "supported"),
                           Label("claim_support:q1:0", "claim_support", "bob", "supported")])
    finally:
        db.close()
    at = _app(annotator="alice")
    assert "claim text 2" in _texts(at)  # q0 is hers, q1 already has its one annotator (overlap 1)
    at.number_input(key="label_overlap").set_value(2).run()
    assert "claim text 1" in _texts(at)  # with overlap 2, bob's unit needs a second person


def test_untrusted_text_is_rendered_escaped_with_the_quote_highlighted(store_path):
    at = _app(annotator="alice")
    assert f"Question 0? {SCRIPT}" in _texts(at)  # st.text: shown literally, never parsed
    bodies = [h.proto.body for h in at.get("html") if not h.proto.body.startswith("<style>")]  # page CSS aside
    assert len(bodies) == 1
    assert "<script" not in bodies[0].lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in bodies[0]
    assert "<mark>the sky is blue 0</mark>" in bodies[0]
    assert all(SCRIPT not in m.value for m in at.markdown)


def test_answer_task_shows_question_and_answer_with_its_own_values(store_path):
    db = open_db(store_path)
    try:
        add_units(db, [Unit("answer_relevance:q1", "answer_relevance", "q1", None, "Answer 1.")])
    finally:
        db.close()
    at = _app(annotator="alice")
    assert at.selectbox(key="label_task").options == ["claim_support", "answer_relevance", "(all tasks)"]
    at.selectbox(key="label_task").set_value("answer_relevance").run()
    assert "Answer 1." in _texts(at) and "Question 1?" in _texts(at)
    assert not [h for h in at.get("html") if "wb-passage\">" in h.proto.body]  # no passages for relevance
    assert [_value(at, 0).label, _value(at, 1).label] == ["relevant", "not_relevant"]  # 1 = the positive value
    _value(at, 1).click().run()
    assert _rows(store_path, "SELECT unit_id, value FROM labels") == [{"unit_id": "answer_relevance:q1", "value": "not_relevant"}]
    assert any("Nothing left to label" in s.value for s in at.success)


# --- token gate -----------------------------------------------------------------------------


def test_token_gate_blocks_every_page_until_the_token_is_given(store_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_APP_TOKEN", "s3cret-token")
    for page in (None, "data", "scores"):
        at = _app(page=page, annotator="alice")
        assert [t.key for t in at.text_input] == ["access_token"]
        assert not any("claim text" in t or "labels.db" in t for t in _texts(at))
        assert not at.dataframe
    at = _app(annotator="alice")
    at.text_input(key="access_token").input("wrong")
    at.button[0].click().run()
    assert any("Wrong access token" in e.value for e in at.error)
    assert "claim text 0" not in _texts(at)
    at.text_input(key="access_token").input("s3cret-token")
    at.button[0].click().run()
    assert "claim text 0" in _texts(at)


def test_token_comparison_is_exact():
    from workbench_app.common import token_ok

    assert token_ok("abc", "abc")
    assert not token_ok("abd", "abc") and not token_ok("", "abc") and not token_ok(None, "abc")
    assert not token_ok("abc ", "abc")


# --- Data page ------------------------------------------------------------------------------


def test_data_page_loads_an_eval_set_and_counts(store_path, tmp_path):
    evalset = tmp_path / "extra.jsonl"
    evalset.write_text(
        json.dumps({"id": "z1", "question": "Q?", "answer": "It is red. It is round.",
                    "contexts": ["The ball is red and round."]}) + "\n",
        encoding="utf-8",
    )
    at = _app(page="data")
    at.multiselect(key="data_tasks").set_value(["answer_relevance", "abstention"]).run()
    at.text_input(key="data_path").input(str(evalset))
    at.button(key="data_load_path").click().run()
    assert not at.exception
    assert any("Stored 1 items (1 new); 2 new units" in s.value for s in at.success)
    units = _rows(store_path, "SELECT unit_id FROM units WHERE item_id = 'z1' ORDER BY unit_id")
    assert [u["unit_id"] for u in units] == ["abstention:z1", "answer_relevance:z1"]
    per_task = _frame(at, "task", "units")
    assert dict(zip(per_task["task"], per_task["units"])) == {"claim_support": 4, "answer_relevance": 1, "abstention": 1}


def test_data_page_reports_a_bad_eval_set_and_stores_nothing(store_path, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "y", "question": "Q?"}\n', encoding="utf-8")
    at = _app(page="data")
    at.text_input(key="data_path").input(str(bad))
    at.button(key="data_load_path").click().run()
    assert any("nothing was stored" in e.value for e in at.error)
    assert "bad.jsonl" in "\n".join(_texts(at))
    assert _rows(store_path, "SELECT COUNT(*) AS n FROM items WHERE id = 'y'") == [{"n": 0}]


def test_data_page_counts_judged_units_and_runs_the_judge(store_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_JUDGE", "offline")
    at = _app(page="data")
    per_task = _frame(at, "task", "units", "judged")
    assert dict(zip(per_task["task"], per_task["judged"])) == {"claim_support": 1}  # judge-x judged q0 only
    assert any("until the judge has run, no quote is highlighted" in i.value for i in at.info)
    button = at.button(key="data_run_judge")
    assert button.label == "Run the judge on the store (3 unit(s) not judged yet)"
    button.click().run()
    assert not at.exception
    assert any(s.value.startswith("Judge offline:") and "claim_support 4" in s.value for s in at.success)
    assert dict(zip(*[_frame(at, "task", "judged")[c] for c in ("task", "judged")])) == {"claim_support": 4}


def test_data_page_offers_the_export_with_current_labels(store_path):
    db = open_db(store_path)
    try:
        append_labels(db, [Label("claim_support:q0:0", "claim_support", "alice", "supported")])
    finally:
        db.close()
    at = _app(page="data")
    table = _frame(at, "annotator", "total")
    assert int(table.loc["alice", "total"]) == 1
    assert at.get("download_button")


# --- Agreement and Calibration pages ---------------------------------------------------------


def _labelled_and_judged(path: Path, n: int = 24) -> None:
    """``n`` more claim units with two annotators and a judge whose score tracks the label."""
    db = open_db(path)
    try:
        add_items(db, [EvalItem(f"c{i}", f"Q{i}?", f"A{i}.", (Passage(f"c{i}p", f"text {i}"),)) for i in range(n)])
        units = [Unit(Unit.make_id("claim_support", f"c{i}", 0), "claim_support", f"c{i}", 0, f"c{i}") for i in range(n)]
        add_units(db, units)
        labels, judgments = [], []
        for i, unit in enumerate(units):
            truth = "supported" if i % 2 == 0 else "unsupported"
            other = truth if i % 6 else ("unsupported" if truth == "supported" else "supported")
            labels += [Label(unit.unit_id, "claim_support", "ann1", truth), Label(unit.unit_id, "claim_support", "ann2", other)]
            score = 0.8 if truth == "supported" else 0.2
            verdict = "supported" if (score > 0.5) != (i % 8 == 1) else "unsupported"
            judgments.append(Judgment(unit.unit_id, "claim_support", "judge-x", verdict, score + (i % 3) * 0.05))
        append_labels(db, labels)
        add_judgments(db, judgments)
    finally:
        db.close()


def test_agreement_page_shows_tables_heatmap_and_disagreements(store_path):
    _labelled_and_judged(store_path)
    at = _app(page="agreement")
    human = _frame(at, "Task", "Human agreement (alpha)", "Pairwise kappa")
    assert list(human["Task"]) == ["claim_support"]
    assert human.loc[0, "Annotators"] == "ann1, ann2"
    assert human.loc[0, "Pairwise kappa"].startswith("ann1 & ann2: ")
    judges = _frame(at, "Task", "Kappa vs humans", "Human ceiling (alpha)")
    assert list(judges["Task"]) == ["claim_support"]
    assert "Judge" not in judges.columns and any(c.value == "Judge: `judge-x`" for c in at.caption)  # named once
    assert all(re.fullmatch(r"-?\d\.\d\d", judges.loc[0, c]) for c in ("Kappa vs humans", "AC1"))
    assert re.fullmatch(r"\[-?\d\.\d\d, -?\d\.\d\d\]", judges.loc[0, "kappa 95% interval"])
    captions = " ".join(c.value for c in at.caption)
    assert "Cohen's kappa" in captions and "Gwet's AC1" in captions and "Krippendorff's alpha" in captions
    charts = at.get("vega_lite_chart")
    assert len(charts) >= 2  # ceiling bars + one confusion heatmap
    frame = _frame(at, "unit_id", "human", "judge", "n_labels")
    assert len(frame) >= 1
    assert set(frame["judge"]) <= {"supported", "unsupported"}
    assert (frame["judge"] != frame["human"]).all()


def test_calibration_apply_writes_a_trusted_threshold_with_its_notes(store_path, tmp_path):
    _labelled_and_judged(store_path, n=40)  # 40 units minus 7 ties = 33 scored units, a clean split
    at = _app(page="calibration")
    assert at.get("vega_lite_chart")  # sweep (+ reliability in the expander)
    assert not at.warning and any("better than chance" in s.value for s in at.success)
    assert any(m.value.startswith("**Threshold 0.5") and "· 33 units" in m.value for m in at.markdown)
    at.text_input(key="calib_out").input("out/thresholds.json")
    at.button(key="calib_apply").click().run()
    written = json.loads((tmp_path / "out" / "thresholds.json").read_text(encoding="utf-8"))
    assert written["judge"] == "judge-x" and written["criterion"] == "kappa"
    assert 0.0 <= written["claim_support"]["threshold"] <= 1.0
    assert written["claim_support"]["n"] == 33
    assert "notes" in written and "claim_support" not in written["notes"]


def test_calibration_needs_an_acknowledgement_to_write_a_flagged_threshold(store_path, tmp_path):
    _labelled_and_judged(store_path)  # 24 units minus 4 ties = 20 scored units: below the minimum of 30
    at = _app(page="calibration")
    warning = [w.value for w in at.warning]
    assert len(warning) == 1 and "Untrustworthy threshold" in warning[0] and "only 20 unit" in warning[0]
    assert at.button(key="calib_apply").disabled  # nothing may be written without the acknowledgement
    target = tmp_path / "thresholds.json"
    at.checkbox(key="calib_ack_claim_support").check().run()
    assert not at.button(key="calib_apply").disabled
    at.button(key="calib_apply").click().run()
    written = json.loads(target.read_text(encoding="utf-8"))
    assert written["claim_support"]["n"] == 20
    assert "only 20 unit" in written["notes"]["claim_support"]
    assert "acknowledged" in written["notes"]["claim_support"]


# --- Scores page ----------------------------------------------------------------------------


def _write_run(folder: Path) -> None:
    folder.mkdir(parents=True)
    records = [
        {"id": "q0", "faithfulness": 1.0, "answer_relevance": 0.9, "quadrant": "pass",
         "claims": [{"text": f"claim {SCRIPT}", "supported": True, "quote": f"quoted {SCRIPT}", "quote_found": True,
                     "passage_id": "p0", "score": 0.9, "reason": ""}]},
        {"id": "q1", "faithfulness": 0.2, "answer_relevance": 0.3, "quadrant": "fail", "claims": []},
        {"id": "q2", "faithfulness": None, "answer_relevance": None, "quadrant": "abstained", "abstained": True},
    ]
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    summary = {"n_items": 3, "judge": {"fingerprint": "judge-x"},
               "thresholds": {"faithfulness": 0.85, "answer_relevance": 0.7, "source": "default"},
               "faithfulness": {"n": 2, "mean": 0.6, "pass_rate": 0.5},
               "answer_relevance": {"n": 2, "mean": 0.6, "pass_rate": 0.5},
               "quadrant": {"pass": 1, "faithful_irrelevant": 0, "relevant_unfaithful": 0, "fail": 1, "abstained": 1, "unscored": 0},
               "corrected": {"faithfulness_pass": {"raw": 0.5, "rogan_gladen": 0.45}}}
    (folder / "summary.json").write_text(json.dumps(summary), encoding="utf-8")


def test_scores_page_shows_quadrant_counts_and_escaped_drill_down(store_path, tmp_path):
    _write_run(tmp_path / "runs" / "r1")
    at = _app(page="scores")
    assert at.selectbox(key="scores_run").value == str(tmp_path / "runs" / "r1")
    table = _frame(at, "Quadrant", "Items", "Share [95% CI]")
    assert dict(zip(table["Quadrant"], table["Items"]))["pass"] == 1
    assert table["Items"].sum() == 3
    # 1 of 3 items: Wilson 95% interval [6.1%, 79.2%] (no quadrant_ci in this summary)
    assert dict(zip(table["Quadrant"], table["Share [95% CI]"]))["pass"] == "33.3% [6.1, 79.2]"
    assert at.get("vega_lite_chart")
    assert [m.value for m in at.metric][:2] == ["3", "50.0%"]
    captions = [c.value for c in at.caption]
    assert "95% CI 9.5–90.5% · score ≥ 0.850 · mean 0.60 · n 2" in captions  # Wilson, 1 of 2
    assert any("faithfulness ≥ **0.850**, answer relevance ≥ **0.700**" in m.value for m in at.markdown)
    assert any(j.proto.body and "rogan_gladen" in j.proto.body for j in at.json)
    assert any("No item open" in c for c in captions)
    at.text_input(key="scores_item_id").input("q0").run()
    texts = _texts(at)
    assert f"claim {SCRIPT}" in texts
    assert f"quote: quoted {SCRIPT}" in texts
    assert "Question 0? " + SCRIPT in texts  # the item is in the store, so its question is shown (escaped)
    at.selectbox(key="scores_cell").set_value("fail").run()
    assert list(_frame(at, "id", "faithfulness", "n_claims")["id"]) == ["q1"]


def test_scores_page_lists_runs_beside_the_label_store(tmp_path, monkeypatch):
    # `workbench app --db runs/demo/labels.db` started from another folder: the runs next to the
    # store are listed although <home>/runs has none.
    demo = tmp_path / "project" / "runs" / "demo"
    demo.mkdir(parents=True)
    _build_store(demo / "labels.db")
    _write_run(demo / "rag")
    monkeypatch.setenv("WORKBENCH_DB", str(demo / "labels.db"))
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path / "elsewhere"))
    monkeypatch.delenv("WORKBENCH_APP_TOKEN", raising=False)
    at = _app(page="scores")
    assert at.selectbox(key="scores_run").value == str((demo / "rag").resolve())
    assert [m.value for m in at.metric][:1] == ["3"]


def test_scores_page_without_runs_says_what_to_do(store_path):
    at = _app(page="scores")
    at.selectbox(key="scores_run").set_value("(another folder)").run()
    assert any("workbench score" in i.value for i in at.info)


# --- workbench app --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.1.2.3", True), ("localhost", True), ("::1", True), ("[::1]", True),
     ("0.0.0.0", False), ("::", False), ("192.168.1.5", False), ("example.org", False)],
)
def test_is_loopback(host, loopback):
    assert cli_app.is_loopback(host) is loopback


def test_app_command_refuses_a_network_host_without_a_token(monkeypatch):
    monkeypatch.delenv("WORKBENCH_APP_TOKEN", raising=False)
    called = []
    monkeypatch.setattr(cli_app, "run_streamlit", lambda command, env: called.append(command) or 0)
    result = CliRunner().invoke(cli_app.app, ["--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "WORKBENCH_APP_TOKEN" in result.output
    assert called == []


def test_app_command_passes_db_and_runs_streamlit_with_an_argument_list(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_APP_TOKEN", "tok-XYZ-987")
    seen = {}

    def fake_run(command, env):
        seen["command"], seen["env"] = command, env
        return 0

    monkeypatch.setattr(cli_app, "run_streamlit", fake_run)
    result = CliRunner().invoke(cli_app.app, ["--db", str(tmp_path / "x.db"), "--port", "8600", "--host", "0.0.0.0"])
    assert result.exit_code == 0, result.output
    command = seen["command"]
    assert isinstance(command, list) and command[1:4] == ["-m", "streamlit", "run"]
    assert command[4] == str(ROOT / "workbench_app/main.py")
    assert command[command.index("--server.address") + 1] == "0.0.0.0"
    assert command[command.index("--server.port") + 1] == "8600"
    assert command[command.index("--server.headless") + 1] == "true"
    assert seen["env"]["WORKBENCH_DB"] == str((tmp_path / "x.db").resolve())
    assert "tok-XYZ-987" not in result.output


def test_app_command_is_listed_for_registration():
    assert cli_app.app in cli_app.COMMANDS
    assert "Example: workbench app" in cli_app.app.help
