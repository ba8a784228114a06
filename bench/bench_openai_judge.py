"""Throughput of the OpenAI-compatible judge against the loopback fake server.

Measures 2,000 verify calls (one claim per call) with the adaptive limiter vs a fixed concurrency
of 8, then cold vs warm cache. The fake answers after ``--latency`` seconds (default 50 ms), so
the ceiling for a fixed concurrency c is about c / latency calls/s. The fake runs in its own
process (``--in-process`` to share one), so its threads do not compete with the client for the GIL.

    .venv/bin/python bench/bench_openai_judge.py [--calls 2000] [--latency 0.05]
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import openai  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

from workbench.config import JudgeConfig  # noqa: E402
from workbench.judges.openai_compat import OpenAICompatJudge  # noqa: E402
from workbench.types import Passage  # noqa: E402

PASSAGES = (
    Passage("p-1", "Annual plans renew automatically on the anniversary. Refunds are possible within 30 days."),
    Passage("p-2", "Monthly plans can be cancelled at any time."),
)


class RemoteFake:
    """The fake server in a child process; only ``base_url`` is available here."""

    def __init__(self, latency: float) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(latency, child), daemon=True)
        self._proc.start()
        self.base_url = self._parent.recv()

    def reset(self) -> None:
        pass

    def __enter__(self) -> RemoteFake:
        return self

    def __exit__(self, *exc) -> None:
        self._parent.send("stop")
        self._proc.join(10)


def _serve(latency: float, conn) -> None:
    with FakeOpenAI(latency=latency) as fake:
        conn.send(fake.base_url)
        conn.recv()


def make_judge(fake, *, concurrency: int | None, cache_path: Path | None) -> OpenAICompatJudge:
    config = JudgeConfig(backend="openai", model="bench-model", base_url=fake.base_url, concurrency=concurrency,
                         use_cache=cache_path is not None, cache_path=cache_path, timeout=30.0)
    client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="sk-bench", max_retries=0)
    return OpenAICompatJudge(config, client=client)


async def run_calls(judge: OpenAICompatJudge, n: int) -> float:
    claims = [f"Annual plans renew automatically, claim {i}." for i in range(n)]
    started = time.perf_counter()
    verdicts = await asyncio.gather(*(judge.verify(c, PASSAGES) for c in claims))
    elapsed = time.perf_counter() - started
    assert len(verdicts) == n
    return elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--in-process", action="store_true", help="run the fake server in this process")
    args = parser.parse_args(argv)
    n = args.calls
    where = "in this process" if args.in_process else "in a child process"
    print(f"fake server {where}, latency {args.latency * 1000:.0f} ms, {n} verify calls each")
    server = FakeOpenAI(latency=args.latency) if args.in_process else RemoteFake(args.latency)
    with server as fake:
        for label, concurrency in (("fixed concurrency 8", 8), ("adaptive limiter", None)):
            fake.reset()
            judge = make_judge(fake, concurrency=concurrency, cache_path=None)
            elapsed = asyncio.run(run_calls(judge, n))
            assert judge.usage().calls == n and judge.usage().failures == 0
            print(f"{label:22s} {elapsed:7.2f} s  {n / elapsed:8.1f} calls/s  "
                  f"(final limit {judge.limiter.limit}, peak in flight {judge.limiter.peak_in_flight})")
        with tempfile.TemporaryDirectory() as tmp:
            cache_path = Path(tmp) / "cache.db"
            fake.reset()
            cold_judge = make_judge(fake, concurrency=None, cache_path=cache_path)
            cold = asyncio.run(run_calls(cold_judge, n))
            cold_requests = cold_judge.usage().calls
            warm_judge = make_judge(fake, concurrency=None, cache_path=cache_path)
            warm = asyncio.run(run_calls(warm_judge, n))
            print(f"{'cold cache (adaptive)':22s} {cold:7.2f} s  {n / cold:8.1f} calls/s  ({cold_requests} requests)")
            print(f"{'warm cache':22s} {warm:7.2f} s  {n / warm:8.1f} calls/s  ({warm_judge.usage().calls} requests, "
                  f"{warm_judge.usage().cache_hits} cache hits)")


if __name__ == "__main__":
    main()
