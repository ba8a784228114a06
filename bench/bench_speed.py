"""Wall time, calls, tokens, concurrency and client CPU of `workbench score --judge openai` against
the loopback fake server (``tests/fake_openai.py``) answering every call after 200 ms.

    .venv/bin/python bench/bench_speed.py [--items 200] [--latency 0.2] [--runs 1] [--save DIR] [--src DIR ...]
        [--only default|two|cached ...] [--profile DIR] [--max-load 1.0]

Before/after under the same load: ``git archive 94e7d1e | tar -x -C /tmp/before`` then
``bench_speed.py --src /tmp/before --src . --runs 2`` (versions alternate run by run).

Items: the first ``--items`` BEGIN dev items (``data/begin_eval.jsonl``: a dialogue turn as the
question, a short response as the answer, one knowledge passage each, no reference), written to a
temporary eval set. Every run is the real CLI in a child process (start-up included), with its
own fresh cache, ``cwd`` and ``WORKBENCH_HOME`` in a temporary folder (so no label store is found):

1. ``default``: default settings (all metrics, adaptive concurrency);
2. ``two metrics``: ``--metrics faithfulness,answer_relevance`` (fresh cache);
3. ``cached re-run``: run 1 again on run 1's cache (no calls expected).

Printed per run: wall seconds, chat and embedding calls per item (as the server counted them),
prompt tokens per item (the judge's ledger from ``summary.json``), mean calls in flight at the
server (sum of request durations / span from first request to last reply), and client CPU ms per
call (the child's user+system CPU / HTTP calls; also without start-up: the default run's CPU minus
the cached re-run's, per call). ``--save DIR`` keeps each run's ``items.jsonl``
(``DIR/<run>.items.jsonl``) so outputs can be compared byte for byte between code versions.
``PYTHONDONTWRITEBYTECODE`` is removed from the child's environment (start-up is timed as users
see it). The machine's load average is printed first: other work on the machine slows every run.
``server ms/call`` is this process's CPU during the run (the fake server's threads) per call.
``1st call s`` is the time from launching the CLI to the server receiving its first request (start-up,
loading, the client's construction), ``tail s`` from the last reply to the CLI's exit (writing
outputs); ``load`` is the 1-minute load average when the run started (``--max-load X`` waits until it
is at most X before each run).
``--profile DIR`` runs each CLI under cProfile (main thread) and prints its top costs per call.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_openai import CHAT_PATH, EMBEDDINGS_PATH, FakeOpenAI  # noqa: E402

TWO_METRICS = "faithfulness,answer_relevance"


class TimedFake(FakeOpenAI):
    """The fake server, also recording when each reply was produced (for calls in flight)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.spans: list[tuple[float, float]] = []
        self._span_lock = threading.Lock()
        for route_key, handler in list(self.routes.items()):
            self.routes[route_key] = self._timed(handler)

    def _timed(self, handler):
        def wrapped(fake, request):
            reply = handler(fake, request)
            with self._span_lock:
                self.spans.append((request.time, time.monotonic()))
            return reply
        return wrapped

    def reset(self) -> None:
        super().reset()
        with self._span_lock:
            self.spans.clear()

    def first_and_last(self) -> tuple[float, float] | None:
        """``time.monotonic()`` of the first request received and of the last reply produced."""
        with self._span_lock:
            spans = list(self.spans)
        return (min(s for s, _ in spans), max(e for _, e in spans)) if spans else None

    def mean_in_flight(self) -> float:
        with self._span_lock:
            spans = list(self.spans)
        if not spans:
            return 0.0
        busy = sum(end - start for start, end in spans)
        return busy / max(1e-9, max(e for _, e in spans) - min(s for s, _ in spans))


