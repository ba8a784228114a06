"""Units are versions of text (migration 4), and leases that keep concurrent annotators apart."""
from __future__ import annotations

import threading

import pytest
import sqlite_utils

from workbench import store
from workbench.store.migrations import MIGRATIONS
from workbench.types import EvalItem, Label, Passage, Unit

CS = "claim_support"


def item(item_id: str = "q1", answer: str = "Paris is in France.", passage: str = "Paris is the capital.") -> EvalItem:
    return EvalItem(item_id, f"Question {item_id}?", answer, (Passage("p1", passage),))


def claim(item_id: str, index: int, text: str = "Paris is in France") -> Unit:
    return Unit(Unit.make_id(CS, item_id, index), CS, item_id, index, text)


def relevance(item_id: str, answer: str) -> Unit:
    return Unit(Unit.make_id("answer_relevance", item_id), "answer_relevance", item_id, None, answer)


@pytest.fixture
def db(tmp_path):
    database = store.open_db(tmp_path / "store.db")
    yield database
    database.close()


# ---------------------------------------------------------------- migration 4


def test_blank_database_gets_versions_leases_and_indexes(tmp_path):
    db = store.open_db(tmp_path / "blank.db")
    assert store.applied_migrations(db) == [n for n, _, _ in MIGRATIONS]
    assert {"text_hash", "stale_at"} <= set(db["units"].columns_dict)
    assert db["leases"].exists()
    indexes = {row["name"] for row in db.query("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"units_version", "units_live", "labels_live", "leases_annotator"} <= indexes


def test_upgrade_from_schema_3_hashes_existing_units_and_keeps_labels(tmp_path):
    path = tmp_path / "v3.db"
    old = sqlite_utils.Database(path)
    assert store.migrate(old, target=3) == [1, 2, 3]
    old.execute("INSERT INTO items (id, seq, question, answer, contexts, answerable, created_at, updated_at) "
                "VALUES ('q1', 1, 'Question q1?', 'Paris is in France.', '[{\"id\": \"p1\", \"text\": "
                "\"Paris is the capital.\"}]', 1, 'x', 'x')")
    old.execute("INSERT INTO units (unit_id, task, item_id, claim_index, text, created_at) "
                "VALUES ('claim_support:q1:0', 'claim_support', 'q1', 0, 'Paris is in France', 'x')")
    old.execute("INSERT INTO labels (unit_id, task, annotator, value, created_at) "
                "VALUES ('claim_support:q1:0', 'claim_support', 'ann', 'supported', 'x')")
    old.conn.commit()
    old.close()
    db = store.open_db(path)
    assert store.applied_migrations(db) == [1, 2, 3, 4]
    unit = store.get_unit(db, "claim_support:q1:0")
    assert unit.text_hash == store.unit_text_hash(CS, item(), "Paris is in France")
    assert [label.value for label in store.current_labels(db)] == ["supported"]
    # the same text stored again is recognised as the same version: nothing new, nothing stale
    assert store.store_units(db, [claim("q1", 0)])["unchanged"] == 1
    assert store.store_items(db, [item()])["unchanged"] == 1
    assert not store.is_stale(db, "claim_support:q1:0")


# ---------------------------------------------------------------- the hash


def test_hash_counts_only_the_text_a_task_shows():
    base = store.text_hash("answer_relevance", "Q?", "A.", passages=["p"])
    assert base == store.text_hash("answer_relevance", "Q?", "A.", passages=["other passage"])  # not shown
    assert base != store.text_hash("answer_relevance", "Q?", "A. ")  # one character differs
    assert store.text_hash(CS, "Q?", "c", answer="A", passages=["p"]) != store.text_hash(
        CS, "Q?", "c", answer="A", passages=["p2"])
    assert len(base) == 16 and int(base, 16) >= 0


# ---------------------------------------------------------------- changed text


def test_changed_answer_makes_new_units_and_old_labels_stay_on_old_text(db):
    store.add_items(db, [item()])
    store.add_units(db, [claim("q1", 0), relevance("q1", "Paris is in France.")])
    store.append_labels(db, [Label("claim_support:q1:0", CS, "ann", "supported"),
                             Label("answer_relevance:q1", "answer_relevance", "ann", "relevant")])
    counts = store.store_items(db, [item(answer="Paris is in Italy.")])
    assert counts["changed"] == 1
    assert sorted(counts["stale_units"]) == ["answer_relevance:q1", "claim_support:q1:0"]
    assert store.current_labels(db) == []  # never counted for the new text
    assert len(store.current_labels(db, include_stale=True)) == 2  # but kept
    assert store.progress(db, "ann")["labelled_by_annotator"] == 0
    assert store.items_with_claim_units(db) == set()  # the new answer gets decomposed again
    result = store.store_units(db, [claim("q1", 0, "Paris is in Italy"), relevance("q1", "Paris is in Italy.")])
    assert result["new"] == 2
    live = {u.task: u for u in store.list_units(db)}
    assert live[CS].unit_id.startswith("claim_support:q1:0@") and live[CS].text == "Paris is in Italy"
    assert store.next_unit_for(db, "ann", task=CS).unit_id == live[CS].unit_id  # the new text needs a label
    with pytest.raises(store.LabelError, match="stale"):  # a label on the old text is refused now
        store.append_labels(db, [Label("claim_support:q1:0", CS, "ann", "unsupported")])
    rows = store.label_log(db)
    assert [(r["unit_id"], r["stale"]) for r in rows] == [("claim_support:q1:0", 1), ("answer_relevance:q1", 1)]


def test_text_changed_back_revives_the_old_version_and_its_labels(db):
    store.add_items(db, [item()])
    store.add_units(db, [claim("q1", 0)])
    store.append_labels(db, [Label("claim_support:q1:0", CS, "ann", "supported")])
    store.store_units(db, [claim("q1", 0, "other claim")])
    assert store.current_labels(db) == []
    result = store.store_units(db, [claim("q1", 0)])
    assert result["revived"] == 1 and not store.is_stale(db, "claim_support:q1:0")
    assert [label.unit_id for label in store.current_labels(db)] == ["claim_support:q1:0"]
    assert len(store.list_units(db)) == 1 and len(store.list_units(db, include_stale=True)) == 2


def test_passage_change_leaves_relevance_units_alone(db):
    store.add_items(db, [item()])
    store.add_units(db, [claim("q1", 0), relevance("q1", "Paris is in France.")])
    counts = store.store_items(db, [item(passage="Lyon is a city.")])
    assert counts["stale_units"] == ["claim_support:q1:0"]  # relevance does not show the passages


# ---------------------------------------------------------------- stores that exist


def test_open_without_create_refuses_a_missing_file(tmp_path):
    missing = tmp_path / "typo.db"
    with pytest.raises(store.StoreNotFoundError, match="no label store at .*typo.db"):
        store.open_db(missing, create=False)
    assert not missing.exists()


# ---------------------------------------------------------------- leases


def _stock(db, n: int) -> None:
    store.add_items(db, [item(f"q{i:03d}") for i in range(n)])
    store.add_units(db, [claim(f"q{i:03d}", 0, f"claim {i}") for i in range(n)])


def test_lease_keeps_a_unit_from_others_until_labelled_or_expired(db):
    _stock(db, 3)
    a = store.next_unit_for(db, "a", task=CS, lease_seconds=60, now=1000.0)
    assert store.next_unit_for(db, "a", task=CS, lease_seconds=60, now=1001.0) == a  # re-asking: same unit
    b = store.next_unit_for(db, "b", task=CS, lease_seconds=60, now=1002.0)
    assert a.unit_id == "claim_support:q000:0" and b.unit_id == "claim_support:q001:0"
    # with overlap 2 the leased unit is still free for a second person
    assert store.next_unit_for(db, "c", task=CS, overlap=2, now=1002.0) == a
    # a's lease expires: the unit returns to the queue
    assert store.next_unit_for(db, "c", task=CS, lease_seconds=60, now=1061.0) == a
    store.append_labels(db, [Label(a.unit_id, CS, "c", "supported")])  # the label ends c's lease
    assert all(lease["annotator"] != "c" for lease in store.active_leases(db, now=1061.0))
    assert store.release_lease(db, "b") == 1


def test_concurrent_annotators_with_overlap_1_get_disjoint_units(tmp_path):
    path = tmp_path / "store.db"
    db = store.open_db(path)
    _stock(db, 60)
    db.close()
    taken: dict[str, list[str]] = {}
    barrier = threading.Barrier(4)

    def annotate(name: str) -> None:
        own = store.open_db(path)  # one connection per thread, as the app does
        barrier.wait()
        mine = taken.setdefault(name, [])
        for _ in range(10):
            unit = store.next_unit_for(own, name, task=CS, lease_seconds=600)
            mine.append(unit.unit_id)
            store.append_labels(own, [Label(unit.unit_id, CS, name, "supported")])
        own.close()

    threads = [threading.Thread(target=annotate, args=(f"ann{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [unit for units in taken.values() for unit in units]
    assert len(every) == 40 and len(set(every)) == 40  # no unit handed to two people


def test_item_text_key_tells_apart_every_text_a_label_depends_on():
    # score --db counts a stored label for a scored item only when these keys are equal
    base = item()
    assert store.item_text_key(base) == store.item_text_key(item())
    assert store.item_text_key(base) != store.item_text_key(item(passage="Paris is the capital!"))
    assert store.item_text_key(base) != store.item_text_key(item(answer="Paris is in France"))
