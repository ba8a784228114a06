"""Start-up cost of the ``workbench`` command: CPU and wall seconds of ``--help`` and ``--version``.

Each command runs ``--runs`` times in a child process; CPU seconds are the child's user + system
time (``resource.getrusage(RUSAGE_CHILDREN)`` before and after the run), wall seconds the elapsed
time around it; the median of the runs is printed. ``PYTHONDONTWRITEBYTECODE`` is removed from the
child's environment, so the children compile and then reuse bytecode as an installed package
does; one untimed warm-up run per command comes first. The issue's target: under 0.3 s of CPU.

It also lists which heavy modules the CLI imports for ``--help`` (from ``sys.modules`` in a child)
and the largest cumulative imports ``python -X importtime`` reports for it.

Run: .venv/bin/python bench/bench_startup.py --runs 5
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HEAVY = ("numpy", "pandas", "scipy", "statsmodels", "sqlite_utils", "streamlit", "wordllama", "openai")

# Runs the CLI in-process in a child and reports what it imported (after a marker line on stdout).
PROBE = """
import json, sys
from workbench.cli import main
try:
    main(args=sys.argv[1:], prog_name="workbench")
except SystemExit:
    pass
print("\\n@@modules@@" + json.dumps(sorted(sys.modules)))
"""


def child_env() -> dict[str, str]:
    """The current environment without ``PYTHONDONTWRITEBYTECODE`` (children may write bytecode)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed_run(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds = user + sys of the child, wall seconds) for one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def imported_modules(python: str, args: list[str], env: dict[str, str]) -> set[str]:
    """The modules loaded after ``workbench <args>`` ran in a child interpreter."""
    out = subprocess.run([python, "-c", PROBE, *args], env=env, capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.rsplit("@@modules@@", 1)[1]))


def largest_imports(python: str, args: list[str], env: dict[str, str], top: int) -> list[tuple[int, str]]:
    """The ``top`` largest cumulative import times (microseconds, module) of ``workbench <args>``."""
    err = subprocess.run([python, "-X", "importtime", "-c", PROBE, *args], env=env,
                         capture_output=True, text=True, check=True).stderr
    rows = []
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit():
                rows.append((int(cumulative), name.strip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per command (median printed)")
    parser.add_argument("--workbench", default=str(Path(sys.executable).with_name("workbench")),
                        help="the workbench script to run (default: next to this Python)")
    parser.add_argument("--top", type=int, default=8, help="largest cumulative imports to list")
    opts = parser.parse_args()

    env = child_env()
    print(f"workbench: {opts.workbench}; {opts.runs} timed runs per command after one warm-up; "
          f"PYTHONDONTWRITEBYTECODE unset in the child environment (bytecode cached as when installed)")
    print(f"{'command':<22}{'CPU s (median)':>16}{'wall s (median)':>17}{'CPU s (min-max)':>18}")
    for args in (["--help"], ["--version"]):
        command = [opts.workbench, *args]
        timed_run(command, env)  # warm-up: compiles bytecode, fills the page cache
        runs = [timed_run(command, env) for _ in range(opts.runs)]
        cpu = [c for c, _ in runs]
        wall = [w for _, w in runs]
        print(f"{'workbench ' + args[0]:<22}{statistics.median(cpu):>16.3f}{statistics.median(wall):>17.3f}"
              f"{f'{min(cpu):.3f}-{max(cpu):.3f}':>18}")

    for args in (["--help"], ["--version"]):
        loaded = imported_modules(sys.executable, args, env)
        heavy = [name for name in HEAVY if name in loaded]
        print(f"heavy modules imported by `workbench {args[0]}`: {', '.join(heavy) or 'none'} "
              f"({len(loaded)} modules in all)")
    print("largest cumulative imports of `workbench --help` (python -X importtime, ms):")
    for micros, name in largest_imports(sys.executable, ["--help"], env, opts.top):
        print(f"  {micros / 1000:9.1f}  {name}")


if __name__ == "__main__":
    main()
