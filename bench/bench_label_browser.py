"""Browser benchmark of the Label page on a 10,000-unit store: key press to next unit, cold page.

Builds a temporary store (2,500 items x 4 claim units = 10,000 ``claim_support`` units, one judgment
with a quote per unit, 2,000 earlier labels by another annotator), starts ``workbench app`` on a
loopback port, and drives Debian's chromium with Playwright:

- cold Label page: first visit after the server started, from navigation until the unit, its
  buttons and its evidence are shown and the script run is over;
- key-to-next-unit latency: press "1" and time until the page shows the next unit with the script
  run over, with one annotator, then with two annotators labelling at once (two browsers in two
  processes).

Prints p50/p95 in milliseconds. Run:

    .venv/bin/python bench/bench_label_browser.py [--presses 40] [--port 8512]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from screenshots import CHROMIUM, CHROMIUM_ARGS, app_server  # noqa: E402

CAPTION_JS = """() => {
    const el = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
        .find(e => e.innerText.startsWith('claim_support · unit '));
    return el ? el.innerText : null;
}"""
IDLE = '[data-test-script-state="notRunning"]'
# the page is ready for the next key when the run is over and the shown view's own button exists
READY_JS = """(before) => {
    const el = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
        .find(e => e.innerText.startsWith('claim_support · unit '));
    if (!el || el.innerText === before) return false;
    const view = el.innerText.match(/view (\\d+)$/);
    const button = view && document.querySelector('.st-key-label_pos_' + view[1] + ' button');
    return !!(button && !button.disabled && document.querySelector('[data-test-script-state="notRunning"]'));
}"""


def build_store(path: Path, *, n_items: int = 2500, claims: int = 4, prior_labels: int = 2000) -> int:
    """A store with ``n_items * claims`` claim units, a judgment with a quote on each, prior labels."""
    from workbench import store
    from workbench.types import EvalItem, Judgment, Label, Passage, Unit

    db = store.open_db(path)
    items = [EvalItem(f"q{i:05d}", f"Question {i} about plan renewals?", f"Answer {i}.",
                      tuple(Passage(f"p{i}-{k}", f"Passage {k} of item {i}. Plans renew each year on day {k}. "
                                                 "Refunds take 30 days." * 3) for k in range(4)))
             for i in range(n_items)]
    store.add_items(db, items)
    units = [Unit(Unit.make_id("claim_support", it.id, c), "claim_support", it.id, c,
                  f"Claim {c} of {it.id}: plans renew each year.") for it in items for c in range(claims)]
    store.add_units(db, units, source="bench")
    store.add_judgments(db, [Judgment(u.unit_id, "claim_support", "bench-judge", "supported", 0.8,
                                      quote="Plans renew each year on day 1.") for u in units])
    store.append_labels(db, [Label(u.unit_id, "claim_support", "earlier", "supported") for u in units[:prior_labels]])
    db.close()
    return len(units)


def label_run(url: str, annotator: str, presses: int, *, measure_cold: bool = False) -> dict:
    """Open the Label page as ``annotator`` and press "1" ``presses`` times, each after the page settled."""
    from playwright.sync_api import sync_playwright

    out: dict = {"latencies_ms": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        start = time.perf_counter()
        page.goto(f"{url}?annotator={annotator}")
        page.wait_for_function(READY_JS, arg=None, timeout=120_000)
        page.get_by_text("Evidence").wait_for(timeout=120_000)
        if measure_cold:
            out["cold_ms"] = (time.perf_counter() - start) * 1000
        for _ in range(presses):
            before = page.evaluate(CAPTION_JS)
            t0 = time.perf_counter()
            page.keyboard.press("1")
            page.wait_for_function(READY_JS, arg=before, timeout=60_000, polling=10)
            out["latencies_ms"].append((time.perf_counter() - t0) * 1000)
        browser.close()
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary(name: str, values: list[float]) -> str:
    return (f"{name}: n={len(values)} p50={statistics.median(values):.0f} ms "
            f"p95={percentile(values, 95):.0f} ms max={max(values):.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=40, help="key presses per annotator and phase")
    parser.add_argument("--port", type=int, default=8512)
    parser.add_argument("--worker", nargs=2, metavar=("URL", "ANNOTATOR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(label_run(args.worker[0], args.worker[1], args.presses)))
        return
    folder = Path(tempfile.mkdtemp(prefix="bench_label_"))
    db_file = folder / "labels.db"
    t0 = time.perf_counter()
    n_units = build_store(db_file)
    print(f"store: {n_units} units at {db_file} (built in {time.perf_counter() - t0:.1f} s)")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the server and the workers run as they would for a user
    with app_server(folder, db_file, args.port, timeout=120.0) as url:
        one = label_run(url, "solo", args.presses, measure_cold=True)
        print(f"cold Label page (first visit after start): {one['cold_ms']:.0f} ms")
        print(summary("one annotator, key to next unit", one["latencies_ms"]))
        workers = [subprocess.Popen([sys.executable, __file__, "--presses", str(args.presses), "--worker", url, name],
                                    stdout=subprocess.PIPE, text=True) for name in ("duo-a", "duo-b")]
        both = []
        for worker in workers:
            stdout, _ = worker.communicate(timeout=1800)
            both += json.loads(stdout.strip().splitlines()[-1])["latencies_ms"]
        print(summary("two annotators at once, key to next unit", both))


if __name__ == "__main__":
    main()
