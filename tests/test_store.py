"""Label store: migrations, append-only labels, undo, concurrency, next-unit ordering, judgments."""
from __future__ import annotations

import multiprocessing
import sqlite3
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench import store
from workbench.stats.active import priority_order
from workbench.store.migrations import LATEST, MIGRATIONS
from workbench.types import EvalItem, Judgment, Label, Passage, Unit

CS = "claim_support"


def make_item(item_id: str, answer: str = "Paris is in France.") -> EvalItem:
    return EvalItem(
        id=item_id,
        question=f"Question {item_id}?",
        answer=answer,
        contexts=(Passage("p1", "Paris is the capital of France.", "geo.md", 0.9), Passage("p2", "Other.")),
        reference="ref",
        gold_context_ids=("p1",),
        answerable=True,
        line=3,
    )


def claim(item_id: str, index: int, text: str = "a claim") -> Unit:
    return Unit(Unit.make_id(CS, item_id, index), CS, item_id, index, text)


def answer_unit(task: str, item_id: str) -> Unit:
    return Unit(Unit.make_id(task, item_id), task, item_id, None, "answer")


@pytest.fixture
def db(tmp_path):
    database = store.open_db(tmp_path / "store.db")
    yield database
    database.close()


@pytest.fixture
def seeded(db):
    """Three items with three claims each (9 claim units), inserted in order q1, q2, q3."""
    store.add_items(db, [make_item(f"q{i}") for i in (1, 2, 3)])
    store.add_units(db, [claim(f"q{i}", c) for i in (1, 2, 3) for c in range(3)])
    return db


# ---------------------------------------------------------------- migrations and connection


def test_migrations_from_blank_and_idempotent_reopen(tmp_path):
    path = tmp_path / "nested" / "dir" / "store.db"  # parent folders are created
    db = store.open_db(path)
    assert store.applied_migrations(db) == [n for n, _, _ in MIGRATIONS] == [1, 2, 3, 4]
    assert {"items", "units", "labels", "judgments", "runs", "_migrations"} <= set(db.table_names())
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000
    store.add_items(db, [make_item("q1")])
    db.close()
    again = store.open_db(path)
    assert store.migrate(again) == []  # nothing left to apply
    assert db_count(again, "_migrations") == LATEST
    assert store.get_item(again, "q1") == make_item("q1")  # data survives the re-open


def test_upgrade_from_an_older_schema_keeps_data(tmp_path):
    import sqlite_utils

    path = tmp_path / "old.db"
    old = sqlite_utils.Database(path)
    assert store.migrate(old, target=1) == [1]
    old.execute(
        "INSERT INTO items (id, seq, question, answer, contexts, answerable, created_at, updated_at) "
        "VALUES ('q1', 1, 'Q', 'A', '[]', 1, 'x', 'x')"
    )
    old.close()
    db = store.open_db(path)
    assert store.applied_migrations(db) == [1, 2, 3, 4]
    assert store.get_item(db, "q1").answer == "A"


def test_database_from_a_newer_workbench_is_refused(tmp_path):
    path = tmp_path / "new.db"
    db = store.open_db(path)
    db.execute("INSERT INTO _migrations (id, name, applied_at) VALUES (99, 'future', 'x')")
    db.close()
    with pytest.raises(store.StoreError, match=r"\[99\]"):
        store.open_db(path)


