"""Measure the offline judge's answer relevance against people; store the figure with its declaration.

Run by hand from the repository root::

    .venv/bin/python scripts/measure_offline_relevance.py [--out workbench/judges/offline_relevance_baseline.json] [--dry-run]

Data: ``data/alce_relevance.jsonl`` (ALCE ASQA human utility ratings, 400 answers; relevant =
utility 4 or 5). Each answer is scored exactly as ``workbench score`` scores it with the offline
judge (``metrics.relevance.answer_relevance``: the answer's own sentences embedded with the
bundled wordllama model, mean cosine to the question). Printed and stored: the threshold-free
AUC with its Mann-Whitney p-value (``stats.calibration.score_auc``), Cohen's kappa at the
default threshold (``Thresholds().answer_relevance``), and the best kappa over all thresholds
(optimistic: chosen on the same labels). Nothing here is fitted, so there is no split.
The offline judge reads the stored file to declare its relevance score a placeholder, with
this AUC beside it (``OfflineJudge.score_declarations``).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from workbench.demo import public_sets  # noqa: E402
from workbench.judges.offline import (  # noqa: E402
    DEFAULT_RELEVANCE_BASELINE_PATH,  # noqa: E402
    OfflineEmbedder,
    OfflineJudge,
)
from workbench.metrics.relevance import answer_relevance  # noqa: E402
from workbench.stats.agreement import cohen_kappa  # noqa: E402
from workbench.stats.calibration import score_auc, threshold_sweep  # noqa: E402
from workbench.types import Thresholds  # noqa: E402


async def _scores(rows: list[dict]) -> list[float | None]:
    embedder = OfflineEmbedder()
    judge = OfflineJudge(embedder)
    return [(await answer_relevance(r["question"], r["answer"], judge, embedder)).score for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_RELEVANCE_BASELINE_PATH)
    parser.add_argument("--dry-run", action="store_true", help="print the figures, write nothing")
    args = parser.parse_args()

    rows = public_sets.alce_rows()
    scores = asyncio.run(_scores(rows))
    kept = [(s, int(r["utility"]) >= 4) for s, r in zip(scores, rows) if s is not None]
    s = np.array([k[0] for k in kept])
    y = np.array([k[1] for k in kept])
    auc, p_value = score_auc(s, y)
    threshold = Thresholds().answer_relevance
    kappa_default = cohen_kappa(list(y), list(s >= threshold))
    best = max((p for p in threshold_sweep(s, y) if p.kappa is not None), key=lambda p: p.kappa)
    figures = {
        "score": "answer_relevance",
        "data": "data/alce_relevance.jsonl (ALCE ASQA human utility ratings; relevant = utility >= 4)",
        "n": int(len(s)), "unscored": int(len(rows) - len(s)), "relevant": int(y.sum()),
        "auc": round(auc, 3), "auc_p_value": float(f"{p_value:.3g}"),
        "default_threshold": threshold, "kappa_at_default_threshold": round(float(kappa_default), 3),
        "best_kappa_any_threshold": round(float(best.kappa), 3), "best_threshold": round(float(best.threshold), 3),
        "command": "python scripts/measure_offline_relevance.py",
    }
    print(f"offline answer relevance vs ALCE human utility (n={figures['n']}, {figures['relevant']} relevant, "
          f"{figures['unscored']} unscored):")
    print(f"  AUC {figures['auc']:.3f} (Mann-Whitney p = {figures['auc_p_value']:.3g}; 0.5 = no signal)")
    print(f"  kappa at the default threshold {threshold}: {figures['kappa_at_default_threshold']:.3f}")
    print(f"  best kappa over all thresholds (optimistic, chosen on these labels): "
          f"{figures['best_kappa_any_threshold']:.3f} at {figures['best_threshold']}")
    if args.dry_run:
        print("--dry-run: nothing written")
        return
    args.out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
