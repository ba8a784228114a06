"""Done-when check for ``score --batch``: 1,000 items through the Batch API vs interactively.

Builds a 1,000-item eval set (the 846 BEGIN items + variants of the 13 hand-made RAG items, each
with one extra sentence so its requests differ), scores it interactively and with the batch
driver against the same loopback fake server (each with its own fresh cache), and prints wall
times, requests per stage, HTTP requests made, and whether ``items.jsonl`` is byte-identical and
``summary.json`` equal apart from the judge usage block. Exit status 1 if they differ.

    .venv/bin/python bench/bench_batch.py [--items 1000] [--polls 2] [--poll-interval 0.05]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import openai  # noqa: E402
from fake_openai import CHAT_PATH, EMBEDDINGS_PATH, FakeOpenAI  # noqa: E402

from workbench.batch.runner import BatchOptions, build_batch_judges, load_state, run_batch_scoring  # noqa: E402
from workbench.config import JudgeConfig  # noqa: E402
from workbench.judges.cache import JudgeCache  # noqa: E402
from workbench.judges.openai_compat import OpenAICompatEmbedder, OpenAICompatJudge  # noqa: E402
from workbench.scoring.dataset import load_eval_set  # noqa: E402
from workbench.scoring.pipeline import ScoreOptions, run_scoring, write_outputs  # noqa: E402


def eval_items(n: int):
    begin = load_eval_set(ROOT / "data" / "begin_eval.jsonl")
    demo = load_eval_set(ROOT / "data" / "demo_rag.jsonl")
    items = list(begin[:n])
    variant = 0
    while len(items) < n:
        for item in demo:
            if len(items) >= n:
                break
            items.append(replace(item, id=f"{item.id}-v{variant}",
                                 answer=f"{item.answer} This also holds for plan {variant}."))
        variant += 1
    return items


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--polls", type=int, default=2, help="status polls before a fake batch completes")
    parser.add_argument("--poll-interval", type=float, default=0.05)
    args = parser.parse_args()
    items = eval_items(args.items)
    config = JudgeConfig(backend="openai", model="judge-m", embedding_model="embed-m")
    tmp = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    with FakeOpenAI(logprob_confidence=0.9) as fake:
        fake.batch_polls_to_complete = args.polls
        client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="sk-bench", max_retries=0)

        cache = JudgeCache(tmp / "interactive.db")
        judge = OpenAICompatJudge(config, client=client, cache=cache)
        started = time.perf_counter()
        records, summary = run_scoring(items, judge, OpenAICompatEmbedder(config, client, cache=cache),
                                       ScoreOptions(), progress=False)
        t_interactive = time.perf_counter() - started
        write_outputs(tmp / "interactive", records, summary)
        interactive_requests = fake.count()
        fake.reset()

        bjudge, bembedder = build_batch_judges(config, client=client, cache=JudgeCache(tmp / "batch.db"))
        started = time.perf_counter()
        records, bsummary = run_batch_scoring(items, bjudge, bembedder, ScoreOptions(), tmp / "batch",
                                              BatchOptions(poll_interval=args.poll_interval, progress=False),
                                              echo=lambda m: None)
        t_batch = time.perf_counter() - started
        write_outputs(tmp / "batch", records, bsummary)
        batch_http = {path: fake.count(path) for path in ("/v1/files", CHAT_PATH, EMBEDDINGS_PATH)}
        batch_http["batches created"] = sum(1 for r in fake.requests if (r.method, r.path) == ("POST", "/v1/batches"))
        batch_http["status polls"] = sum(1 for r in fake.requests if r.path.startswith("/v1/batches/"))

    same_items = (tmp / "interactive" / "items.jsonl").read_bytes() == (tmp / "batch" / "items.jsonl").read_bytes()
    a, b = dict(summary), dict(bsummary)
    a.pop("judge"), b.pop("judge")
    same_summary = a == b
    state = load_state(tmp / "batch")
    print(f"items                      {len(items)}")
    print(f"interactive                {t_interactive:6.1f} s, {interactive_requests} HTTP requests "
          f"({summary['judge']['calls']} chat calls)")
    print(f"batch                      {t_batch:6.1f} s (polls every {args.poll_interval}s, fake completes after "
          f"{args.polls} polls), HTTP: {batch_http}")
    for stage in state["stages"]:
        print(f"  stage {stage['stage']} {stage['name']:<58} {stage['requests']:>6} requests, "
              f"{len(stage['batches'])} batch(es), ~{stage['estimated_tokens']} tokens")
    print(f"items.jsonl byte-identical {same_items}")
    print(f"summary equal (sans judge) {same_summary}")
    print(f"items with errors          {bsummary['errors']['items_with_errors']}")
    return 0 if same_items and same_summary else 1


if __name__ == "__main__":
    sys.exit(main())