def test_opening_a_current_store_and_reading_take_no_write_lock(seeded, tmp_path):
    ids = [u.unit_id for u in store.list_units(seeded)]
    store.add_judgments(seeded, [Judgment(ids[1], CS, "j1", "supported", 0.5, quote="Paris"),
                                 Judgment(ids[1], CS, "j2", "unsupported", 0.4)])
    label(seeded, ids[0], "ann")
    holder = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process is writing
    try:
        db = store.open_db(tmp_path / "store.db", create=False)
        db.conn.execute("PRAGMA busy_timeout = 0")  # any wait for the write lock now fails at once
        assert store.migrate(db) == [] and store.applied_migrations(db) == [1, 2, 3, 4]
        assert [i.id for i in store.list_items(db)] == ["q1", "q2", "q3"] and store.get_item(db, "q1") is not None
        assert len(store.list_units(db)) == 9 and store.get_unit(db, ids[0]) is not None
        assert [(l.unit_id, l.annotator) for l in store.current_labels(db)] == [(ids[0], "ann")]
        assert len(store.label_log(db)) == len(store.label_history(db, ids[0])) == 1
        assert store.progress(db, "ann")["labelled_any"] == 1 and store.annotator_progress(db, "ann") == (1, 9)
        assert len(store.list_judgments(db)) == 2 and store.unit_quotes(db, ids[1]) == ["Paris"]
        for order in store.ORDERS:
            assert store.next_unit_for(db, "ann", order=order, priority=priority_order) is not None
        assert store.active_leases(db) == [] and store.stale_label_count(db) == 0
        with pytest.raises(sqlite3.OperationalError, match="locked"):  # a write does need the lock
            label(db, ids[1], "ann")
        db.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_an_older_store_is_migrated_under_one_write_lock(tmp_path):
    import sqlite_utils

    path = tmp_path / "old.db"
    old = sqlite_utils.Database(path)
    store.migrate(old, target=2)
    old.close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        old = sqlite_utils.Database(path)
        old.conn.execute("PRAGMA busy_timeout = 0")
        with pytest.raises(sqlite3.OperationalError, match="locked"):  # behind: it needs the lock
            store.migrate(old)
        assert store.applied_migrations(old) == [1, 2]  # nothing half-applied
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.migrate(old) == [3, 4]
    old.close()


def test_default_path_comes_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DB", str(tmp_path / "env" / "w.db"))
    db = store.open_db()
    db.close()
    assert (tmp_path / "env" / "w.db").exists()


def db_count(db, table: str) -> int:
    return db.execute(f"SELECT COUNT(*) FROM [{table}]").fetchone()[0]  # table names are constants here


# ---------------------------------------------------------------- items and units


def test_items_round_trip_and_upsert_keeps_position(db):
    items = [make_item("b"), make_item("a"), EvalItem("c", "Q", "A", (), None, None, False, None)]
    assert store.add_items(db, items) == 3
    assert store.list_items(db) == items
    changed = make_item("b", answer="New answer")
    store.add_items(db, [changed])
    assert [i.id for i in store.list_items(db)] == ["b", "a", "c"]  # insertion order kept
    assert store.get_item(db, "b") == changed
    assert store.get_item(db, "missing") is None


def test_units_inserted_once_and_listed_in_stable_order(db):
    store.add_items(db, [make_item("q2"), make_item("q1")])
    units = [claim("q1", 1), claim("q1", 0), answer_unit("abstention", "q1"), claim("q2", 0)]
    assert store.add_units(db, units) == 4
    assert store.add_units(db, units) == 0  # same text: nothing new
    result = store.store_units(db, [claim("q1", 0, "different text"), claim("q1", 2)])
    assert (result["new"], result["changed"]) == (2, 1)  # a new version of claim 0, and claim 2
    assert store.get_unit(db, Unit.make_id(CS, "q1", 0)).text == "a claim"  # the old version is kept
    assert store.is_stale(db, Unit.make_id(CS, "q1", 0))
    new_id = [v for v in store.slot_versions(db, CS, "q1", 0) if not v["stale"]][0]["unit_id"]
    assert new_id.startswith("claim_support:q1:0@") and store.get_unit(db, new_id).text == "different text"
    assert [u.unit_id for u in store.list_units(db)] == [
        "claim_support:q2:0",  # q2 was inserted first
        "abstention:q1",  # answer-level units (claim_index None) before claims
        new_id,
        "claim_support:q1:1",
        "claim_support:q1:2",
    ]
    assert [u.unit_id for u in store.list_units(db, task="abstention")] == ["abstention:q1"]
    assert len(store.list_units(db, item_id="q2")) == 1
    assert store.items_with_claim_units(db) == {"q1", "q2"}


