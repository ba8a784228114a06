"""Tests for workbench.scoring.dataset: eval-set and corpus loading, validation and error reporting."""
from __future__ import annotations

import copy
import csv
import dataclasses
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.scoring.dataset import (
    MAX_PROBLEMS_SHOWN,
    DatasetError,
    Problem,
    load_corpus,
    load_eval_set,
    parse_item,
    parse_passage,
)
from workbench.types import EvalItem, Passage

CASES = Path(__file__).parent / "cases" / "dataset"
RECORD_CASES = json.loads((CASES / "records.json").read_text(encoding="utf-8"))["cases"]


def _item_from_case(case: dict) -> EvalItem:
    spec = case["item"]
    return EvalItem(
        id=spec["id"],
        question=spec["question"],
        answer=spec["answer"],
        contexts=tuple(Passage(*row) for row in spec["contexts"]),
        reference=spec["reference"],
        gold_context_ids=None if spec["gold_context_ids"] is None else tuple(spec["gold_context_ids"]),
        answerable=spec["answerable"],
        line=7,
    )


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _problems(exc: pytest.ExceptionInfo[DatasetError]) -> list[str]:
    return [str(p) for p in exc.value.problems]


# ------------------------------------------------------------------------------------------
# parse_item: golden table
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", RECORD_CASES, ids=[c["id"] for c in RECORD_CASES])
def test_parse_item_golden(case: dict) -> None:
    record = copy.deepcopy(case["record"])
    if "item" in case:
        assert parse_item(record, line=7, source="evals.jsonl") == _item_from_case(case)
    else:
        with pytest.raises(DatasetError) as exc:
            parse_item(record, line=7, source="evals.jsonl")
        assert _problems(exc) == case["problems"]
        assert str(exc.value) == "\n".join(case["problems"])
    assert record == case["record"], "parse_item must not mutate its input"


def test_dataset_error_is_a_value_error_with_structured_problems() -> None:
    with pytest.raises(ValueError) as exc:
        parse_item({"question": "Q", "contexts": []}, line=3, source="x.jsonl")
    assert exc.value.problems == [  # type: ignore[attr-defined]
        Problem("x.jsonl", 3, "answer", "missing required field (also accepted: response, actual_output)")]


def test_parse_item_rejects_non_finite_scores() -> None:
    record = {"question": "Q", "answer": "A", "contexts": [{"text": "t", "score": float("nan")}]}
    with pytest.raises(DatasetError) as exc:
        parse_item(record, line=1, source="s.jsonl")
    assert _problems(exc) == ["s.jsonl:1: field 'contexts[0].score': expected a finite number, got nan"]


def test_parse_item_rejects_non_object() -> None:
    with pytest.raises(DatasetError) as exc:
        parse_item(["q", "a"], line=2, source="s.jsonl")  # type: ignore[arg-type]
    assert _problems(exc) == ["s.jsonl:2: expected a JSON object, got list"]


# ------------------------------------------------------------------------------------------
# JSONL files
# ------------------------------------------------------------------------------------------

CANONICAL_ITEMS = [
    EvalItem(
        id="q-17",
        question="What is the refund window on annual plans?",
        answer="Annual plans can be refunded within 30 days [p-4412].",
        contexts=(
            Passage("p-4412", "Annual plans renew automatically. Refunds are possible within 30 days of renewal.",
                    "billing/annual-plans.md", 0.83),
            Passage("p-9001", "Monthly plans are not refunded."),
        ),
        reference="30 days after renewal.",
        gold_context_ids=("p-4412",),
        answerable=True,
        line=1,
    ),
    # line 2 is blank: skipped, but it still counts, so the default id of this item is "3"
    EvalItem(
        id="3",
        question="Who founded the company?",
        answer="",
        contexts=(Passage("3#0", "The company was founded in 1999."), Passage("3#1", "Its headquarters are in Lyon.")),
        answerable=False,
        line=3,
    ),
    EvalItem(
        id="42",
        question="Which plan is cheapest?",
        answer="The starter plan.",
        contexts=(Passage("42#0", "The starter plan costs 5 EUR."), Passage("42#1", "The pro plan costs 20 EUR."),
                  Passage("7", "Plans are billed monthly.", None, 1.0)),
        gold_context_ids=(),
        line=4,
    ),
]


