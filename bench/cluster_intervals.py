"""Clustered against claim-level bootstrap intervals: coverage, width, and the bundled sets.

1. Simulation (coverage): claim data where the judge's errors share a per-answer rate (intra-answer
   correlation ``--icc``), ``--answers`` answers x ``--claims`` claims, error rate 0.2, prevalence
   0.5 (true kappa 0.6). For ``--reps`` data sets the 95% kappa interval is computed twice with the
   one resampling helper (``workbench.stats.bootstrap_ci``): resampling answers (clusters) and
   resampling claims. Prints each interval's coverage of 0.6 and the mean width ratio against
   the design-effect factor ``sqrt(1 + (m - 1) * icc)``.
2. Simulation (multi-rater): three annotators on 400 answers x 5 claims with a per-answer
   difficulty; the human ceiling's alpha interval resampling answers against resampling claims,
   beside the factor predicted from the measured ICC of each claim's disagreement.
3. Bundled sets (``--db``, default: build the demo store in a temporary folder with the offline
   judge): the human ceiling and each judge's kappa with the interval ``agreement`` now reports
   (answers resampled for claim tasks) beside the claim-level interval (what it reported before).

Run: .venv/bin/python bench/cluster_intervals.py [--reps 400] [--db runs/demo/labels.db]
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from cluster_sim import LABELS, kappa2, simulate_claims, simulate_raters  # noqa: E402

from workbench.stats import agreement_with_ci, bootstrap_ci, design_effect, human_agreement, icc_oneway  # noqa: E402


def coverage(args) -> None:
    rng = np.random.default_rng(args.seed)
    hit_c = hit_u = 0
    ratios = []
    started = time.perf_counter()
    for _ in range(args.reps):
        h, j, clusters = simulate_claims(rng, answers=args.answers, claims=args.claims, icc=args.icc,
                                         error_rate=0.2, prevalence=0.5)
        c = bootstrap_ci(kappa2, h, j, rng=rng, n_boot=args.n_boot, clusters=clusters)
        u = bootstrap_ci(kappa2, h, j, rng=rng, n_boot=args.n_boot)
        hit_c += c.low <= 0.6 <= c.high
        hit_u += u.low <= 0.6 <= u.high
        ratios.append((c.high - c.low) / (u.high - u.low))
    se = math.sqrt(0.95 * 0.05 / args.reps)
    print(f"simulation: {args.reps} sets of {args.answers} answers x {args.claims} claims, intra-answer "
          f"correlation {args.icc}, {args.n_boot} resamples ({time.perf_counter() - started:.1f} s)")
    print(f"  95% coverage of the true kappa 0.6: answers resampled {hit_c / args.reps:.3f}, "
          f"claims resampled {hit_u / args.reps:.3f}  (Monte Carlo s.e. ~{se:.3f})")
    print(f"  width ratio clustered / claim-level {np.mean(ratios):.3f}; design effect predicts "
          f"{math.sqrt(design_effect(args.claims, args.icc)):.3f}")


def multi_rater() -> None:
    answers, m = 400, 5
    raters, clusters, dis = simulate_raters(np.random.default_rng(7), answers=answers, claims=m)
    units = list(raters["ann"])
    icc = icc_oneway(dis, [clusters[u] for u in units])
    naive = human_agreement(raters, labels=LABELS, rng=np.random.default_rng(1), n_boot=1000)
    clust = human_agreement(raters, labels=LABELS, rng=np.random.default_rng(1), n_boot=1000, clusters=clusters)
    w = lambda ci: ci[1] - ci[0]  # noqa: E731
    print(f"multi-rater simulation: 3 annotators, {answers} answers x {m} claims, disagreement ICC {icc:.3f}")
    print(f"  alpha {naive['alpha']:.3f}: claim-level [{naive['alpha_ci'][0]:.3f}, {naive['alpha_ci'][1]:.3f}], "
          f"answers resampled [{clust['alpha_ci'][0]:.3f}, {clust['alpha_ci'][1]:.3f}]; width ratio "
          f"{w(clust['alpha_ci']) / w(naive['alpha_ci']):.3f}, design effect predicts "
          f"{math.sqrt(design_effect(m, icc)):.3f}")


def bundled(db_path: str | None) -> None:
    from workbench import store
    from workbench.calibration.agreement import (
        _human_labels,
        _majority,
        _verdicts_by_judge,
        agreement_report,
        unit_clusters,
    )
    from workbench.types import TASK_VALUES

    tmp = None
    if db_path is None:
        from workbench.demo.run import run_demo

        tmp = tempfile.TemporaryDirectory()
        run_demo(Path(tmp.name), echo=lambda *_: None)
        db_path = str(Path(tmp.name) / "labels.db")
    db = store.open_db(db_path)
    report = agreement_report(db, rng=np.random.default_rng(0), n_boot=1000)
    fmt = lambda ci: "[n/a]" if ci[0] is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"  # noqa: E731
    print(f"bundled sets ({db_path}; `workbench agreement --db {db_path} --json`, seed 0, 1000 resamples)")
    for task, block in report.items():
        if not block:
            continue
        clusters = unit_clusters(db, task)
        line = f"  {task:<20} clustered_by={block['clustered_by']}"
        if block["human"]["alpha"] is not None:
            line += f"  human alpha {block['human']['alpha']:.3f} {fmt(block['human']['alpha_ci'])}"
        print(line)
        majority, _ = _majority(_human_labels(db, task))
        for fp, j in block["judges"].items():
            text = f"    {fp[:40]:<40} n={j['n']:<5} kappa {j['kappa']:.3f} {fmt(j['kappa_ci'])}"
            if clusters is not None:
                verdicts = _verdicts_by_judge(db, task)[fp]
                common = [u for u in majority if u in verdicts]
                naive = agreement_with_ci([majority[u] for u in common], [verdicts[u].value for u in common],
                                          labels=TASK_VALUES[task], rng=np.random.default_rng(0), n_boot=1000)
                sizes = np.bincount(np.unique([clusters[u] for u in common], return_inverse=True)[1])
                text += (f"; claim-level {fmt(naive['kappa_ci'])}; {len(sizes)} answers, "
                         f"{sizes.mean():.2f} labelled claims per answer")
            print(text)
    db.conn.close()
    if tmp is not None:
        tmp.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--n-boot", type=int, default=200)
    parser.add_argument("--answers", type=int, default=300)
    parser.add_argument("--claims", type=int, default=3)
    parser.add_argument("--icc", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db", default=None, help="label store (default: build the demo store)")
    parser.add_argument("--skip-bundled", action="store_true")
    args = parser.parse_args()
    coverage(args)
    multi_rater()
    if not args.skip_bundled:
        bundled(args.db)


if __name__ == "__main__":
    main()