def test_add_units_rejects_bad_units_and_writes_nothing(db):
    store.add_items(db, [make_item("q1")])
    bad = [claim("q1", 0), Unit("wrong-id", CS, "q1", 1, "x"), claim("nope", 0), Unit("x:q1", "x", "q1", None, "t")]
    with pytest.raises(store.StoreError) as info:
        store.add_units(db, bad)
    assert [i for i, _ in info.value.problems] == [1, 2, 3]
    assert store.list_units(db) == []


# ---------------------------------------------------------------- labels


def test_append_only_history_and_latest_wins(seeded):
    u = Unit.make_id(CS, "q1", 0)
    store.append_labels(seeded, [Label(u, CS, "ann", "supported", "first")])
    store.append_labels(seeded, [Label(u, CS, "bob", "unsupported")])
    store.append_labels(seeded, [Label(u, CS, "ann", "unsupported", "changed my mind")])
    current = {(l.annotator, l.value, l.note) for l in store.current_labels(seeded)}
    assert current == {("ann", "unsupported", "changed my mind"), ("bob", "unsupported", None)}
    history = store.label_history(seeded, u)
    assert [(l.annotator, l.value) for l in history] == [("ann", "supported"), ("bob", "unsupported"), ("ann", "unsupported")]
    stamps = [l.created_at for l in history]
    assert stamps == sorted(stamps) and all(s.endswith("+00:00") and len(s.split(".")[1]) == len("123456+00:00") for s in stamps)
    # the log cannot be rewritten behind the API's back
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        seeded.execute("DELETE FROM labels")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        seeded.execute("UPDATE labels SET value = 'supported'")
    assert len(store.label_history(seeded, u)) == 3


def test_append_labels_is_all_or_nothing_and_lists_every_bad_row(seeded):
    u = Unit.make_id(CS, "q1", 0)
    rows = [
        Label(u, CS, "ann", "supported"),
        Label(u, CS, "ann", "maybe"),
        Label("claim_support:zz:0", CS, "ann", "supported"),
        Label(u, "vibes", "ann", "good"),
        Label(u, "abstention", "ann", "refused"),  # unit belongs to claim_support
        Label(u, CS, " ", "supported"),
        Label(u, CS, "ann", "supported", created_at="yesterday"),
    ]
    with pytest.raises(store.LabelError) as info:
        store.append_labels(seeded, rows)
    assert sorted({i for i, _ in info.value.problems}) == [1, 2, 3, 4, 5, 6]
    assert "row 2: value: expected 'supported' or 'unsupported'" in str(info.value)
    assert store.label_history(seeded, u) == []


def test_undo_retracts_without_deleting(seeded):
    u0, u1 = Unit.make_id(CS, "q1", 0), Unit.make_id(CS, "q1", 1)
    assert store.undo_last_label(seeded, "ann") is None
    store.append_labels(seeded, [Label(u0, CS, "ann", "supported")])
    store.append_labels(seeded, [Label(u0, CS, "ann", "unsupported")])
    store.append_labels(seeded, [Label(u1, CS, "ann", "supported")])
    store.append_labels(seeded, [Label(u1, CS, "bob", "unsupported")])
    undone = store.undo_last_label(seeded, "ann")
    assert (undone.unit_id, undone.value) == (u1, "supported")
    assert {(l.unit_id, l.annotator, l.value) for l in store.current_labels(seeded)} == {
        (u0, "ann", "unsupported"),
        (u1, "bob", "unsupported"),  # another annotator's label is untouched
    }
    undone = store.undo_last_label(seeded, "ann")  # undoing an edit brings back the earlier value
    assert (undone.unit_id, undone.value) == (u0, "unsupported")
    assert [(l.annotator, l.value) for l in store.current_labels(seeded)] == [("ann", "supported"), ("bob", "unsupported")]
    assert len(store.label_history(seeded, u0)) == 2 and len(store.label_history(seeded, u1)) == 2
    log = store.label_log(seeded)
    assert [r["retracted_at"] is not None for r in log] == [False, True, True, False]
    assert "__retracted__" not in {r["value"] for r in log}