def test_load_canonical_jsonl() -> None:
    assert load_eval_set(CASES / "canonical.jsonl") == CANONICAL_ITEMS


@pytest.mark.parametrize("name", ["ragas.jsonl", "deepeval.jsonl"])
def test_ragas_and_deepeval_field_names(name: str) -> None:
    assert load_eval_set(CASES / name) == [EvalItem(
        id="q-17",
        question="What is the refund window on annual plans?",
        answer="Annual plans can be refunded within 30 days [p-4412].",
        contexts=(Passage("q-17#0", "Annual plans renew automatically."), Passage("q-17#1", "Refunds within 30 days.")),
        reference="30 days after renewal.",
        line=1,
    )]


def test_bad_lines_all_listed_in_file_order() -> None:
    path = CASES / "bad_lines.jsonl"
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    s = str(path)
    assert _problems(exc) == [
        f"{s}:2: field 'answer': missing required field (also accepted: response, actual_output)",
        f"{s}:3: field 'contexts': expected a list of strings or objects with 'text', got int",
        f"{s}:4: field 'id': duplicate id 'ok-1': also on line 1",
        f"{s}:5: not valid JSON: Expecting value at column 63",
        f"{s}:7: field 'answer': expected a string, got null",
        f"{s}:7: field 'contexts[0].text': missing required field (each passage needs 'text')",
        f"{s}:7: field 'contexts[0].score': expected a number or null, got string",
        f"{s}:8: expected a JSON object, got list",
    ]


def test_empty_file_and_blank_lines_only(tmp_path: Path) -> None:
    for name, content in [("empty.jsonl", ""), ("blank.jsonl", "\n   \n\t\n")]:
        path = tmp_path / name
        path.write_text(content, encoding="utf-8")
        with pytest.raises(DatasetError) as exc:
            load_eval_set(path)
        assert str(exc.value) == f"{path}: no items: the file is empty or has only blank lines"


def test_non_utf8_bytes_name_the_line_and_other_lines_still_checked(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    good = b'{"question": "Q", "answer": "A", "contexts": []}\n'
    path.write_bytes(good + '{"question": "Caf\u00e9?", "answer": "A", "contexts": []}\n'.encode("latin-1")
                     + b'{"question": "Q", "contexts": []}\n')
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    assert _problems(exc) == [
        f"{path}:2: not valid UTF-8: byte 0xe9 at byte offset 17 of the line; save the file as UTF-8",
        f"{path}:3: field 'answer': missing required field (also accepted: response, actual_output)",
    ]


def test_line_that_is_not_json_gives_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path / "e.jsonl", [
        '{"question": "Q", "answer": "A", "contexts": []}',
        '{"question": "Q", "answer": "A" "contexts": []}',  # comma missing before column 33
        "{'question': 'python dict'}",
        '{"question": "Q", "answer": "A", "contexts": []} trailing',
    ])
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    assert _problems(exc) == [
        f"{path}:2: not valid JSON: Expecting ',' delimiter at column 33",
        f"{path}:3: not valid JSON: Expecting property name enclosed in double quotes at column 2",
        f"{path}:4: not valid JSON: Extra data at column 50",
    ]


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", [
        '{"id": "a", "question": "Q", "answer": "A", "contexts": []}',
        '{"id": "b", "question": "Q", "answer": "A", "contexts": []}',
        '{"id": "a", "question": "Q2", "answer": "A2", "contexts": []}',
        '{"question": "default id 4", "answer": "A", "contexts": []}',
        '{"id": 4, "question": "explicit 4", "answer": "A", "contexts": []}',
    ])
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    assert _problems(exc) == [
        f"{path}:3: field 'id': duplicate id 'a': also on line 1",
        f"{path}:5: field 'id': duplicate id '4': also on line 4",
    ]


