"""scripts/add_author_rows.py: the split rule new rows get, and how a malformed author file is refused."""
from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest

from workbench.jsonl import read_jsonl

ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location("add_author_rows", ROOT / "scripts" / "add_author_rows.py")
add_author_rows = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(add_author_rows)


def test_split_is_the_data_files_rule():
    # Every bundled row's split is what the script would give its id.
    for row in read_jsonl(ROOT / "data" / "rag_abstention.jsonl")[::7]:
        assert add_author_rows.split_for(row["id"], "rag") == row["split"], row["id"]
    assert add_author_rows.split_for("rag-indep-9999", "independent") == "test"
    expected = "test" if hashlib.sha256(b"rag-abst-9999").digest()[0] % 3 == 0 else "fit"
    assert add_author_rows.split_for("rag-abst-9999", "rag") == expected


def test_author_rows_are_checked(tmp_path):
    good = '{"answer": "No idea.", "label": "refused", "kind": "dont_know", "domain": "pets"}\n'
    path = tmp_path / "author.jsonl"
    path.write_text(good + "\n", encoding="utf-8")
    assert add_author_rows.author_rows(path)[0]["answer"] == "No idea."
    for line, message in (
            ("{not json", ":2: not valid JSON"),
            ('{"answer": "", "label": "refused", "kind": "k", "domain": "d"}', ":2: field 'answer'"),
            ('{"answer": "x", "label": "declined", "kind": "k", "domain": "d"}', ":2: field 'label'"),
            ('{"answer": "x", "label": "answered", "kind": "k"}', ":2: field 'domain'")):
        path.write_text(good + line + "\n", encoding="utf-8")
        with pytest.raises(ValueError, match=message):
            add_author_rows.author_rows(path)


_PROMOTE_SPEC = importlib.util.spec_from_file_location(
    "promote_independent_authors", ROOT / "scripts" / "promote_independent_authors.py")
promote = importlib.util.module_from_spec(_PROMOTE_SPEC)
_PROMOTE_SPEC.loader.exec_module(promote)


def test_promoting_gives_only_the_named_authors_the_hash_split():
    rows = [{"id": f"rag-indep-{n:04d}", "answer": f"a{n}", "split": "test", "author": author}
            for n, author in enumerate(["author-1"] * 30 + ["author-2"] * 30, start=1)]
    out = promote.promoted(rows, ["author-1"])
    assert [r["id"] for r in out] == [r["id"] for r in rows]  # order and ids kept
    for old, new in zip(rows, out):
        if old["author"] == "author-2":
            assert new == old  # not named: still unseen, every row test
        else:
            assert new == {**old, "split": add_author_rows.split_for(old["id"], "rag")}
    assert {r["split"] for r in out if r["author"] == "author-1"} == {"fit", "test"}
    with pytest.raises(ValueError, match="'author-9': no row"):
        promote.promoted(rows, ["author-9"])
    with pytest.raises(ValueError, match="'author-1': already promoted"):
        promote.promoted(out, ["author-1"])


_SCORE_SPEC = importlib.util.spec_from_file_location("score_refusal_file", ROOT / "scripts" / "score_refusal_file.py")
score_refusal_file = importlib.util.module_from_spec(_SCORE_SPEC)
_SCORE_SPEC.loader.exec_module(score_refusal_file)


def test_author_interval_resamples_authors_not_answers():
    # Ten authors of 100 answers each: five catch 99, five catch 81 (overall 90%). Answers of one
    # author are not independent, so the interval must be about as wide as ten draws of authors
    # allow (a per-answer binomial interval would be about 88-92%).
    outcomes = [(f"a{a}", i < (99 if a < 5 else 81)) for a in range(10) for i in range(100)]
    low, high = score_refusal_file.author_interval(outcomes)
    assert low is not None and high is not None
    assert low < 0.87 and high > 0.93 and low < 0.90 < high
    assert score_refusal_file.author_interval(outcomes) == (low, high)  # seeded
    # authors that all agree: no spread to resample
    assert score_refusal_file.author_interval([(f"a{a}", True) for a in range(5) for _ in range(10)]) == (1.0, 1.0)
    assert score_refusal_file.author_interval([]) == (None, None)
