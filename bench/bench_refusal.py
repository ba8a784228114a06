"""Refusal detector throughput: answers/s of the offline judge's ``is_refusal`` on bundled answers.

    .venv/bin/python bench/bench_refusal.py [--answers 2000] [--repeats 3]

Scores XSTest completions and the RAG abstention set (cycled to ``--answers``) two ways: one
answer per call (what ``score`` does, through ``OfflineJudge.is_refusal``) and one batch
(``RefusalDetector.scores``). Prints the best of ``--repeats`` runs, after one warm-up call that
loads the bundled embeddings: answers per wall-clock second, and per CPU-second of this process
(the figure that does not depend on what else runs on the machine; scoring is single-threaded).
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.demo import public_sets  # noqa: E402
from workbench.jsonl import read_jsonl  # noqa: E402
from workbench.judges.offline import OfflineJudge  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    pool = [r["completion"] for r in public_sets.xstest_rows()]
    pool += [r["answer"] for r in read_jsonl(ROOT / "data" / "rag_abstention.jsonl")]
    answers = list(itertools.islice(itertools.cycle(pool), args.answers))
    judge = OfflineJudge()
    judge.refusal.score("warm-up")

    async def one_by_one() -> None:
        for answer in answers:
            await judge.is_refusal(answer)

    best_single = best_batch = cpu_single = cpu_batch = float("inf")
    for _ in range(args.repeats):
        started, cpu = time.perf_counter(), time.process_time()
        asyncio.run(one_by_one())
        best_single = min(best_single, time.perf_counter() - started)
        cpu_single = min(cpu_single, time.process_time() - cpu)
        started, cpu = time.perf_counter(), time.process_time()
        judge.refusal.scores(answers)
        best_batch = min(best_batch, time.perf_counter() - started)
        cpu_batch = min(cpu_batch, time.process_time() - cpu)
    print(f"{len(answers)} answers (XSTest completions + RAG set, mean {sum(map(len, answers)) / len(answers):.0f} "
          f"chars), {os.cpu_count()} CPUs visible")
    print(f"  load average now: {os.getloadavg()[0]:.1f} (wall-clock figures drop when other work shares the cores)")
    print(f"  one call per answer (OfflineJudge.is_refusal): {len(answers) / best_single:,.0f} answers/s wall, "
          f"{len(answers) / cpu_single:,.0f} per CPU-second")
    print(f"  batch (RefusalDetector.scores):                {len(answers) / best_batch:,.0f} answers/s wall, "
          f"{len(answers) / cpu_batch:,.0f} per CPU-second")


if __name__ == "__main__":
    main()
