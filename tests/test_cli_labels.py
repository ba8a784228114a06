"""`workbench labels add | import | export` through click's CliRunner, on real JSONL/CSV files."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from workbench import store
from workbench.calibration.label_files import EXPORT_COLUMNS
from workbench.cli import labels as cli_labels
from workbench.judges.base import JudgeError
from workbench.judges.scripted import ScriptedJudge
from workbench.types import Label, Unit

DATA = Path(__file__).resolve().parent.parent / "data"
CS = "claim_support"


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def eval_rows(n: int = 2) -> list[dict]:
    return [
        {
            "id": f"q{i}",
            "question": f"Question {i}?",
            "answer": f"Answer {i} first. Answer {i} second.",
            "contexts": [{"id": f"p{i}", "text": f"Passage {i}."}],
        }
        for i in range(1, n + 1)
    ]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def judge(monkeypatch) -> ScriptedJudge:
    """A scripted judge that splits an answer on '. '; installed as the judge `labels add` builds."""
    scripted = ScriptedJudge("scripted@cli")
    scripted.set_default("decompose", lambda answer: [s.strip() for s in answer.split(". ") if s.strip()])
    monkeypatch.setattr(cli_labels, "_build_judge", lambda backend, model: scripted)
    return scripted


def run(runner: CliRunner, *args: str):
    return runner.invoke(cli_labels.labels, [str(a) for a in args], catch_exceptions=False)


def test_every_command_has_help_ending_in_an_example(runner):
    for name, command in [("labels", cli_labels.labels), *cli_labels.labels.commands.items()]:
        lines = [line.strip() for line in (command.help or "").strip().splitlines() if line.strip()]
        assert lines and lines[-1].startswith("Example: workbench labels"), name
    assert cli_labels.COMMANDS == [cli_labels.labels]
    assert set(cli_labels.labels.commands) == {"add", "import", "export"}


def test_labels_group_is_registered_on_the_main_cli(runner):
    from workbench.cli import main

    result = runner.invoke(main, ["labels", "--help"])
    assert result.exit_code == 0 and "export" in result.output


# ---------------------------------------------------------------- add


def test_add_decomposes_once_and_makes_answer_units(runner, judge, tmp_path):
    evalset = write_jsonl(tmp_path / "eval.jsonl", eval_rows(2))
    db_path = tmp_path / "s.db"
    result = run(runner, "add", evalset, "--db", db_path)
    assert result.exit_code == 0, result.output
    assert "judge: scripted@cli (decomposing 2 answers into claims)" in result.output
    assert "units: 10 new (claim_support 4, answer_faithfulness 2, answer_relevance 2, abstention 2)" in result.output
    assert [call for call, _ in judge.history] == ["decompose", "decompose"]
    with store.open_db(db_path) as db:
        claims = store.list_units(db, task=CS)
        assert [(u.item_id, u.claim_index, u.text) for u in claims] == [
            ("q1", 0, "Answer 1 first"), ("q1", 1, "Answer 1 second."),
            ("q2", 0, "Answer 2 first"), ("q2", 1, "Answer 2 second."),
        ]
        relevance = store.list_units(db, task="answer_relevance")
        assert [u.text for u in relevance] == ["Answer 1 first. Answer 1 second.", "Answer 2 first. Answer 2 second."]
    # a second run with one more item decomposes only the new item
    evalset = write_jsonl(tmp_path / "eval.jsonl", eval_rows(3))
    again = run(runner, "add", evalset, "--db", db_path)
    assert again.exit_code == 0
    assert "decomposing 1 answers" in again.output
    assert "units: 5 new" in again.output and "10 already present" in again.output
    assert len(judge.history) == 3
    third = run(runner, "add", evalset, "--db", db_path)
    assert "judge: none needed" in third.output and len(judge.history) == 3


def test_add_with_tasks_subset_needs_no_judge(runner, monkeypatch, tmp_path):
    monkeypatch.setattr(cli_labels, "_build_judge", lambda *a: pytest.fail("no judge should be built"))
    evalset = write_jsonl(tmp_path / "eval.jsonl", eval_rows(2))
    result = run(runner, "add", evalset, "--db", tmp_path / "s.db", "--tasks", "abstention,answer_relevance")
    assert result.exit_code == 0
    assert "units: 4 new (abstention 2, answer_relevance 2)" in result.output
    passages = run(runner, "add", evalset, "--db", tmp_path / "s.db", "--tasks", "context_relevance")
    assert passages.exit_code == 0 and "context_relevance" in passages.output
    bad = runner.invoke(cli_labels.labels, ["add", str(evalset), "--db", str(tmp_path / "s.db"), "--tasks", "nonsense"])
    assert bad.exit_code == 2 and "nonsense" in bad.output


def test_add_decompose_failure_keeps_the_rest_and_retries_later(runner, judge, tmp_path):
    evalset = write_jsonl(tmp_path / "eval.jsonl", eval_rows(2))
    judge.enqueue("decompose", ["Only claim."], JudgeError("timed out"))
    result = runner.invoke(cli_labels.labels, ["add", str(evalset), "--db", str(tmp_path / "s.db")])
    assert result.exit_code == 1
    assert "decompose failed: q2: JudgeError: timed out" in result.stderr
    retry = run(runner, "add", evalset, "--db", tmp_path / "s.db")
    assert retry.exit_code == 0 and "decomposing 1 answers" in retry.output
    with store.open_db(tmp_path / "s.db") as db:
        assert [(u.item_id, u.text) for u in store.list_units(db, task=CS)] == [
            ("q1", "Only claim."), ("q2", "Answer 2 first"), ("q2", "Answer 2 second."),
        ]


def test_add_bad_eval_set_exits_2_and_stores_nothing(runner, judge, tmp_path):
    evalset = tmp_path / "eval.jsonl"
    evalset.write_text(json.dumps(eval_rows(1)[0]) + "\n" + json.dumps({"id": "q2", "answer": "x"}) + "\n")
    result = runner.invoke(cli_labels.labels, ["add", str(evalset), "--db", str(tmp_path / "s.db")])
    assert result.exit_code == 2
    assert f"{evalset}:2" in result.stderr and "question" in result.stderr
    with store.open_db(tmp_path / "s.db") as db:
        assert store.list_items(db) == []


def test_add_with_claims_file_from_bundled_wice_data_lines_up_with_its_labels(runner, monkeypatch, tmp_path):
    monkeypatch.setattr(cli_labels, "_build_judge", lambda *a: pytest.fail("--claims must not build a judge"))
    db_path = tmp_path / "s.db"
    result = run(runner, "add", DATA / "wice_claims.jsonl", "--claims", DATA / "wice_claims_units.jsonl",
                 "--db", db_path, "--tasks", CS)
    assert result.exit_code == 0, result.output
    assert "judge: none (claims from" in result.output and "units: 349 new (claim_support 349)" in result.output
    imported = run(runner, "import", DATA / "wice_labels.jsonl", "--db", db_path)
    assert imported.exit_code == 0, imported.output
    assert "imported 349 labels" in imported.output
    source = [json.loads(line) for line in (DATA / "wice_labels.jsonl").read_text().splitlines()]
    with store.open_db(db_path) as db:
        current = {(l.unit_id, l.value) for l in store.current_labels(db)}
        first = store.get_unit(db, Unit.make_id(CS, source[0]["item_id"], 0))
    assert current == {(Unit.make_id(CS, r["item_id"], r["claim_index"]), r["value"]) for r in source}
    first_claim = json.loads((DATA / "wice_claims_units.jsonl").read_text().splitlines()[0])
    assert first.text == first_claim["text"]
    # importing the same file again adds nothing
    again = run(runner, "import", DATA / "wice_labels.jsonl", "--db", db_path)
    assert "imported 0 labels" in again.output and "349 already in the store" in again.output


def test_add_bad_claims_file_lists_every_line_and_stores_nothing(runner, tmp_path):
    evalset = write_jsonl(tmp_path / "eval.jsonl", eval_rows(2))
    claims = tmp_path / "claims.jsonl"
    claims.write_text(
        "\n".join([
            json.dumps({"item_id": "q1", "claim_index": 0, "text": "ok"}),
            json.dumps({"item_id": "q9", "claim_index": 0, "text": "unknown item"}),
            "{not json",
            json.dumps({"item_id": "q1", "claim_index": 0, "text": "duplicate"}),
            json.dumps({"item_id": "q2", "claim_index": -1, "text": ""}),
        ]) + "\n"
    )
    result = runner.invoke(cli_labels.labels, ["add", str(evalset), "--claims", str(claims), "--db", str(tmp_path / "s.db")])
    assert result.exit_code == 2
    for fragment in (":2: field 'item_id'", ":3: not valid JSON", ":4: claim 0 of item 'q1' already given on line 1",
                     ":5: field 'claim_index'", ":5: field 'text'"):
        assert fragment in result.stderr
    with store.open_db(tmp_path / "s.db") as db:
        assert store.list_items(db) == [] and store.list_units(db) == []


# ---------------------------------------------------------------- import


@pytest.fixture
def stocked(runner, judge, tmp_path) -> Path:
    """A store with items q1, q2 (two claims each) and their answer-level units."""
    db_path = tmp_path / "s.db"
    assert run(runner, "add", write_jsonl(tmp_path / "eval.jsonl", eval_rows(2)), "--db", db_path).exit_code == 0
    return db_path


def test_import_reports_every_bad_row_with_its_line_and_writes_nothing(runner, stocked, tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text(
        "task,item_id,claim_index,annotator,value,note\n"
        "claim_support,q1,0,ann,supported,fine\n"  # line 2: good
        'claim_support,q1,1,ann,supported,"a note\nover two lines"\n'  # lines 3-4: good
        "claim_support,q1,0,ann,maybe,\n"  # line 5: bad value
        "vibes,q1,0,ann,good,\n"  # line 6: unknown task
        "claim_support,q7,0,ann,supported,\n"  # line 7: unknown unit
        "abstention,q1,,,refused,\n"  # line 8: missing annotator
        "claim_support,q1,one,ann,supported,\n"  # line 9: claim_index not an integer
        "claim_support,q1,0,ann\n",  # line 10: too few cells
        encoding="utf-8",
    )
    result = runner.invoke(cli_labels.labels, ["import", str(path), "--db", str(stocked)])
    assert result.exit_code == 2
    err = result.stderr
    assert f"{path}:5: value: expected 'supported' or 'unsupported'" in err
    assert f"{path}:6: task: expected one of" in err
    assert f"{path}:7: unit: no unit 'claim_support:q7:0'" in err
    assert f"{path}:8: field 'annotator': expected a value" in err
    assert f"{path}:9: field 'claim_index': expected an integer" in err
    assert f"{path}:10: expected 6 cells" in err
    assert f"{path}:2:" not in err and f"{path}:3:" not in err
    assert "nothing imported" in err
    with store.open_db(stocked) as db:
        assert store.label_log(db) == []


def test_import_jsonl_missing_fields_and_bad_header(runner, stocked, tmp_path):
    path = write_jsonl(tmp_path / "l.jsonl", [
        {"task": "abstention", "item_id": "q1", "claim_index": None, "annotator": "a", "value": "refused"},
        {"task": "abstention", "item_id": "q1", "annotator": "a"},
    ])
    result = runner.invoke(cli_labels.labels, ["import", str(path), "--db", str(stocked)])
    assert result.exit_code == 2
    assert f"{path}:2: field 'claim_index': missing" in result.stderr
    assert f"{path}:2: field 'value': missing" in result.stderr
    header = tmp_path / "h.csv"
    header.write_text("task,item,annotator,value\nabstention,q1,a,refused\n")
    result = runner.invoke(cli_labels.labels, ["import", str(header), "--db", str(stocked)])
    assert result.exit_code == 2 and "header: missing column(s) item_id, claim_index" in result.stderr
    with store.open_db(stocked) as db:
        assert store.label_log(db) == []


# ---------------------------------------------------------------- export and round trips


def seed_labels(db_path: Path) -> None:
    with store.open_db(db_path) as db:
        c0, c1 = Unit.make_id(CS, "q1", 0), Unit.make_id(CS, "q2", 1)
        store.append_labels(db, [
            Label(c0, CS, "ann", "supported", 'says "yes", then\nnewline'),
            Label(c0, CS, "bob", "unsupported"),
            Label("abstention:q2", "abstention", "ann", "answered", "=1+1 stays text"),
        ])
        store.append_labels(db, [Label(c0, CS, "ann", "unsupported", "edited")])
        store.append_labels(db, [Label(c1, CS, "ann", "supported", "will be undone")])
        store.undo_last_label(db, "ann")


def test_export_current_labels_csv(runner, stocked):
    seed_labels(stocked)
    result = run(runner, "export", "--db", stocked)
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(result.output)))
    assert [tuple(r.values())[:6] for r in rows] == [
        ("claim_support", "q1", "0", "bob", "unsupported", ""),
        ("abstention", "q2", "", "ann", "answered", "=1+1 stays text"),
        ("claim_support", "q1", "0", "ann", "unsupported", "edited"),
    ]
    assert list(rows[0]) == list(EXPORT_COLUMNS)


@pytest.mark.parametrize("fmt,suffix", [("csv", ".csv"), ("jsonl", ".jsonl")])
@pytest.mark.parametrize("history", [False, True])
def test_export_import_round_trip(runner, judge, stocked, tmp_path, fmt, suffix, history):
    seed_labels(stocked)
    extra = ["--all-history"] if history else []
    out = tmp_path / f"export{suffix}"
    assert run(runner, "export", "--db", stocked, "--out", out, *extra).exit_code == 0
    blank = tmp_path / "blank.db"
    assert run(runner, "add", tmp_path / "eval.jsonl", "--db", blank).exit_code == 0
    imported = run(runner, "import", out, "--db", blank)
    assert imported.exit_code == 0, imported.output
    again = tmp_path / f"again{suffix}"
    assert run(runner, "export", "--db", blank, "--out", again, *extra).exit_code == 0
    assert again.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")
    with store.open_db(stocked) as a, store.open_db(blank) as b:
        assert store.current_labels(a) == store.current_labels(b)
        if history:
            assert [{k: v for k, v in r.items() if k != "id"} for r in store.label_log(a)] == [
                {k: v for k, v in r.items() if k != "id"} for r in store.label_log(b)
            ]
    if fmt == "jsonl":
        first = json.loads(out.read_text().splitlines()[0])
        assert first["claim_index"] == 0 and first["note"] == 'says "yes", then\nnewline' if history else True


labels_strategy = st.lists(
    st.tuples(
        st.sampled_from([Unit.make_id(CS, "q1", 0), Unit.make_id(CS, "q2", 1), "abstention:q1"]),
        st.text(min_size=1, max_size=12).filter(lambda s: s.strip() and s == s.strip()),
        st.booleans(),
        st.one_of(st.none(), st.text(max_size=30)),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=labels_strategy, fmt=st.sampled_from(["csv", "jsonl"]))
# found by Hypothesis: a lone "\r" in a CSV cell, and U+0085 / U+2028 splitting a JSONL line
@example(rows=[(Unit.make_id(CS, "q1", 0), "0\r0", False, "x\x85y\u2028z\r\n")], fmt="csv")
@example(rows=[(Unit.make_id(CS, "q1", 0), "0\r0", False, "x\x85y\u2028z\r\n")], fmt="jsonl")
def test_round_trip_property(runner, judge, tmp_path_factory, rows, fmt):
    """Any labels (odd annotator names, notes with quotes, commas, newlines, unicode) survive
    export -> import into a blank store with the same items and units -> export, byte for byte."""
    base = tmp_path_factory.mktemp("rt")
    evalset = write_jsonl(base / "eval.jsonl", eval_rows(2))
    first, second = base / "a.db", base / "b.db"
    for db_path in (first, second):
        assert run(runner, "add", evalset, "--db", db_path).exit_code == 0
    with store.open_db(first) as db:
        for unit_id, annotator, positive, note in rows:
            task = unit_id.split(":")[0]
            from workbench.types import TASK_VALUES

            value = TASK_VALUES[task][0 if positive else 1]
            store.append_labels(db, [Label(unit_id, task, annotator, value, note)])
    out, again = base / f"x.{fmt}", base / f"y.{fmt}"
    assert run(runner, "export", "--db", first, "--out", out).exit_code == 0
    result = run(runner, "import", out, "--db", second)
    assert result.exit_code == 0, result.output
    assert run(runner, "export", "--db", second, "--out", again).exit_code == 0
    assert again.read_bytes() == out.read_bytes()
    with store.open_db(first) as a, store.open_db(second) as b:
        assert store.current_labels(a) == store.current_labels(b)


# ---------------------------------------------------------------- units are versions of text


def test_readding_changed_answers_makes_new_units_and_keeps_old_labels_stale(runner, judge, tmp_path):
    evalset = write_jsonl(tmp_path / "eval.jsonl", eval_rows(2))
    db_path = tmp_path / "s.db"
    assert run(runner, "add", evalset, "--db", db_path).exit_code == 0
    with store.open_db(db_path) as db:
        store.append_labels(db, [Label("claim_support:q1:0", CS, "ann", "supported"),
                                 Label("answer_relevance:q1", "answer_relevance", "ann", "relevant"),
                                 Label("answer_relevance:q2", "answer_relevance", "ann", "relevant")])
    rows = eval_rows(2)
    rows[0]["answer"] = "Answer 1 rewritten. Answer 1 second."
    again = run(runner, "add", write_jsonl(evalset, rows), "--db", db_path)
    assert again.exit_code == 0, again.output
    assert "(0 new, 2 updated, 1 with changed text)" in again.output
    # q1: 2 claims + 3 answer-level units changed; their 2 labels stay on the old text
    assert "changed: 5 units had their text changed" in again.output and "with their 2 labels" in again.output
    assert "decomposing 1 answers" in again.output
    with store.open_db(db_path) as db:
        assert [label.unit_id for label in store.current_labels(db)] == ["answer_relevance:q2"]
        claims = [u.text for u in store.list_units(db, task=CS, item_id="q1")]
        assert claims == ["Answer 1 rewritten", "Answer 1 second."]
    current = run(runner, "export", "--db", db_path)
    assert [r["item_id"] for r in csv.DictReader(io.StringIO(current.output))] == ["q2"]
    history = list(csv.DictReader(io.StringIO(run(runner, "export", "--db", db_path, "--all-history").output)))
    assert [(r["item_id"], r["stale"], r["text"]) for r in history] == [
        ("q1", "1", "Answer 1 first"), ("q1", "1", "Answer 1 first. Answer 1 second."),
        ("q2", "0", "Answer 2 first. Answer 2 second.")]


def test_import_refuses_claim_labels_made_on_other_claim_text(runner, tmp_path):
    evalset = write_jsonl(tmp_path / "eval.jsonl", eval_rows(2))
    claims = write_jsonl(tmp_path / "claims.jsonl", [
        {"item_id": "q1", "claim_index": 0, "text": "Answer 1 first"},
        {"item_id": "q2", "claim_index": 0, "text": "Answer 2 first"}])
    db_path = tmp_path / "s.db"
    assert run(runner, "add", evalset, "--claims", claims, "--db", db_path).exit_code == 0
    labels_file = write_jsonl(tmp_path / "labels.jsonl", [
        {"task": CS, "item_id": "q1", "claim_index": 0, "annotator": "a", "value": "supported",
         "text": "Answer 1 first"},
        {"task": CS, "item_id": "q2", "claim_index": 0, "annotator": "a", "value": "supported",
         "text": "A claim the store never had"},
        {"task": CS, "item_id": "q1", "claim_index": 0, "annotator": "b", "value": "supported",
         "text_hash": "0123456789abcdef"}])
    result = run(runner, "import", labels_file, "--db", db_path)
    assert result.exit_code == 2
    assert f"{labels_file}:2: field 'text': the label was made on 'A claim the store never had'" in result.stderr
    assert f"{labels_file}:3: field 'text_hash': '0123456789abcdef' matches no version" in result.stderr
    assert "2 problem(s); nothing imported" in result.stderr
    with store.open_db(db_path) as db:
        assert store.current_labels(db) == []
    # the claim text changes in the store: the old file no longer lands on it
    changed = write_jsonl(tmp_path / "claims2.jsonl", [{"item_id": "q1", "claim_index": 0, "text": "Answer 1 changed"}])
    assert "changed: 1 units" in run(runner, "add", evalset, "--claims", changed, "--db", db_path).output
    first_row = write_jsonl(tmp_path / "one.jsonl", [json.loads(labels_file.read_text().splitlines()[0])])
    refused = run(runner, "import", first_row, "--db", db_path)
    assert refused.exit_code == 2 and "(the labelled text is an older, stale version)" in refused.stderr


def test_public_labels_do_not_attach_to_judge_decomposed_claims(runner, judge, tmp_path):
    db_path = tmp_path / "s.db"
    added = run(runner, "add", DATA / "wice_claims.jsonl", "--db", db_path, "--tasks", CS)
    assert added.exit_code == 0, added.output
    result = run(runner, "import", DATA / "wice_labels.jsonl", "--db", db_path)
    assert result.exit_code == 2
    mismatched = [line for line in result.stderr.splitlines() if "field 'text'" in line]
    assert mismatched and all(line.startswith(f"{DATA / 'wice_labels.jsonl'}:") for line in mismatched)
    with store.open_db(db_path) as db:
        assert store.current_labels(db) == []


def test_export_import_carries_stale_labels_to_their_old_text(runner, judge, tmp_path):
    evalset = write_jsonl(tmp_path / "eval.jsonl", eval_rows(1))
    db_path = tmp_path / "s.db"
    run(runner, "add", evalset, "--db", db_path, "--tasks", "answer_relevance")
    with store.open_db(db_path) as db:
        store.append_labels(db, [Label("answer_relevance:q1", "answer_relevance", "ann", "relevant")])
    rows = eval_rows(1)
    rows[0]["answer"] = "Changed."
    run(runner, "add", write_jsonl(evalset, rows), "--db", db_path, "--tasks", "answer_relevance")
    out = tmp_path / "all.jsonl"
    assert run(runner, "export", "--db", db_path, "--all-history", "--out", out).exit_code == 0
    again = run(runner, "import", out, "--db", db_path)
    assert again.exit_code == 0 and "1 already in the store" in again.output  # matched by hash to the stale unit


# ---------------------------------------------------------------- stores that exist


def test_reading_commands_refuse_a_missing_store(runner, tmp_path):
    from workbench.cli import main

    missing = tmp_path / "typo.db"
    labels_file = write_jsonl(tmp_path / "l.jsonl", [{"task": "abstention", "item_id": "q1", "claim_index": None,
                                                       "annotator": "a", "value": "refused"}])
    for args in (["labels", "export", "--db", missing], ["labels", "import", labels_file, "--db", missing],
                 ["agreement", "--db", missing], ["calibrate", "--db", missing], ["judge", "--db", missing]):
        result = runner.invoke(main, [str(a) for a in args])
        assert result.exit_code != 0, args
        assert "no label store at" in result.stderr and "typo.db" in result.stderr, args
        assert not missing.exists(), args


def test_add_creates_the_store_and_says_so(runner, judge, tmp_path):
    db_path = tmp_path / "new" / "s.db"
    result = run(runner, "add", write_jsonl(tmp_path / "eval.jsonl", eval_rows(1)), "--db", db_path)
    assert result.exit_code == 0 and f"store: created a new label store at {db_path}" in result.output
    assert "created" not in run(runner, "add", tmp_path / "eval.jsonl", "--db", db_path).output