def test_injection_looking_text_is_stored_verbatim(db):
    nasty = "x'); DROP TABLE labels; --"
    item = EvalItem(nasty, nasty + " \"?", nasty, (Passage(nasty, nasty, nasty, None),), nasty, (nasty,), True, 1)
    store.add_items(db, [item])
    unit = Unit(Unit.make_id(CS, nasty, 0), CS, nasty, 0, nasty)
    store.add_units(db, [unit])
    store.append_labels(db, [Label(unit.unit_id, CS, "Robert'); DROP TABLE units;--", "supported", nasty)])
    assert store.get_item(db, nasty) == item
    assert store.list_units(db) == [unit]
    [label] = store.current_labels(db)
    assert (label.annotator, label.note) == ("Robert'); DROP TABLE units;--", nasty)
    assert {"labels", "units", "items"} <= set(db.table_names())


def _append_worker(path: str, annotator: str, n: int) -> None:
    for i in range(n):
        db = store.open_db(path)  # a connection per action, as the app does
        store.append_labels(db, [Label(Unit.make_id(CS, "q1", i % 3), CS, annotator, "supported", f"{i}")])
        db.close()


def test_two_processes_appending_concurrently_lose_nothing(seeded, tmp_path):
    path = str(tmp_path / "store.db")
    seeded.close()
    # fork (where available) skips re-importing sqlite_utils, which pulls in pandas (~2 s a process)
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    procs = [ctx.Process(target=_append_worker, args=(path, name, 200)) for name in ("p1", "p2")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0]
    db = store.open_db(path)
    rows = store.label_log(db)
    assert len(rows) == 400
    for name in ("p1", "p2"):
        assert sorted(int(r["note"]) for r in rows if r["annotator"] == name) == list(range(200))