def write_items(path: Path, n: int) -> None:
    rows = [line for line in (ROOT / "data" / "begin_eval.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    if n > len(rows):
        raise SystemExit(f"--items {n}: data/begin_eval.jsonl has only {len(rows)} items")
    path.write_text("\n".join(rows[:n]) + "\n", encoding="utf-8")


def wait_for_load(max_load: float | None, max_wait: float = 600.0, poll: float = 5.0) -> float:
    """The 1-minute load average, after waiting (at most ``max_wait`` s) until it is at or below
    ``max_load`` (``None``: no wait)."""
    deadline = time.monotonic() + max_wait
    load = os.getloadavg()[0]
    while max_load is not None and load > max_load and time.monotonic() < deadline:
        time.sleep(poll)
        load = os.getloadavg()[0]
    return load


def run_cli(fake: TimedFake, evalset: Path, work: Path, cache: Path, out: Path, extra: list[str],
            src: Path | None = None, profile: Path | None = None, max_load: float | None = None) -> dict:
    """One `workbench score` in a child process; returns the figures of that run."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WORKBENCH_", "OPENAI_")) and k != "PYTHONDONTWRITEBYTECODE"}
    if src is not None:  # another version's `workbench` package first on the path
        env["PYTHONPATH"] = str(src)
    env.update(WORKBENCH_HOME=str(work), WORKBENCH_CACHE=str(cache), OPENAI_BASE_URL=fake.base_url)
    cmd = [str(ROOT / ".venv" / "bin" / "workbench")]
    if profile is not None:  # the same CLI under cProfile (main thread only), stats written to `profile`
        cmd = [sys.executable, "-m", "cProfile", "-o", str(profile), *cmd]
    cmd += ["score", str(evalset), "--judge", "openai",
           "--model", "fake-judge", "--embedding-model", "fake-embed", "--out", str(out), "--json", *extra]
    fake.reset()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = resource.getrusage(resource.RUSAGE_SELF)
    load = wait_for_load(max_load)
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    ended = time.monotonic()
    wall = ended - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_after = resource.getrusage(resource.RUSAGE_SELF)
    if proc.returncode != 0 and "No such option" in proc.stderr:
        return {}  # an older version without the option
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    server_cpu = (server_after.ru_utime - server_before.ru_utime) + (server_after.ru_stime - server_before.ru_stime)
    chat, emb = fake.count(CHAT_PATH), fake.count(EMBEDDINGS_PATH)
    span = fake.first_and_last()
    first, tail = (span[0] - started, ended - span[1]) if span else (None, None)
    return {"wall": wall, "load": load, "first": first, "tail": tail, "chat": chat, "embed": emb, "prompt_tokens": summary["judge"]["prompt_tokens"],
            "in_flight": fake.mean_in_flight(), "cpu": cpu, "server_cpu": server_cpu, "summary": summary}


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_profile(path: Path, calls: int, top: int = 12) -> None:
    """Print the functions with the most own (tottime) CPU in a cProfile file, in ms per HTTP call."""
    import pstats

    stats = pstats.Stats(str(path)).stats  # {(file, line, func): (cc, nc, tottime, cumtime, callers)}
    rows = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    per = max(1, calls)
    print(f"  profile {path.name}: top {top} by own time (ms per call over {calls} calls; cumulative in brackets)")
    for (file, line, func), (_cc, ncalls, tottime, cumtime, _callers) in rows:
        where = f"{Path(file).name}:{line}({func})" if line else func
        print(f"    {1000 * tottime / per:7.3f} ms  [{1000 * cumtime / per:8.3f}]  {ncalls:>8}x  {where}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the fake server waits per call")
    parser.add_argument("--runs", type=int, default=1, help="repeat the whole set of runs this many times")
    parser.add_argument("--save", type=Path, default=None, help="keep each run's items.jsonl here")
    parser.add_argument("--profile", type=Path, default=None,
                        help="run each CLI under cProfile and write DIR/<run>-<r>.prof, then print its top functions "
                             "by own time (profiling slows the run: its wall and CPU figures are not comparable)")
    parser.add_argument("--max-load", type=float, default=None,
                        help="before each run, wait (up to 10 min) until the 1-minute load average is at or below "
                             "this (other work on the machine slows every run; `load` shows the figure it started at)")
    parser.add_argument("--only", choices=["default", "two", "cached"], action="append",
                        help="run only these (cached implies default)")
    parser.add_argument("--src", type=Path, action="append", default=None,
                        help="a source tree holding another version's workbench/ package (e.g. `git archive "
                             "<commit> | tar -x -C DIR`); repeat to alternate versions run by run under the same load")
    args = parser.parse_args()
    only = set(args.only or ["default", "two", "cached"])
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores; "
          f"{args.items} BEGIN items, fake server {args.latency * 1000:.0f} ms per call")
    print(f"{'run':<16}{'wall s':>8}{'chat/item':>11}{'embed/item':>11}{'prompt tok/item':>16}"
          f"{'in flight':>11}{'CPU ms/call':>13}{'CPU s':>8}{'server ms/call':>16}{'1st call s':>12}{'tail s':>8}{'load':>6}")
    with TimedFake(latency=args.latency) as fake, tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        evalset = tmp / "items.jsonl"
        write_items(evalset, args.items)
        versions = args.src or [None]
        for r in range(args.runs * len(versions)):
            src = versions[r % len(versions)]
            if len(versions) > 1 or src is not None:
                print(f"-- version: {src or ROOT}", flush=True)
            figures: dict[str, dict] = {}
            plan = []
            if only & {"default", "cached"}:
                plan.append(("default", [], f"cache-a{r}.db"))
            if "two" in only:
                plan.append(("two metrics", ["--metrics", TWO_METRICS], f"cache-b{r}.db"))
            if "cached" in only:
                plan.append(("cached re-run", [], f"cache-a{r}.db"))
            for name, extra, cache_name in plan:
                work = tmp / f"work-{name.replace(' ', '-')}-{r}"
                work.mkdir()
                out = work / "out"
                prof = None
                if args.profile:
                    args.profile.mkdir(parents=True, exist_ok=True)
                    prof = args.profile.resolve() / f"{name.replace(' ', '-')}-{r}.prof"
                fig = run_cli(fake, evalset, work, tmp / cache_name, out, extra, src, prof, args.max_load)
                if not fig:
                    print(f"{name:<16}  n/a: this version has no {' '.join(extra[:1])} option", flush=True)
                    continue
                figures[name] = fig
                calls = fig["chat"] + fig["embed"]
                n = args.items
                cpu_per_call = f"{1000 * fig['cpu'] / calls:.2f}" if calls else "n/a"
                server_per_call = f"{1000 * fig['server_cpu'] / calls:.2f}" if calls else "n/a"
                print(f"{name:<16}{fig['wall']:>8.2f}{fig['chat'] / n:>11.2f}{fig['embed'] / n:>11.2f}"
                      f"{fig['prompt_tokens'] / n:>16.0f}{fig['in_flight']:>11.1f}{cpu_per_call:>13}{fig['cpu']:>8.2f}"
                      f"{server_per_call:>16}{_secs(fig['first']):>12}{_secs(fig['tail']):>8}{fig['load']:>6.2f}",
                      flush=True)
                if prof is not None:
                    print_profile(prof, calls)
                if args.save:
                    args.save.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(out / "items.jsonl", args.save / f"{name.replace(' ', '-')}-{r}.items.jsonl")
            if "default" in figures and "cached re-run" in figures:
                base, cached = figures["default"], figures["cached re-run"]
                calls = base["chat"] + base["embed"]
                print(f"  default run's CPU per call without start-up (its CPU - the cached re-run's, / calls): "
                      f"{1000 * (base['cpu'] - cached['cpu']) / calls:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
