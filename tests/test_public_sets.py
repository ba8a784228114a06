"""Bundled data loaders: counts match data/README.md, ids and labels line up, demo set shape."""
from __future__ import annotations

from collections import Counter

import pytest

from workbench.demo import public_sets
from workbench.scoring.dataset import load_corpus


def test_data_dir_is_repo_data_folder():
    assert public_sets.DATA_DIR.name == "data"
    assert (public_sets.DATA_DIR / "NOTICE").is_file()
    assert (public_sets.DATA_DIR / "licenses" / "wice-LICENSE.md").is_file()


def test_begin_items_and_labels():
    items = public_sets.begin_items()
    assert len(items) == 846
    assert items[0].id == "begin-wow-0001"
    assert Counter(i.id.split("-")[1] for i in items) == {"wow": 430, "cmu": 416}
    first = items[0]
    assert len(first.contexts) == 1 and first.contexts[0].id == "begin-wow-0001#0"
    labels = public_sets.begin_labels()
    assert len(labels) == 767
    assert Counter(r["value"] for r in labels) == {"faithful": 239, "unfaithful": 528}
    assert all(r["task"] == "answer_faithfulness" and r["claim_index"] is None for r in labels)
    ids = {i.id for i in items}
    assert {r["item_id"] for r in labels} <= ids
    assert len(ids - {r["item_id"] for r in labels}) == 79  # Generic responses: item kept, no label


def test_wice_items_labels_units():
    items = public_sets.wice_items()
    assert len(items) == 349
    labels = public_sets.wice_labels()
    assert Counter(r["raw_label"] for r in labels) == {"supported": 115, "partially_supported": 191,
                                                       "not_supported": 43}
    assert Counter(r["value"] for r in labels) == {"supported": 115, "unsupported": 234}
    assert all(r["claim_index"] == 0 and r["task"] == "claim_support" for r in labels)
    by_id = {i.id: i for i in items}
    item = by_id["wice-dev02986"]
    assert item.contexts[0].id == "wice-dev02986#0"
    assert set(item.gold_context_ids) <= {p.id for p in item.contexts}
    assert any("Publisher and Editorial Director" in p.text for p in item.contexts)
    units = public_sets.wice_claim_units()
    assert len(units) == 349
    assert all(by_id[u["item_id"]].answer == u["text"] for u in units)
    assert all("[" not in i.answer for i in items)  # no fake citation markers


def test_alce_and_xstest_rows():
    alce = public_sets.alce_rows()
    assert len(alce) == 400
    assert Counter(r["system"] for r in alce).most_common()[-1][1] == 100
    assert {r["utility"] for r in alce} == {1, 2, 3, 4, 5}
    assert sum(r["utility"] >= 4 for r in alce) == 274
    xs = public_sets.xstest_rows()
    assert len(xs) == 1350
    assert Counter((r["model"], r["final_label"]) for r in xs)[("gpt4", "2_full_refusal")] == 211
    assert Counter(r["model"] for r in xs) == {"gpt4": 450, "llama2new": 450, "mistralinstruct": 450}
    assert sum(r["annotation_1"] == r["annotation_2"] for r in xs) == 1313


def test_demo_items_and_corpus():
    items = public_sets.demo_items()
    assert [i.id for i in items] == [f"q-{n:02d}" for n in range(1, 14)]
    assert sum(not i.answerable for i in items) == 4
    corpus = load_corpus(public_sets.demo_corpus_path())
    assert len(corpus) == 16
    for item in items:  # retrieved passages are copies of corpus passages
        for passage in item.contexts:
            assert corpus[passage.id].text == passage.text
    q04 = next(i for i in items if i.id == "q-04")
    assert "p-4412" in corpus and "p-4412" not in {p.id for p in q04.contexts}
    assert "[p-7799]" in next(i for i in items if i.id == "q-05").answer and "p-7799" not in corpus


def test_explicit_paths_and_missing_file(tmp_path):
    path = public_sets.data_path("demo_rag.jsonl")
    assert len(public_sets.demo_items(path)) == 13
    with pytest.raises(FileNotFoundError, match="begin_eval.jsonl"):
        public_sets.begin_items(data_dir=tmp_path)


def test_bad_label_value_is_named(tmp_path):
    bad = tmp_path / "labels.jsonl"
    bad.write_text('{"task": "claim_support", "item_id": "x", "claim_index": 0, "annotator": "a", "value": "maybe"}\n')
    with pytest.raises(ValueError, match=r"labels\.jsonl: row 1: field 'value'"):
        public_sets.wice_labels(bad)