def test_threads_appending_concurrently_lose_nothing(seeded, tmp_path):
    path = str(tmp_path / "store.db")
    threads = [threading.Thread(target=_append_worker, args=(path, f"t{k}", 50)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert db_count(seeded, "labels") == 200


# ---------------------------------------------------------------- next unit and progress


def label(db, unit_id: str, annotator: str, value: str = "supported") -> None:
    store.append_labels(db, [Label(unit_id, CS, annotator, value)])


def test_next_unit_resumes_where_the_annotator_stopped(seeded):
    ids = [u.unit_id for u in store.list_units(seeded)]
    assert store.next_unit_for(seeded, "ann").unit_id == ids[0]
    label(seeded, ids[0], "ann")
    label(seeded, ids[1], "ann")
    assert store.next_unit_for(seeded, "ann").unit_id == ids[2]
    assert store.next_unit_for(seeded, "ann", exclude={ids[2], ids[3]}).unit_id == ids[4]  # skipped this session
    # overlap 1: bob skips units ann already labelled
    assert store.next_unit_for(seeded, "bob").unit_id == ids[2]
    # overlap 2: bob gets the units ann labelled too, but never one he labelled himself
    assert store.next_unit_for(seeded, "bob", overlap=2).unit_id == ids[0]
    label(seeded, ids[0], "bob")
    assert store.next_unit_for(seeded, "bob", overlap=2).unit_id == ids[1]
    # units with two annotators are full at overlap 2
    assert store.next_unit_for(seeded, "cy", overlap=2).unit_id == ids[1]
    # an undone label makes the unit available again
    store.undo_last_label(seeded, "ann")
    assert store.next_unit_for(seeded, "ann").unit_id == ids[1]
    for unit_id in ids:
        label(seeded, unit_id, "ann")
    assert store.next_unit_for(seeded, "ann") is None
    assert store.next_unit_for(seeded, "ann", task="abstention") is None


def test_next_unit_near_threshold_uses_latest_judgments(seeded):
    ids = [u.unit_id for u in store.list_units(seeded)]
    scores = {ids[0]: 0.95, ids[1]: 0.10, ids[2]: 0.62, ids[3]: 0.45, ids[4]: 0.2}
    store.add_judgments(seeded, [Judgment(u, CS, "j1", "supported", s) for u, s in scores.items()])
    # a newer verdict replaces the older one for (unit, judge, repeat): ids[4] is now 0.5 exactly
    store.add_judgments(seeded, [Judgment(ids[4], CS, "j1", "supported", 0.5)])
    order = []
    while (unit := store.next_unit_for(seeded, "ann", order="near_threshold", threshold=0.5)) is not None:
        order.append(unit.unit_id)
        label(seeded, unit.unit_id, "ann")
    # |s - 0.5|: ids4 0, ids3 .05, ids2 .12, ids1 .40, ids0 .45; then unjudged units in order
    assert order == [ids[4], ids[3], ids[2], ids[1], ids[0], *ids[5:]]
    assert [u.unit_id for u in store.ordered_units(seeded, order="near_threshold", threshold=0.5)] == order


def test_next_unit_random_is_seeded_and_stable(seeded):
    first = store.next_unit_for(seeded, "ann", order="random", rng_seed=7)
    assert first == store.next_unit_for(seeded, "bob", order="random", rng_seed=7)
    seen = []
    while (unit := store.next_unit_for(seeded, "ann", order="random", rng_seed=7)) is not None:
        seen.append(unit.unit_id)
        label(seeded, unit.unit_id, "ann")
    assert seen[0] == first.unit_id
    assert sorted(seen) == sorted(u.unit_id for u in store.list_units(seeded))
    assert seen != [u.unit_id for u in store.list_units(seeded)]  # 9! orders: seed 7 is not the identity
    with pytest.raises(ValueError, match="order"):
        store.next_unit_for(seeded, "ann", order="alphabetical")


def test_progress_counts_current_labels(seeded):
    store.add_units(seeded, [answer_unit("abstention", "q1")])
    ids = [u.unit_id for u in store.list_units(seeded, task=CS)]
    label(seeded, ids[0], "ann")
    label(seeded, ids[0], "bob")
    label(seeded, ids[1], "bob")
    store.append_labels(seeded, [Label("abstention:q1", "abstention", "ann", "answered")])
    p = store.progress(seeded, "ann")
    assert (p["units"], p["labelled_by_annotator"], p["labelled_any"]) == (10, 2, 3)
    assert p["per_task"] == {
        "abstention": {"units": 1, "labelled_by_annotator": 1, "labelled_any": 1},
        CS: {"units": 9, "labelled_by_annotator": 1, "labelled_any": 2},
    }
    assert p["per_annotator"] == {"ann": 2, "bob": 2}
    q = store.progress(seeded, task=CS)
    assert (q["units"], q["labelled_by_annotator"], q["labelled_any"], q["per_annotator"]) == (9, None, 2, {"ann": 1, "bob": 2})


# ---------------------------------------------------------------- judgments and runs


def test_judgments_latest_per_unit_judge_repeat(seeded):
    u0, u1 = Unit.make_id(CS, "q1", 0), Unit.make_id(CS, "q1", 1)
    store.add_judgments(
        seeded,
        [
            Judgment(u0, CS, "judge-b", "supported", 0.9, quote="Paris", quote_found=True),
            Judgment(u0, CS, "judge-a", "unsupported", 0.2, repeat=0),
            Judgment(u0, CS, "judge-a", "supported", 0.7, repeat=1),
            Judgment(u1, CS, "judge-a", "", None, error="timeout"),
        ],
    )
    store.add_judgments(seeded, [Judgment(u0, CS, "judge-a", "supported", 0.8, repeat=0)])
    assert store.judge_fingerprints(seeded) == ["judge-b", "judge-a"]
    latest = store.list_judgments(seeded, judge="judge-a")
    assert [(j.unit_id, j.repeat, j.value, j.score) for j in latest] == [
        (u0, 1, "supported", 0.7),
        (u1, 0, "", None),
        (u0, 0, "supported", 0.8),
    ]
    [b] = store.list_judgments(seeded, judge="judge-b", task=CS)
    assert (b.quote, b.quote_found, b.created_at is not None) == ("Paris", True, True)
    assert store.list_judgments(seeded, task="abstention") == []
    with pytest.raises(store.StoreError) as info:
        store.add_judgments(seeded, [Judgment(u0, CS, "j", "maybe", 0.5), Judgment("nope", CS, "j", "supported", 1.5)])
    assert [i for i, _ in info.value.problems] == [0, 1, 1]
    assert len(store.list_judgments(seeded)) == 4


def test_record_run(db, tmp_path):
    store.record_run(db, tmp_path / "runs" / "r1", {"n_items": 4, "judge": {"fingerprint": "offline@abc"}})
    [run] = store.list_runs(db)
    assert (run["path"], run["judge"], run["n_items"]) == (str(tmp_path / "runs" / "r1"), "offline@abc", 4)
    assert run["summary"]["judge"]["fingerprint"] == "offline@abc"


# ---------------------------------------------------------------- property: history is kept


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.sampled_from(["a", "b"]), st.sampled_from(["supported", "unsupported"])),
        min_size=1,
        max_size=15,
    )
)
def test_current_is_the_last_row_per_unit_and_annotator(tmp_path_factory, ops):
    db = store.open_db(tmp_path_factory.mktemp("prop") / "s.db")
    store.add_items(db, [make_item("q1")])
    store.add_units(db, [claim("q1", c) for c in range(3)])
    for index, annotator, value in ops:
        store.append_labels(db, [Label(Unit.make_id(CS, "q1", index), CS, annotator, value)])
    expected = {}
    for index, annotator, value in ops:
        expected[(Unit.make_id(CS, "q1", index), annotator)] = value
    assert {(l.unit_id, l.annotator): l.value for l in store.current_labels(db)} == expected
    assert sum(len(store.label_history(db, Unit.make_id(CS, "q1", c))) for c in range(3)) == len(ops)
    db.close()