def test_five_megabyte_answer_loads(tmp_path: Path) -> None:
    answer = "The refund window is thirty days. " * (5 * 1024 * 1024 // 34 + 1)
    assert len(answer) > 5 * 1024 * 1024
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"id": "big", "question": "Q?", "answer": answer, "contexts": ["c"]}) + "\n",
                    encoding="utf-8")
    [item] = load_eval_set(path, limits=None)  # the reader itself streams it...
    assert item.answer == answer
    assert item.contexts == (Passage("big#0", "c"),)
    with pytest.raises(DatasetError) as exc:  # ...but by default it is over the documented answer limit
        load_eval_set(path)
    assert f"{path}:1: field 'answer': {len(answer):,} characters, above the limit of 20,000" in str(exc.value)


def test_input_limits_name_line_and_field_and_claims_past_the_cap_are_noted(tmp_path: Path) -> None:
    from workbench.scoring.limits import InputLimits, cap_claims

    rows = [{"id": "ok", "question": "Q?", "answer": "A.", "contexts": ["c"]},
            {"id": "many", "question": "Q?", "answer": "A.", "contexts": ["c"] * 201},
            {"id": "long", "question": "Q?", "answer": "A.", "contexts": ["c", "x" * 20_001]}]
    path = tmp_path / "limits.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    text = str(exc.value)
    assert f"{path}:2: field 'contexts': 201 passages, above the limit of 200" in text
    assert f"{path}:3: field 'contexts[1]': 20,001 characters" in text and f"{path}:1" not in text
    assert len(load_eval_set(path, limits=InputLimits(max_passages=300, max_passage_chars=30_000))) == 3
    notes: list[str] = []
    assert cap_claims([f"c{i}" for i in range(70)], "answer", notes) == [f"c{i}" for i in range(64)]
    assert notes == ["answer: 70 claims, only the first 64 verified (input limit max_claims)"]
    assert cap_claims(["a"], "answer", notes) == ["a"] and cap_claims(None, "answer", notes) is None and len(notes) == 1


def test_missing_file_directory_and_unknown_extension(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(DatasetError) as exc:
        load_eval_set(missing)
    assert str(exc.value) == f"{missing}: file not found"

    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    with pytest.raises(DatasetError) as exc:
        load_eval_set(folder)
    assert str(exc.value) == f"{folder}: is a directory, expected a file"

    for name in ["evals.txt", "evals", "evals.parquet"]:
        path = tmp_path / name
        path.write_text('{"question": "Q", "answer": "A", "contexts": []}\n', encoding="utf-8")
        with pytest.raises(DatasetError) as exc:
            load_eval_set(path)
        shown = f"'{path.suffix}'" if path.suffix else "no extension"
        assert str(exc.value) == f"{path}: unknown file type ({shown}): expected .jsonl, .json, .ndjson, .csv"


def test_suffix_is_case_insensitive_and_json_means_json_lines(tmp_path: Path) -> None:
    for name in ["E.JSONL", "e.json", "e.ndjson"]:
        path = _write(tmp_path / name, ['{"question": "Q", "answer": "A", "contexts": ["c"]}'])
        assert [i.id for i in load_eval_set(path)] == ["1"]


def test_json_array_file_gets_a_hint(tmp_path: Path) -> None:
    hint = "this looks like a JSON array, but the loader expects JSON Lines (one object per line)"
    records = [{"question": "Q", "answer": "A", "contexts": []}]
    path = tmp_path / "array.json"
    path.write_text(json.dumps(records, indent=1), encoding="utf-8")  # first line is "["
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    first = exc.value.problems[0]
    assert (first.line, first.field) == (1, None)
    assert first.message == f"not valid JSON: Expecting value at column 2; {hint}"

    path.write_text("\n" + json.dumps(records), encoding="utf-8")  # the whole array on line 2
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    assert _problems(exc) == [f"{path}:2: expected a JSON object, got list; {hint}"]


def test_many_bad_lines_are_all_kept_and_the_message_is_capped(tmp_path: Path) -> None:
    n_bad = MAX_PROBLEMS_SHOWN + 10
    path = _write(tmp_path / "many.jsonl", ['{"question": "Q", "contexts": []}'] * n_bad)
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    assert [p.line for p in exc.value.problems] == list(range(1, n_bad + 1))
    lines = str(exc.value).splitlines()
    assert len(lines) == MAX_PROBLEMS_SHOWN + 1
    assert lines[0].startswith(f"{path}:1: field 'answer': missing required field")
    assert lines[-1] == "... and 10 more problems"


def test_bom_crlf_and_duplicate_keys(tmp_path: Path) -> None:
    path = tmp_path / "win.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"question": "Q", "answer": "A", "contexts": ["c"]}\r\n'
                     b'{"question": "Q", "answer": "A", "answer": "B", "contexts": []}\r\n')
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    assert _problems(exc) == [f"{path}:2: not valid JSON: key 'answer' appears twice in one object"]

    path.write_bytes(b'\xef\xbb\xbf{"question": "Q", "answer": "A", "contexts": ["c"]}\r\n')
    assert load_eval_set(path) == [EvalItem("1", "Q", "A", (Passage("1#0", "c"),), line=1)]


