"""SQLite judge cache (workbench.judges.cache): keys, round trips, concurrent writers."""
from __future__ import annotations

import multiprocessing
import sqlite3
import threading

import pytest

from workbench.judges.cache import JudgeCache, cache_key

BASE = {"backend": "openai", "model": "m", "host": "127.0.0.1", "template": "abc", "decoding": {"temperature": 0.0}, "input": {"claim": "x"}}


def test_key_is_canonical_over_named_parts():
    reordered = dict(reversed(list(BASE.items())))
    assert cache_key(BASE) == cache_key(reordered)
    assert len(cache_key(BASE)) == 64


@pytest.mark.parametrize("part,value", [("model", "m2"), ("template", "abd"), ("decoding", {"temperature": 0.7}), ("host", "api.openai.com"), ("input", {"claim": "y"})])
def test_key_changes_with_each_part(part, value):
    assert cache_key({**BASE, part: value}) != cache_key(BASE)


@pytest.mark.parametrize("forbidden", ["api_key", "timeout", "max_retries", "concurrency", "Authorization"])
def test_key_refuses_parts_that_must_not_matter(forbidden):
    with pytest.raises(ValueError, match="must not include"):
        cache_key({**BASE, forbidden: 1})


def test_round_trip_with_meta_and_missing_key(tmp_path):
    with JudgeCache(tmp_path / "sub" / "cache.db") as cache:
        assert cache.get("nope") is None and cache.get_entry("nope") is None
        cache.put("k", '{"claims": []}', {"prompt_tokens": 3})
        assert cache.get("k") == '{"claims": []}'
        assert cache.get_entry("k").meta == {"prompt_tokens": 3}
        assert "k" in cache and len(cache) == 1
        with pytest.raises(TypeError):
            cache.put("k2", 5)  # type: ignore[arg-type]


def test_wal_mode_and_persistence(tmp_path):
    path = tmp_path / "c.db"
    with JudgeCache(path) as cache:
        cache.put("k", "v")
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with JudgeCache(path) as again:
        assert again.get("k") == "v"


def test_many_threads_write_one_cache(tmp_path):
    cache = JudgeCache(tmp_path / "c.db")

    def write(t: int) -> None:
        for i in range(50):
            cache.put(f"{t}-{i}", str(i))

    threads = [threading.Thread(target=write, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 400 and cache.get("7-49") == "49"
    cache.close()


def _process_writer(path: str, tag: int) -> None:
    cache = JudgeCache(path)
    for i in range(100):
        cache.put(f"{tag}-{i}", f"value {tag} {i}")
    cache.close()


def test_several_processes_write_concurrently(tmp_path):
    path = str(tmp_path / "c.db")
    JudgeCache(path).close()
    # fork, not spawn: spawn re-runs the parent's __main__, which Streamlit's AppTest (run earlier in
    # the same pytest process) replaces with workbench_app/main.py, and the child then fails to import workbench_app.views.
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_process_writer, args=(path, tag)) for tag in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    with JudgeCache(path) as cache:
        assert len(cache) == 400 and cache.get("3-99") == "value 3 99"
