"""End-to-end scoring throughput: the offline judge on BEGIN, and the OpenAI-compatible judge
through the real ``openai`` client against the loopback fake server (cold, then warm cache).

    .venv/bin/python bench/bench_pipeline.py [--items 846] [--latency 0.05]

Prints items/s and judge calls per item; the fake server answers after ``--latency`` seconds, so
the LLM figures measure the workbench's concurrency (two round trips per item), not a model.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_openai import FakeOpenAI  # noqa: E402

from workbench.config import JudgeConfig  # noqa: E402
from workbench.demo import public_sets  # noqa: E402
from workbench.judges.factory import build_judge  # noqa: E402
from workbench.scoring.pipeline import ScoreOptions, run_scoring  # noqa: E402


def timed(items, config) -> tuple[float, dict]:
    judge, embedder = build_judge(config)
    started = time.perf_counter()
    _, summary = run_scoring(items, judge, embedder, ScoreOptions(), progress=False)
    return time.perf_counter() - started, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=846)
    parser.add_argument("--llm-items", type=int, default=300)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    items = public_sets.begin_items()[: args.items]

    seconds, summary = timed(items, JudgeConfig(backend="offline"))
    print(f"offline judge, {len(items)} BEGIN items: {seconds:.2f} s = {len(items) / seconds:.0f} items/s, "
          f"{summary['judge']['calls'] / len(items):.1f} judge calls per item")

    llm_items = items[: args.llm_items]
    with FakeOpenAI(latency=args.latency) as fake, tempfile.TemporaryDirectory() as tmp:
        config = JudgeConfig(backend="openai", model="fake-judge", base_url=fake.base_url,
                             cache_path=Path(tmp) / "cache.db")
        cold, summary = timed(llm_items, config)
        calls = summary["judge"]["calls"]
        warm, summary_warm = timed(llm_items, config)
        print(f"openai-compatible judge via loopback fake ({args.latency * 1000:.0f} ms per call), {len(llm_items)} items:")
        print(f"  cold cache: {cold:.2f} s = {len(llm_items) / cold:.1f} items/s, {calls} HTTP calls "
              f"({calls / len(llm_items):.1f} per item)")
        print(f"  warm cache: {warm:.2f} s = {len(llm_items) / warm:.1f} items/s, "
              f"{summary_warm['judge']['calls']} HTTP calls, {summary_warm['judge']['cache_hits']} cache hits")


if __name__ == "__main__":
    main()