def test_hostile_json_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = _write(tmp_path / "h.jsonl", [
        "[" * 100_000 + "]" * 100_000,
        '{"question": "Q", "answer": "A", "contexts": [], "n": ' + "9" * 5000 + "}",
        '{"question": "Q", "answer": "A", "contexts": [{"text": "t", "score": NaN}]}',
        '{"question": "Q", "answer": "A", "contexts": [{"text": "t", "score": Infinity}]}',
    ])
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    problems = exc.value.problems
    assert [(p.line, p.field) for p in problems] == [(1, None), (2, None), (3, "contexts[0].score"),
                                                     (4, "contexts[0].score")]
    assert problems[0].message == "not valid JSON: nested too deeply"
    assert problems[1].message.startswith("not valid JSON: Exceeds the limit")
    assert problems[2].message == "expected a finite number, got nan"
    assert problems[3].message == "expected a finite number, got inf"


def test_untrusted_values_are_escaped_and_truncated_in_messages(tmp_path: Path) -> None:
    evil = "\x1b[31m" + "x" * 500
    path = _write(tmp_path / "t.jsonl", [
        json.dumps({"id": evil, "question": "Q", "answer": "A", "contexts": []}),
        json.dumps({"id": evil, "question": "Q", "answer": "A", "contexts": []}),
    ])
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    [message] = _problems(exc)
    assert "\x1b" not in message and "\\x1b" in message
    assert len(message) < len(str(path)) + 120


def test_bad_citation_pattern_fails_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "never-read.jsonl"  # does not exist: the pattern is checked first
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path, citation_pattern=r"\[([^\]]+")
    [problem] = exc.value.problems
    assert (problem.file, problem.line, problem.field) == (str(path), None, "citation_pattern")
    assert problem.message.startswith("not a valid regular expression: missing )")
    ok = _write(tmp_path / "ok.jsonl", ['{"question": "Q", "answer": "A (1)", "contexts": []}'])
    assert len(load_eval_set(ok, citation_pattern=r"\((\d+)\)")) == 1


# ------------------------------------------------------------------------------------------
# CSV files
# ------------------------------------------------------------------------------------------


def test_load_canonical_csv() -> None:
    # Header on line 1 (with a UTF-8 BOM), blank line 4 skipped, the id-42 row spans lines 5-6.
    assert load_eval_set(CASES / "canonical.csv") == [
        dataclasses.replace(CANONICAL_ITEMS[0], line=2),
        dataclasses.replace(CANONICAL_ITEMS[1], line=3),
        EvalItem(id="42", question="Which plan is cheapest?", answer="The starter plan.\nIt costs 5 EUR.",
                 contexts=(Passage("42#0", "The starter plan costs 5 EUR."),), gold_context_ids=(), line=5),
        EvalItem(id="q-99", question="Is this answerable?", answer="No.", contexts=(), line=7),
    ]


def test_bad_csv_cells_all_listed() -> None:
    path = CASES / "bad.csv"
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    s = str(path)
    assert _problems(exc) == [
        f"{s}:2: field 'retrieved_contexts': cell is not valid JSON: Expecting value at column 2 "
        "(single quotes look like a Python repr; the cell must hold JSON, with double quotes)",
        f"{s}:3: field 'retrieved_contexts': cell is not valid JSON: Expecting value at column 1 "
        '(the cell must hold a JSON list, e.g. ["first passage", "second passage"])',
        f"{s}:4: field 'answerable': expected true/false/1/0/yes/no or a blank cell, got 'maybe'",
        f"{s}:5: field 'retrieved_contexts': blank cell: expected a JSON list of strings or objects with 'text' "
        "(write [] for no contexts)",
        f"{s}:6: expected 5 columns (as in the header on line 1), got 6",
    ]


