"""How many human labels until the judge's kappa interval is narrower than 0.10: random vs "helps most" order.

Data: the bundled WiCE claims (``data/wice_claims.jsonl`` + ``data/wice_labels.jsonl``), held-out
half only (the offline judge's weights were fitted on the other half), scored by the offline
judge (``OfflineJudge.verify_sync``, threshold 0.5 = its default). The ~175 held-out claims are too
few to ever reach a 0.10-wide kappa interval, so the simulation builds a larger pool of units
with a **realistic simulated judge**: each unit's human label is drawn at the measured WiCE
prevalence, and its judge score is resampled from the offline judge's real scores on held-out
WiCE claims with the same human label (plus N(0, 0.02) jitter), so the pool reproduces the
measured agreement. A second judge of the same quality (an independent resample) feeds the
"two judges disagree" key.

Orders compared (``workbench.stats.active.priority_order``):
  random       - a fresh shuffle per replicate
  helps-most   - nearest the threshold first (the judge least confident)
  helps-most-2 - two judges disagreeing first, then nearest the threshold

For each order the first n (checked every --step labels) where the bootstrap 95% CI of Cohen's
kappa (judge verdict vs human label on the first n units; 2x2 cells resampled as one multinomial,
the same as resampling units) is narrower than --target is recorded; the script prints the
median and quartiles over --replicates pools, plus the kappa the labelled units give at that
point against the pool's true kappa (a non-random order measures agreement on a biased sample).

Run: .venv/bin/python bench/label_efficiency.py [--pool 4000] [--replicates 20] [--step 10]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from workbench.demo import public_sets
from workbench.judges.offline import OfflineJudge
from workbench.judges.offline_features import split_of
from workbench.stats.active import priority_order

THRESHOLD = 0.5


def wice_heldout_scores() -> tuple[np.ndarray, np.ndarray]:
    """Offline judge scores and human labels (supported = True) on held-out WiCE claims."""
    items = {i.id: i for i in public_sets.wice_items() if split_of(i.id) == "test"}
    texts = {(u["item_id"], u["claim_index"]): u["text"] for u in public_sets.wice_claim_units()}
    judge = OfflineJudge()
    scores, human = [], []
    for row in public_sets.wice_labels():
        item = items.get(row["item_id"])
        if item is None:
            continue
        scores.append(judge.verify_sync(texts[(row["item_id"], row["claim_index"])], item.contexts).score)
        human.append(row["value"] == "supported")
    return np.asarray(scores, dtype=float), np.asarray(human, dtype=bool)


def kappa_cells(tp, fn, fp, tn):
    """Cohen's kappa from 2x2 counts (arrays ok); NaN when chance agreement is 1."""
    n = tp + fn + fp + tn
    po = (tp + tn) / n
    pe = ((tp + fn) * (tp + fp) + (fp + tn) * (fn + tn)) / (n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def kappa_ci_width(human: np.ndarray, judge: np.ndarray, *, rng: np.random.Generator, n_boot: int) -> float:
    """Width of the percentile bootstrap 95% CI of kappa (inf when undefined)."""
    cells = np.array([(human & judge).sum(), (human & ~judge).sum(), (~human & judge).sum(), (~human & ~judge).sum()])
    n = cells.sum()
    draws = rng.multinomial(n, cells / n, size=n_boot)
    k = kappa_cells(*draws.T.astype(float))
    k = k[np.isfinite(k)]
    if len(k) < n_boot / 2:
        return float("inf")
    lo, hi = np.quantile(k, [0.025, 0.975])
    return float(hi - lo)


def labels_needed(order: list[int], human: np.ndarray, judge: np.ndarray, *, target: float, step: int,
                  rng: np.random.Generator, n_boot: int) -> tuple[int | None, float | None]:
    """First n (multiple of ``step``) whose kappa CI is narrower than ``target``, and kappa there."""
    idx = np.asarray(order)
    h, j = human[idx], judge[idx]
    for n in range(step, len(idx) + 1, step):
        if kappa_ci_width(h[:n], j[:n], rng=rng, n_boot=n_boot) < target:
            tp, fn = (h[:n] & j[:n]).sum(), (h[:n] & ~j[:n]).sum()
            fp, tn = (~h[:n] & j[:n]).sum(), (~h[:n] & ~j[:n]).sum()
            return n, float(kappa_cells(float(tp), float(fn), float(fp), float(tn)))
    return None, None


def simulate_pool(scores: np.ndarray, human: np.ndarray, size: int, rng: np.random.Generator):
    """A pool of ``size`` units: human labels at the measured prevalence, two judges' scores
    resampled from the real scores of the same human class (independent draws), jittered."""
    pool_human = rng.random(size) < human.mean()
    pos, neg = scores[human], scores[~human]

    def draw():
        s = np.where(pool_human, rng.choice(pos, size=size), rng.choice(neg, size=size))
        return np.clip(s + rng.normal(0.0, 0.02, size=size), 0.0, 1.0)

    return pool_human, draw(), draw()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=int, default=4000, help="simulated units per replicate")
    parser.add_argument("--replicates", type=int, default=20)
    parser.add_argument("--step", type=int, default=10, help="check the CI every STEP labels")
    parser.add_argument("--target", type=float, default=0.10, help="kappa CI width to reach")
    parser.add_argument("--n-boot", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()

    scores, human = wice_heldout_scores()
    judge = scores >= THRESHOLD
    tp, fn, fp, tn = (human & judge).sum(), (human & ~judge).sum(), (~human & judge).sum(), (~human & ~judge).sum()
    wice_kappa = float(kappa_cells(float(tp), float(fn), float(fp), float(tn)))
    width_all = kappa_ci_width(human, judge, rng=rng, n_boot=2000)
    print(f"WiCE held-out claims: n={len(human)}, supported {human.mean():.1%}, offline judge at {THRESHOLD}: "
          f"kappa {wice_kappa:.3f}, 95% CI width with ALL {len(human)} labels {width_all:.3f} "
          f"(> {args.target}: the real set is too small, so the pool below is simulated from it)")

    results: dict[str, list] = {"random": [], "helps-most": [], "helps-most-2": []}
    pool_kappas = []
    for _ in range(args.replicates):
        ph, s1, s2 = simulate_pool(scores, human, args.pool, rng)
        j1 = s1 >= THRESHOLD
        c = [(ph & j1).sum(), (ph & ~j1).sum(), (~ph & j1).sum(), (~ph & ~j1).sum()]
        pool_kappas.append(float(kappa_cells(*map(float, c))))
        orders = {"random": list(rng.permutation(args.pool)),
                  "helps-most": priority_order(list(s1), threshold=THRESHOLD),
                  "helps-most-2": priority_order(list(s1), threshold=THRESHOLD, second_scores=list(s2))}
        for name, order in orders.items():
            results[name].append(labels_needed(order, ph, j1, target=args.target, step=args.step, rng=rng,
                                               n_boot=args.n_boot))

    print(f"simulated pools: {args.replicates} x {args.pool} units, pool kappa "
          f"{np.mean(pool_kappas):.3f} (sd {np.std(pool_kappas):.3f}); target kappa 95% CI width < {args.target}")
    print(f"{'order':<14} {'labels needed: median':>22} {'[q1, q3]':>16} {'reached':>8} {'kappa there (vs pool)':>24}")
    for name, rows in results.items():
        ns = np.array([n for n, _ in rows if n is not None], dtype=float)
        ks = np.array([k for n, k in rows if n is not None], dtype=float)
        reached = f"{len(ns)}/{len(rows)}"
        if len(ns):
            q1, med, q3 = np.quantile(ns, [0.25, 0.5, 0.75])
            print(f"{name:<14} {med:>22.0f} {f'[{q1:.0f}, {q3:.0f}]':>16} {reached:>8} "
                  f"{f'{ks.mean():.3f} ({np.mean(pool_kappas):.3f})':>24}")
        else:
            print(f"{name:<14} {'never (whole pool)':>22} {'':>16} {reached:>8}")
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