def test_helps_most_order_puts_judge_disagreements_first_then_near_threshold(tmp_path):
    from workbench.types import Judgment

    db = store.open_db(tmp_path / "h.db")
    item = EvalItem("i", "Q?", "A.", ())
    store.add_items(db, [item])
    units = [Unit(Unit.make_id("claim_support", "i", k), "claim_support", "i", k, f"claim {k}") for k in range(4)]
    store.add_units(db, units)
    a = {0: 0.9, 1: 0.55, 2: 0.1, 3: 0.7}
    b = {0: 0.95, 1: 0.6, 2: 0.2, 3: 0.2}  # the judges disagree about 0.5 on unit 3 only
    store.add_judgments(db, [Judgment(units[k].unit_id, "claim_support", "judge-a", "supported", score=v) for k, v in a.items()]
                        + [Judgment(units[k].unit_id, "claim_support", "judge-b", "supported", score=v) for k, v in b.items()])
    order = [u.claim_index for u in store.ordered_units(db, order="helps_most", threshold=0.5, priority=priority_order)]
    # unit 3 (disagreement) first, then by |mean - 0.5|: unit 1 (0.075), unit 2 (0.35), unit 0 (0.425)
    assert order == [3, 1, 2, 0]
    assert store.next_unit_for(db, "ann", order="helps_most", threshold=0.5, priority=priority_order).claim_index == 3
    with pytest.raises(ValueError, match="priority"):  # the store has no ordering rule of its own
        store.ordered_units(db, order="helps_most")
