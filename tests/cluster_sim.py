"""Simulated clustered labels shared by ``tests/test_cluster_bootstrap.py`` and ``bench/cluster_intervals.py``."""
from __future__ import annotations

import numpy as np

LABELS = ["supported", "unsupported"]


def kappa2(h: np.ndarray, j: np.ndarray) -> float | None:
    """Cohen's kappa of two boolean raters (fast form of ``cohen_kappa`` for the simulation)."""
    n = len(h)
    po = np.count_nonzero(h == j) / n
    ph, pj = np.count_nonzero(h) / n, np.count_nonzero(j) / n
    pe = ph * pj + (1 - ph) * (1 - pj)
    return None if pe >= 1 else (po - pe) / (1 - pe)


def simulate_claims(rng, *, answers, claims, icc, error_rate, prevalence):
    """Human label per claim ~ Bernoulli(prevalence); the judge errs on a claim with probability
    p_i drawn once per answer from Beta(mu s, (1 - mu) s) with s = 1/icc - 1, which gives the error
    indicators mean ``error_rate`` and intra-answer correlation exactly ``icc``."""
    s = 1.0 / icc - 1.0
    p = rng.beta(error_rate * s, (1 - error_rate) * s, size=answers)
    errors = rng.random((answers, claims)) < p[:, None]
    human = rng.random((answers, claims)) < prevalence
    return human.ravel(), (human ^ errors).ravel(), np.repeat(np.arange(answers), claims)


def simulate_raters(rng, *, answers: int = 400, claims: int = 5, icc: float = 0.3, flip_rate: float = 0.15):
    """Three annotators ("ann", "bob", "cy") on ``answers`` x ``claims`` claims: per answer a
    difficulty p_i ~ Beta(flip_rate s, (1 - flip_rate) s), s = 1/icc - 1, is each annotator's chance of
    flipping the true label. Returns ``(raters, clusters, disagreement)``: labels by annotator and
    unit, the answer of each unit, and each unit's share of rater pairs that disagree."""
    s = 1 / icc - 1
    p = rng.beta(flip_rate * s, (1 - flip_rate) * s, size=answers)
    truth = rng.random((answers, claims)) < 0.5
    raters = {}
    for name in ("ann", "bob", "cy"):
        flip = rng.random((answers, claims)) < p[:, None]
        raters[name] = {f"c{a}-{k}": LABELS[int(truth[a, k] ^ flip[a, k])]
                        for a in range(answers) for k in range(claims)}
    units = list(raters["ann"])
    clusters = {u: u.split("-")[0] for u in units}
    disagreement = [sum(raters[x][u] != raters[y][u] for x, y in (("ann", "bob"), ("ann", "cy"), ("bob", "cy"))) / 3
                    for u in units]
    return raters, clusters, disagreement