def _csv_text(rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def test_csv_answerable_words_and_trailing_empty_cells(tmp_path: Path) -> None:
    words = ["true", "False", "1", "0", "YES", "no", " yes ", ""]
    rows = [["question", "answer", "contexts", "answerable"]]
    rows += [[f"Q{i}", "A", "[]", w] for i, w in enumerate(words)]
    text = _csv_text(rows).replace("Q0,A,[],true", "Q0,A,[],true,,")  # spreadsheet-style empty columns
    path = tmp_path / "w.csv"
    path.write_text(text, encoding="utf-8")
    items = load_eval_set(path)
    assert [i.answerable for i in items] == [True, False, True, False, True, False, True, True]
    assert [i.id for i in items] == ["2", "3", "4", "5", "6", "7", "8", "9"]


def test_csv_header_problems_reported_once(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("id,question,id,notes\n1,Q,1,x\n2,Q,2,y\n", encoding="utf-8")
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    assert _problems(exc) == [
        f"{path}:1: field 'id': column appears twice in the header",
        f"{path}:1: field 'answer': missing required column (accepted names: answer, response, actual_output)",
        f"{path}:1: field 'contexts': missing required column (accepted names: contexts, retrieved_contexts, "
        "retrieval_context)",
    ]


def test_csv_header_only_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("question,answer,contexts\n\n", encoding="utf-8")
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    assert str(exc.value) == f"{path}: no items: the file is empty or has only blank lines and a header"


def test_csv_unclosed_quote_stops_with_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text('question,answer,contexts\nQ,A,[]\nQ,"unclosed,[]\nQ,A,[]\n', encoding="utf-8")
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    [problem] = exc.value.problems
    assert (problem.line, problem.field) == (3, None)
    assert problem.message.startswith("CSV syntax error in the record starting on this line:")
    assert problem.message.endswith("(an unclosed quote?); stopped reading here")


def test_csv_non_utf8_row_is_reported_and_others_checked(tmp_path: Path) -> None:
    path = tmp_path / "l.csv"
    path.write_bytes(b"question,answer,contexts\n" + "Caf\u00e9?,A,[]\n".encode("latin-1") + b"Q,A,5\nQ,A,[]\n")
    with pytest.raises(DatasetError) as exc:
        load_eval_set(path)
    assert _problems(exc) == [
        f"{path}:2: not valid UTF-8: byte 0xe9 at byte offset 3 of the line; save the file as UTF-8",
        f"{path}:3: field 'contexts': expected a list of strings or objects with 'text', got int",
    ]


def test_csv_five_megabyte_cell(tmp_path: Path) -> None:
    answer = "x" * (5 * 1024 * 1024 + 7)
    path = tmp_path / "big.csv"
    path.write_text(_csv_text([["question", "answer", "contexts"], ["Q", answer, '["c"]']]), encoding="utf-8")
    [item] = load_eval_set(path, limits=None)  # the CSV reader takes the cell; the answer limit is tested elsewhere
    assert item.answer == answer


def test_csv_deepeval_columns_and_unknown_columns(tmp_path: Path) -> None:
    path = tmp_path / "de.csv"
    path.write_text(_csv_text([
        ["input", "actual_output", "retrieval_context", "expected_output", "cost"],
        ["Q?", "A.", '["c1", {"text": "c2", "id": "p"}]', "", "0.1"],
        ["Q2?", "A2.", "[]", "R2", ""],
    ]), encoding="utf-8")
    assert load_eval_set(path) == [
        EvalItem("2", "Q?", "A.", (Passage("2#0", "c1"), Passage("p", "c2")), reference=None, line=2),
        EvalItem("3", "Q2?", "A2.", (), reference="R2", line=3),
    ]


# ------------------------------------------------------------------------------------------
# Corpus
# ------------------------------------------------------------------------------------------


def test_load_corpus(tmp_path: Path) -> None:
    path = _write(tmp_path / "corpus.jsonl", [
        '{"id": "p-1", "text": "One.", "source": "a.md"}',
        "",
        '{"id": 2, "text": "Two.", "extra": true}',
    ])
    assert load_corpus(path) == {"p-1": Passage("p-1", "One.", "a.md"), "2": Passage("2", "Two.")}


def test_corpus_problems(tmp_path: Path) -> None:
    path = _write(tmp_path / "corpus.jsonl", [
        '{"id": "p-1", "text": "One."}',
        '{"text": "no id"}',
        '{"id": "p-1", "text": "again"}',
        '{"id": "p-3", "text": 3, "source": 1}',
        "nope",
    ])
    with pytest.raises(DatasetError) as exc:
        load_corpus(path)
    assert _problems(exc) == [
        f"{path}:2: field 'id': missing required field",
        f"{path}:3: field 'id': duplicate id 'p-1': also on line 1",
        f"{path}:4: field 'text': expected a string, got int",
        f"{path}:4: field 'source': expected a string or null, got int",
        f"{path}:5: not valid JSON: Expecting value at column 1",
    ]


def test_corpus_empty_missing_and_csv(tmp_path: Path) -> None:
    empty = tmp_path / "c.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="no passages"):
        load_corpus(empty)
    with pytest.raises(DatasetError, match="file not found"):
        load_corpus(tmp_path / "absent.jsonl")
    with pytest.raises(DatasetError, match=r"unknown file type \('\.csv'\): expected \.jsonl, \.json, \.ndjson$"):
        load_corpus(tmp_path / "c.csv")


def test_parse_passage_is_pure() -> None:
    record = {"id": "p", "text": "t", "source": None}
    assert parse_passage(record, line=1, source="c.jsonl") == Passage("p", "t")
    assert record == {"id": "p", "text": "t", "source": None}


# ------------------------------------------------------------------------------------------
# Round trips (Hypothesis)
# ------------------------------------------------------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
_nonblank = _text.filter(lambda s: s.strip() != "")
_score = st.none() | st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@st.composite
def _items(draw: st.DrawFn) -> list[EvalItem]:
    n = draw(st.integers(min_value=1, max_value=4))
    ids = draw(st.lists(_nonblank, min_size=n, max_size=n, unique=True))
    items = []
    for item_id in ids:
        passage_ids = draw(st.lists(_nonblank, max_size=3, unique=True))
        contexts = tuple(Passage(pid, draw(_text), draw(st.none() | _text), draw(_score)) for pid in passage_ids)
        items.append(EvalItem(
            id=item_id,
            question=draw(_nonblank),
            answer=draw(_text),
            contexts=contexts,
            reference=draw(st.none() | _nonblank),
            gold_context_ids=draw(st.none() | st.lists(_nonblank, max_size=3).map(tuple)),
            answerable=draw(st.booleans()),
        ))
    return items


def _record(item: EvalItem) -> dict:
    record = dataclasses.asdict(item)
    del record["line"]
    return record


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=_items())
def test_jsonl_round_trip(tmp_path: Path, items: list[EvalItem]) -> None:
    path = tmp_path / "rt.jsonl"
    path.write_text("".join(json.dumps(_record(i), ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    loaded = load_eval_set(path)
    assert [dataclasses.replace(i, line=None) for i in loaded] == items
    assert [i.line for i in loaded] == list(range(1, len(items) + 1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=_items())
def test_csv_round_trip(tmp_path: Path, items: list[EvalItem]) -> None:
    header = ["id", "question", "answer", "contexts", "reference", "gold_context_ids", "answerable"]
    rows = [header]
    for item in items:
        record = _record(item)
        rows.append([
            item.id, item.question, item.answer, json.dumps(record["contexts"], ensure_ascii=False),
            item.reference or "", "" if item.gold_context_ids is None else json.dumps(list(item.gold_context_ids)),
            "true" if item.answerable else "false",
        ])
    path = tmp_path / "rt.csv"
    # csv's default "\r\n" terminator: with "\n" the writer leaves a bare "\r" in a cell unquoted
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8", newline="")
    loaded = load_eval_set(path)
    assert [dataclasses.replace(i, line=None) for i in loaded] == items
