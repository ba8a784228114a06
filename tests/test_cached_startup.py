"""A run answered entirely from the judge cache makes no call and never imports openai (start-up cost)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo_rag.jsonl"
RUN = """
import sys
from workbench.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    print("OPENAI_IMPORTED=" + str("openai" in sys.modules), file=sys.stderr)
"""


def run_score(fake: FakeOpenAI, tmp: Path, out: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKBENCH_", "OPENAI_"))}
    env.update(OPENAI_BASE_URL=fake.base_url, WORKBENCH_CACHE=str(tmp / "cache.db"), WORKBENCH_HOME=str(tmp))
    return subprocess.run([sys.executable, "-c", RUN, "score", str(DEMO), "--judge", "openai", "--model", "m",
                           "--out", str(tmp / out)], cwd=tmp, env=env, capture_output=True, text=True, timeout=300)


def test_cached_rerun_makes_no_call_and_does_not_import_openai(tmp_path):
    with FakeOpenAI() as fake:
        first = run_score(fake, tmp_path, "a")
        assert first.returncode == 0, first.stderr
        assert "OPENAI_IMPORTED=True" in first.stderr
        calls = fake.count()
        assert calls > 0
        second = run_score(fake, tmp_path, "b")
        assert second.returncode == 0, second.stderr
        assert fake.count() == calls  # nothing sent
    assert "OPENAI_IMPORTED=False" in second.stderr
    assert (tmp_path / "a" / "items.jsonl").read_bytes() == (tmp_path / "b" / "items.jsonl").read_bytes()
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["judge"]["calls"] == 0 and summary["judge"]["cache_hits"] > 0


def test_the_connection_pool_is_sized_to_the_concurrency_limit():
    from workbench.config import JudgeConfig
    from workbench.judges.client import ADAPTIVE_POOL_SIZE, make_client

    fixed = make_client(JudgeConfig(backend="openai", base_url="http://127.0.0.1:9/v1", concurrency=5))
    adaptive = make_client(JudgeConfig(backend="openai", base_url="http://127.0.0.1:9/v1"))
    pool = fixed._client._transport._pool
    assert (pool._max_connections, pool._max_keepalive_connections) == (5, 5)
    assert adaptive._client._transport._pool._max_connections == ADAPTIVE_POOL_SIZE


def test_the_sdk_pool_answers_idle_checks_from_the_socket_and_still_reuses_connections(fake_openai):
    """The official client's pool gets the socket-caching backend; calls through it work, a kept-alive
    connection is reused, and one whose server closed it is seen as expired (not reused)."""
    import asyncio

    from workbench.config import JudgeConfig
    from workbench.judges.client import make_client

    client = make_client(JudgeConfig(backend="openai", base_url=fake_openai.base_url, model="m", concurrency=2))
    pool = client._client._transport._pool
    assert type(pool._network_backend).__qualname__.startswith("socket_caching_backend")

    async def two_calls():
        for _ in range(2):
            reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            assert reply.choices
        streams = [c._connection._network_stream for c in pool.connections if c._connection is not None]
        assert len(pool.connections) == 1  # the second call reused the first call's connection
        assert streams and streams[0].get_extra_info("is_readable") is False  # idle and open: not readable
        await client.close()

    asyncio.run(two_calls())


FREEZE_PROBE = """
import gc, sys
from workbench.cli import main
from workbench.judges import lazy_openai
mode = sys.argv[1]
if mode == "collector-off":
    gc.disable()
try:
    if mode == "program":  # as the `workbench` script calls it: arguments from sys.argv
        sys.argv = ["workbench", "--version"]
        main()
    else:  # as click's test runner and other programs call it
        main(["--version"])
except SystemExit:
    pass
before = gc.get_freeze_count()
assert lazy_openai.openai.AsyncOpenAI is not None and "openai" in sys.modules
after = gc.get_freeze_count()
lazy_openai.openai.RateLimitError  # a later first use of another name: no second freeze
print("@@", lazy_openai.FREEZE_AFTER_IMPORT, before, after, gc.get_freeze_count() == after, gc.isenabled(),
      gc.get_threshold()[0])
"""


def _freeze_probe(mode: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", FREEZE_PROBE, mode], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.rpartition("@@")[2].split()


def test_the_workbench_program_tunes_its_collector_and_others_are_left_alone():
    from workbench.cli import YOUNG_COLLECTION_THRESHOLD

    flag, before, after, once, collector_on, young = _freeze_probe("program")
    assert flag == "True" and before == "0" and int(after) > 10_000 and once == "True" and collector_on == "True"
    assert int(young) == YOUNG_COLLECTION_THRESHOLD
    flag, before, after, once, collector_on, young = _freeze_probe("runner")
    assert flag == "False" and before == after == "0" and collector_on == "True"
    assert int(young) < YOUNG_COLLECTION_THRESHOLD  # Python's own
    *_, collector_on, _young = _freeze_probe("collector-off")  # the collector is restored as it was: off
    assert collector_on == "False"
