"""Score a file of labelled answers with the offline refusal detector: per author and overall.

Run by hand from the repository root::

    python scripts/score_refusal_file.py FILE [--authors a,b,...] [--repo DIR]

``FILE`` is JSON Lines with ``answer``, ``label`` (``refused`` / ``answered``) and ``kind``, and
optionally ``author`` (an author's raw file, or a bundled data file). Prints, per author and
overall, the refusals caught, the answers left alone and the negative-sounding answers
(``negative_fact``, ``source_negative``) left alone, at the detector's own threshold.

``--repo DIR`` imports the detector from another checkout (for example an older commit, made with
``git worktree add /tmp/old <commit>``), so a detector can be measured on rows written after it
was fitted: the "measured before any fit" figures of the README come from this.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np

NEGATIVE_SOUNDING = ("negative_fact", "source_negative")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--authors", default="", help="comma-separated authors to keep (default: all)")
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the checkout whose detector is used (default: this one)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.repo.resolve()))
    from workbench.formatting import bracketed, percent
    from workbench.jsonl import read_jsonl
    from workbench.judges.offline import OfflineEmbedder
    from workbench.judges.refusal import RefusalDetector

    rows = read_jsonl(args.file)
    keep = {a for a in args.authors.split(",") if a}
    rows = [r for r in rows if not keep or r.get("author", "") in keep]
    if not rows:
        sys.exit(f"{args.file}: no rows (authors kept: {sorted(keep) or 'all'})")
    detector = RefusalDetector(OfflineEmbedder().embed_sync)
    flagged = detector.scores([r["answer"] for r in rows]) >= detector.threshold
    counts: dict[str, Counter] = {}
    for row, refused in zip(rows, flagged):
        for who in (row.get("author", "-"), "all"):
            c = counts.setdefault(who, Counter())
            if row["label"] == "refused":
                c["refusals"] += 1
                c["caught"] += bool(refused)
            else:
                c["answers"] += 1
                c["left"] += not refused
                if row["kind"] in NEGATIVE_SOUNDING:
                    c["negative"] += 1
                    c["negative_left"] += not refused
    print(f"{args.file} scored with the detector of {args.repo} (threshold {detector.threshold}):")
    for who in sorted(counts, key=lambda w: (w == "all", w)):
        c = counts[who]
        print(f"  {who:<12} refusals caught {_share(c, 'caught', 'refusals')}, answers left alone "
              f"{_share(c, 'left', 'answers')}, negative-sounding left alone {_share(c, 'negative_left', 'negative')}")
    if len(counts) > 2:  # two or more authors: how far the overall shares would move with other authors
        caught = author_interval([(r.get("author", "-"), bool(f)) for r, f in zip(rows, flagged)
                                  if r["label"] == "refused"])
        left = author_interval([(r.get("author", "-"), not f) for r, f in zip(rows, flagged)
                                if r["label"] != "refused" and r["kind"] in NEGATIVE_SOUNDING])
        print(f"  all, 95% interval resampling authors ({len(counts) - 1}, 10,000 draws): refusals caught "
              f"{bracketed(caught, percent, '-')}, negative-sounding left alone {bracketed(left, percent, '-')}")


def author_interval(outcomes: list[tuple[str, bool]]) -> tuple[float | None, float | None]:
    """95% bootstrap interval of the share of ``True`` outcomes, resampling whole authors.

    ``outcomes`` holds ``(author, outcome)`` per answer. An author's answers share their habits, so
    the resample draws authors, not answers; the interval is wider than a per-answer binomial one
    when authors differ. Seeded: the same rows always print the same interval.
    """
    from workbench.stats.bootstrap import bootstrap_ci

    if not outcomes:
        return None, None
    authors, hits = zip(*outcomes)
    ci = bootstrap_ci(lambda h: float(np.mean(h)), np.array(hits, float), rng=np.random.default_rng(0),
                      n_boot=10_000, clusters=list(authors))
    return ci.low, ci.high


def _share(counts: Counter, part: str, whole: str) -> str:
    """``part/whole (percent)``, or ``-`` when there is no ``whole``."""
    return f"{counts[part]}/{counts[whole]} ({counts[part] / counts[whole]:.1%})" if counts[whole] else "-"


if __name__ == "__main__":
    main()
