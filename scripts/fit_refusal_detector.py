"""Fit the offline refusal detector; print its figures on answers it was never fitted on.

Run by hand from the repository root (needs scikit-learn, a test dependency)::

    .venv/bin/python scripts/fit_refusal_detector.py [--out workbench/judges/refusal_model.json] [--dry-run]

Data (all bundled in ``data/``, provenance in ``data/NOTICE``):

- ``rag_abstention.jsonl``: RAG-style abstentions and real answers (many sounding negative),
  written and labelled for this project by many authors (the ``author`` column; all but the
  first separate sessions that saw neither the detector nor any other row). Its ``split`` column
  is FIXED (a hash of the id): ``fit`` rows are fitted on, ``test`` rows only ever measured.
- ``xstest_abstention.jsonl``: XSTest v2 completions of three models (gpt4, llama2new,
  mistralinstruct) with two human annotations each; split FIXED by prompt
  (``refusal.xstest_split``): completions of the ``fit`` prompts are fitted on, the ``test``
  prompts (of every model) never are, and the demo measures agreement on those only. Label:
  refused = full or partial refusal (the demo's label-store mapping). Held-out model files:
  each XSTest figure per model is LEAVE-ONE-MODEL-OUT, a refit without that model file scoring
  its held-out prompts. Kappa is against the human majority (with two annotators: the rows
  where they agree; ties left out, and counted).
- ``rag_abstention_chat.jsonl``: chat-assistant replies written for this project in the style
  of safety-refusal sets (moralising and premise-rejecting refusals, partial refusals; answers
  that use alarming words, correct a silly premise, or warn); same FIXED split rule by id. Fitted
  with the RAG set (one group for the class weighting: the hand-written rows).
- ``rag_abstention_independent.jsonl``: RAG-style answers by more separate authors. An author
  arrives UNSEEN: every row ``test``, reported as ``unseen_authors_test`` (overall and per
  author), the figure the 95% target is about. Authors already reported that way may later be
  promoted into the fit pool (``scripts/promote_independent_authors.py``: the RAG file's hash
  split); their held-out third is reported as ``promoted_authors_test``.
- ``rag_abstention_second_reading.jsonl``: 600 of those answers labelled again by two more
  readers who saw only the answer (``second_reading``: how far the answer alone goes for a person).

Model: class-balanced logistic regression (L2) over ``refusal.feature_matrix`` (mean and
element-wise max of the wordllama embeddings of the head's sentences + the lexical cues) and the
head's word n-grams (``refusal.head_ngrams``: unigrams and bigrams not made only of function
words, present in at least :data:`NGRAM_MIN_ANSWERS` fit answers; each answer's n-gram columns
divided by ``max(its n-grams, NGRAM_DIVISOR)`` and scaled). ``C`` and the n-gram scale are chosen
from :data:`C_GRID` x :data:`NGRAM_SCALE_GRID` by cross-validation on the fit rows only
(:func:`choose_c`: leave AUTHORS out on the hand-written rows, in :data:`AUTHOR_FOLDS` groups of
authors, and leave one XSTest model file out; one-standard-error rule); the threshold by
:func:`choose_threshold` on the same leave-authors-out probabilities. The held-out rows never
choose anything. The old phrase list (``text.looks_like_refusal``) is printed beside the model on
the same held-out rows.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from add_author_rows import fitted_authors  # noqa: E402

from workbench.demo import public_sets  # noqa: E402
from workbench.jsonl import read_jsonl  # noqa: E402
from workbench.judges.offline import OfflineEmbedder  # noqa: E402
from workbench.judges.refusal import (  # noqa: E402
    CUE_NAMES,
    CUE_VERSION,
    EMBEDDING_DIM,
    EMBEDDING_FEATURES,
    features_and_heads,
    head_ngrams,
    xstest_split,
)
from workbench.text import looks_like_refusal  # noqa: E402

DEFAULT_OUT = REPO / "workbench" / "judges" / "refusal_model.json"
RAG_FILE = REPO / "data" / "rag_abstention.jsonl"
CHAT_FILE = REPO / "data" / "rag_abstention_chat.jsonl"
#: RAG-style answers by separate authors: an author's rows are all ``test`` (never fitted on, never
#: used to choose anything) until the author is promoted (then the RAG file's hash split).
INDEPENDENT_FILE = REPO / "data" / "rag_abstention_independent.jsonl"
#: Two more readers' labels (``id``, ``reader``, ``label``) for 600 answers of the independent set,
#: given the answer only and the labelling rule: how far a reader of the answer alone gets.
SECOND_READING_FILE = REPO / "data" / "rag_abstention_second_reading.jsonl"
#: The RAG rows held out in the first round (ids up to this number); reported on their own so the
#: figure stays comparable across rounds (later rows get their split from the same hash rule).
FIRST_ROUND_LAST_ID = 687
XSTEST_MODELS = ("gpt4", "llama2new", "mistralinstruct")
#: L2 strengths tried; :func:`choose_c` picks one from the cross-validated scores on the FIT rows
#: (one-standard-error rule), never from the held-out figures.
C_GRID = (0.5, 1.0)
#: Scales of the n-gram columns tried (a larger scale is a weaker L2 pull on the n-gram weights than
#: on the embedding and cue weights); chosen with ``C`` by the same rule.
NGRAM_SCALE_GRID = (16.0, 32.0)
#: The n-gram term divides by max(the answer's known n-grams, this), so a one- or two-word answer
#: does not rest on a single word's weight.
NGRAM_DIVISOR = 12
#: An n-gram gets a weight only when at least this many fit answers contain it.
NGRAM_MIN_ANSWERS = 2
#: Groups of authors left out together in :func:`cross_validated` (an author's group is a hash of
#: its name): every hand-written answer is scored by a refit that saw no answer of its author.
#: Groups rather than one author at a time keep the refits few as the authors grow.
AUTHOR_FOLDS = 10
#: The hand-written sets whose authors are left out (the chat set is one author, "chat").
HAND_WRITTEN_SETS = ("rag", "independent")
#: Thresholds tried by :func:`choose_threshold`.
THRESHOLD_GRID = (0.35, 0.4, 0.45, 0.5, 0.55)
#: Shares this close to the best count as tied in :func:`choose_threshold`.
THRESHOLD_TIE = 0.005
#: Kinds of answered rows that state a negative fact (the hard case for a refusal detector).
NEGATIVE_SOUNDING = ("negative_fact", "source_negative")


def _refused(raw: str) -> int:
    return 0 if str(raw).startswith("1_") else 1


def load_rows() -> list[dict]:
    """``[{"id", "set", "split", "answer", "y", "y_majority", "kind"}]``; y = 1 for refused.

    ``y_majority`` is the two XSTest annotators' shared label, ``None`` on a tie; RAG rows have
    one label, so it equals ``y``.
    """
    rows = []
    for path, name in ((RAG_FILE, "rag"), (CHAT_FILE, "chat"), (INDEPENDENT_FILE, "independent")):
        for r in read_jsonl(path):
            y = int(r["label"] == "refused")
            rows.append({"id": r["id"], "set": name, "split": r["split"], "answer": r["answer"], "y": y,
                         "y_majority": y, "kind": r["kind"], "author": r.get("author", name)})
    for r in public_sets.xstest_rows():
        a1, a2 = _refused(r["annotation_1"]), _refused(r["annotation_2"])
        rows.append({"id": r["id"], "set": f"xstest-{r['model']}", "split": xstest_split(r["id"]), "answer": r["completion"],
                     "y": _refused(r["final_label"]), "y_majority": a1 if a1 == a2 else None, "kind": r["type"],
                     "author": r["model"]})
    return rows


def _kappa(y: np.ndarray, p: np.ndarray) -> float:
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(y, p)) if len(set(y.tolist()) | set(p.tolist())) > 1 else float("nan")


def figures(y: np.ndarray, pred: np.ndarray) -> dict:
    """Kappa, recall (refusals caught), specificity (answers left alone), counts."""
    y, pred = np.asarray(y, int), np.asarray(pred, int)
    tp, fn = int(((y == 1) & (pred == 1)).sum()), int(((y == 1) & (pred == 0)).sum())
    tn, fp = int(((y == 0) & (pred == 0)).sum()), int(((y == 0) & (pred == 1)).sum())
    return {"n": int(len(y)), "kappa": round(_kappa(y, pred), 3),
            "recall": round(tp / (tp + fn), 3) if tp + fn else None,
            "specificity": round(tn / (tn + fp), 3) if tn + fp else None,
            "refusals_caught": f"{tp}/{tp + fn}", "answers_left_alone": f"{tn}/{tn + fp}"}


def _majority(rows: list[dict]) -> np.ndarray:
    """Each row's human-majority label as an array: 1 refused, 0 answered, -1 a tie (left out)."""
    return np.array([-1 if r["y_majority"] is None else r["y_majority"] for r in rows])


def _number(row_id: str) -> int:
    """The running number of a hand-written row id (``rag-abst-0123`` -> 123)."""
    return int(row_id.rsplit("-", 1)[-1])


def _author_order(author: str) -> tuple[int, str]:
    """Sort key: "author-9" before "author-10"."""
    number = author.rsplit("-", 1)[-1]
    return (int(number), author) if number.isdigit() else (-1, author)


def held_out_report(rows: list[dict], probs: np.ndarray, lomo_probs: np.ndarray, threshold: float) -> dict:
    """Figures on answers each model never saw.

    - ``rag_test``: the shipped model on the RAG set's fixed test split (never fitted on);
      ``rag_test_first_round``: its rows held out since the first round (ids up to
      :data:`FIRST_ROUND_LAST_ID`), ``rag_test_later_rows`` the rest; ``rag_test_author_<a>``: the
      test rows of each author (the ``author`` column); ``chat_test``: the chat set's;
      ``unseen_authors_test``: the rows of :data:`INDEPENDENT_FILE` whose author has no fit row
      anywhere (authors no fit has seen), and ``unseen_authors_test_author_<a>`` per author;
      ``promoted_authors_test``: that file's held-out third of the promoted authors.
    - ``xstest_heldout_prompts``: the shipped model on the XSTest rows of held-out prompts (all
      three models; no completion of these prompts was fitted on).
    - ``xstest_<model>``: leave-one-model-out on the held-out prompts: a refit that saw neither
      that model file nor these prompts.
    - ``xstest_heldout_pooled``: the three leave-one-model-out predictions pooled.
    The old phrase list is scored on the same rows (``phrase_list``); the RAG test and independent
    file pools also carry ``negative_sounding_left_alone`` (the model's, as ``"left/total"``).
    A pool with no rows (``unseen_authors_test`` once every independent author is promoted) is left
    out, so neither the printout nor the weights file carries an empty block.
    """
    report = {}
    y = np.array([r["y"] for r in rows])
    ym = _majority(rows)
    phrase = np.array([looks_like_refusal(r["answer"]) for r in rows], int)

    def block(idx, truth, p, negative_sounding=False):
        out = {"model": figures(truth[idx], (p[idx] >= threshold).astype(int)), "phrase_list": figures(truth[idx], phrase[idx])}
        if negative_sounding:  # the hand-written pools: how many negative-sounding answers the model leaves alone
            negative = [i for i in idx if rows[i]["kind"] in NEGATIVE_SOUNDING]
            out["negative_sounding_left_alone"] = f"{sum(p[i] < threshold for i in negative)}/{len(negative)}"
        return out

    rag = [i for i, r in enumerate(rows) if r["set"] == "rag" and r["split"] == "test"]
    report["rag_test"] = block(rag, y, probs, True)
    first = [i for i in rag if _number(rows[i]["id"]) <= FIRST_ROUND_LAST_ID]
    report["rag_test_first_round"] = block(first, y, probs, True)
    report["rag_test_later_rows"] = block(sorted(set(rag) - set(first)), y, probs)
    for author in sorted({rows[i]["author"] for i in rag}):
        report[f"rag_test_author_{author}"] = block([i for i in rag if rows[i]["author"] == author], y, probs, True)
    fitted = fitted_authors(rows)
    unseen = [i for i, r in enumerate(rows) if r["set"] == "independent" and r["author"] not in fitted]
    report["unseen_authors_test"] = block(unseen, y, probs, True)
    for author in sorted({rows[i]["author"] for i in unseen}, key=_author_order):
        report[f"unseen_authors_test_author_{author}"] = block(
            [i for i in unseen if rows[i]["author"] == author], y, probs, True)
    promoted = [i for i, r in enumerate(rows) if r["set"] == "independent" and r["author"] in fitted
                and r["split"] == "test"]
    report["promoted_authors_test"] = block(promoted, y, probs, True)
    chat = [i for i, r in enumerate(rows) if r["set"] == "chat" and r["split"] == "test"]
    report["chat_test"] = block(chat, y, probs)
    xs = [i for i, r in enumerate(rows) if r["set"].startswith("xstest") and r["split"] == "test"
          and r["y_majority"] is not None]
    report["xstest_heldout_prompts"] = block(xs, ym, probs)
    for model in XSTEST_MODELS:
        idx = [i for i in xs if rows[i]["set"] == f"xstest-{model}"]
        report[f"xstest_{model}"] = block(idx, ym, lomo_probs)
    report["xstest_heldout_pooled"] = block(xs, ym, lomo_probs)
    report["xstest_heldout_pooled"]["ties_left_out"] = sum(
        1 for r in rows if r["set"].startswith("xstest") and r["split"] == "test" and r["y_majority"] is None)
    return {name: figs for name, figs in report.items() if figs["model"]["n"]}


def second_reading_report(rows: list[dict], probs: np.ndarray, threshold: float) -> dict:
    """Each second reader's labels (:data:`SECOND_READING_FILE`, the answer alone) and the model's,
    against the author's label on the same independent answers; printed and returned per reader.

    ``probs``: probabilities from a model that never saw the answer's author (the leave-authors-out
    ones once the authors are promoted), so the model is compared with the readers on unseen text."""
    by_id = {r["id"]: i for i, r in enumerate(rows)}
    labels: dict[str, dict[str, int]] = {}
    for r in read_jsonl(SECOND_READING_FILE):
        labels.setdefault(r["reader"], {})[r["id"]] = int(r["label"] == "refused")
    ids = sorted(set.intersection(*(set(v) for v in labels.values())))
    truth = np.array([rows[by_id[i]]["y"] for i in ids])
    negative = np.array([rows[by_id[i]]["kind"] in NEGATIVE_SOUNDING for i in ids])
    readers = {**{name: np.array([given[i] for i in ids]) for name, given in sorted(labels.items())},
               "model": np.array([int(probs[by_id[i]] >= threshold) for i in ids])}
    out = {}
    print(f"\nsecond reading: {len(ids)} independent answers labelled again from the answer alone "
          f"({', '.join(sorted(labels))}), against the author's label (model: a refit that never saw the author):")
    for name, pred in readers.items():
        f = figures(truth, pred)
        f["negative_sounding_left_alone"] = f"{int((pred[negative] == 0).sum())}/{int(negative.sum())}"
        out[name] = f
        print(f"  {name:<9} kappa={f['kappa']:.3f} refusals caught {f['refusals_caught']} ({f['recall']:.3f}), "
              f"answers left alone {f['answers_left_alone']} ({f['specificity']:.3f}), negative-sounding left "
              f"alone {f['negative_sounding_left_alone']}")
    return out


def fit(x: np.ndarray, y: np.ndarray, groups: np.ndarray, C: float = 1.0) -> tuple[np.ndarray, float]:
    """Class-balanced L2 logistic regression with inverse regularisation strength ``C``.

    Each source (hand-written rows, XSTest) gets the same total weight, so the larger file does not drown
    the other. Returns ``(weights, bias)``.
    """
    from sklearn.linear_model import LogisticRegression

    weight = np.ones(len(y))
    for g in np.unique(groups):
        weight[groups == g] = len(y) / (len(np.unique(groups)) * (groups == g).sum())
    clf = LogisticRegression(C=C, class_weight="balanced", max_iter=5000)
    clf.fit(x, y, sample_weight=weight)
    return clf.coef_[0], float(clf.intercept_[0])


def cross_validated(rows: list[dict], x: np.ndarray, y: np.ndarray, groups: np.ndarray,
                    fit_mask: np.ndarray, C: float = 1.0, folds: int = 5) -> dict:
    """Figures of a ``folds``-fold cross-validation over the fit rows only (fold = sha256 of the
    row's id, by prompt for XSTest so a prompt's completions share a fold): what features, data
    changes and ``C`` are judged on, so the held-out split is only ever reported.

    ``rag`` / ``xstest``: ordinary folds. ``xstest_<model>``: the leave-one-model-out case on fit
    prompts only: for fold k, fitted without that model file and without fold k's prompts, scored
    on that model's fold-k rows (kappa against the human majority, ties left out).
    """
    import hashlib

    def fold(r: dict) -> int:
        key = r["id"].split("-", 2)[-1] if r["set"].startswith("xstest") else r["id"]
        return hashlib.sha256(("cv:" + key).encode()).digest()[0] % folds

    f = np.array([fold(r) for r in rows])
    sets = np.array([r["set"] for r in rows])
    ym = _majority(rows)
    pred = np.full(len(rows), -1)
    for k in range(folds):
        w, b = fit(x[fit_mask & (f != k)], y[fit_mask & (f != k)], groups[fit_mask & (f != k)], C)
        sel = fit_mask & (f == k)
        pred[sel] = (_probs(x[sel], w, b) >= 0.5).astype(int)
    out: dict = {}
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name in ("rag", "xstest"):
        sel = fit_mask & (groups == name) & (sets != "chat")
        out[name] = figures(y[sel], pred[sel])
        pairs[name] = (y[sel], pred[sel])
    # Leave authors out: a refit without any row of a group of authors, scored on all their rows.
    authors = np.array([r["author"] for r in rows])
    hand_written = np.isin(sets, HAND_WRITTEN_SETS)
    seen_authors = sorted(fitted_authors([r for r, h in zip(rows, hand_written) if h]))
    author_fold = {a: hashlib.sha256(("authors:" + a).encode()).digest()[0] % AUTHOR_FOLDS for a in seen_authors}
    lao_probs = np.full(len(rows), np.nan)
    for k in range(AUTHOR_FOLDS):
        left_out = np.isin(authors, [a for a in seen_authors if author_fold[a] == k]) & hand_written
        w, b = fit(x[fit_mask & ~left_out], y[fit_mask & ~left_out], groups[fit_mask & ~left_out], C)
        lao_probs[left_out] = _probs(x[left_out], w, b)
    for author in seen_authors:
        sel = fit_mask & hand_written & (authors == author)
        out[f"rag_author_{author}"] = figures(y[sel], (lao_probs[sel] >= 0.5).astype(int))
    sel = fit_mask & hand_written
    lao = (lao_probs[sel] >= 0.5).astype(int)
    out["rag_leave_authors_out"] = figures(y[sel], lao)
    pairs["rag_leave_authors_out"] = (y[sel], lao)
    # out-of-author probabilities on every row (fit and test) of the fitted hand-written authors, NaN
    # elsewhere: choose_threshold reads the fit rows, the second reading the rest too
    out["_lao_probs"] = lao_probs
    pooled_truth, pooled_pred = [], []
    for model in XSTEST_MODELS:
        held = sets == f"xstest-{model}"
        lomo = np.full(len(rows), -1)
        for k in range(folds):
            train = fit_mask & ~held & (f != k)
            w, b = fit(x[train], y[train], groups[train], C)
            sel = fit_mask & held & (f == k)
            lomo[sel] = (_probs(x[sel], w, b) >= 0.5).astype(int)
        sel = fit_mask & held & (ym >= 0)
        out[f"xstest_{model}"] = figures(ym[sel], lomo[sel])
        pairs[f"xstest_{model}"] = (ym[sel], lomo[sel])
        pooled_truth.append(ym[sel])
        pooled_pred.append(lomo[sel])
    out["xstest_leave_one_model_out"] = figures(np.concatenate(pooled_truth), np.concatenate(pooled_pred))
    pairs["xstest_leave_one_model_out"] = (np.concatenate(pooled_truth), np.concatenate(pooled_pred))
    out["_pairs"] = pairs  # out-of-fold (truth, prediction) behind each figure, for cv_score_se; not written
    return out


def _kappa_fast(y: np.ndarray, p: np.ndarray) -> float:
    """Cohen's kappa of two 0/1 vectors (numpy only, for the bootstrap)."""
    po = float((y == p).mean())
    pe = float(y.mean() * p.mean() + (1 - y.mean()) * (1 - p.mean()))
    return (po - pe) / (1 - pe) if pe < 1 else float("nan")


def cv_score_se(cv: dict, resamples: int = 300) -> float:
    """Bootstrap standard error of :func:`cv_score` (rows of each component resampled on their own,
    fixed seed)."""
    rng = np.random.default_rng(0)
    parts = cv["_pairs"]
    scores = []
    for _ in range(resamples):
        k = {}
        for name, (truth, pred) in parts.items():
            i = rng.integers(0, len(truth), len(truth))
            k[name] = _kappa_fast(truth[i], pred[i])
        scores.append(k["rag_leave_authors_out"] + k["xstest_leave_one_model_out"])
    return float(np.std(scores, ddof=1))


def cv_score(cv: dict) -> float:
    """What :func:`choose_c` maximises: the leave-authors-out kappa on the hand-written rows
    (how the model does on an author it never saw) plus the pooled leave-one-model-out XSTest kappa
    (on a model file it never saw; both on fit rows only). Pooled, not the worst file: the worst
    file's kappa rests on about 40 refusals and swung the choice on one or two of them."""
    return cv["rag_leave_authors_out"]["kappa"] + cv["xstest_leave_one_model_out"]["kappa"]


def divided_rows(presence: sp.spmatrix, divisor: int) -> sp.csr_matrix:
    """Each row of a 0/1 n-gram matrix divided by ``max(its number of n-grams, divisor)`` (what
    ``RefusalModel.ngram_term`` computes with the stored weights)."""
    counts = np.asarray(presence.sum(axis=1)).ravel()
    return (sp.diags(1.0 / np.maximum(counts, divisor)) @ presence).tocsr()


def design_matrix(dense: np.ndarray, ngrams: sp.csr_matrix, scale: float) -> sp.csr_matrix:
    """``[dense features | n-gram columns * scale]`` as one sparse matrix (``ngrams`` from
    :func:`divided_rows`)."""
    return sp.hstack([sp.csr_matrix(dense), ngrams * scale]).tocsr()


def choose_c(rows, dense, ngrams, y, groups, fit_mask) -> tuple[float, float, dict]:
    """``(C, n-gram scale)`` from :data:`C_GRID` x :data:`NGRAM_SCALE_GRID` by the
    one-standard-error rule: the simplest candidate (smallest ``C``, then smallest scale: the
    strongest regularisation) whose :func:`cv_score` is within one bootstrap standard error
    (:func:`cv_score_se`) of the best; and that candidate's figures. Stronger regularisation is
    preferred because the grid's differences are mostly within that noise, and weaker
    regularisation flags more out-of-domain answers (BEGIN's dialogue turns)."""
    grid = [(C, scale) for C in C_GRID for scale in NGRAM_SCALE_GRID]
    results = {}
    for C, scale in grid:
        cv = results[C, scale] = cross_validated(rows, design_matrix(dense, ngrams, scale), y, groups, fit_mask, C)
        print(f"  C={C:<4} n-gram scale {scale:<4} leave-authors-out kappa "
              f"{cv['rag_leave_authors_out']['kappa']:.3f} recall {cv['rag_leave_authors_out']['recall']:.3f} "
              f"specificity {cv['rag_leave_authors_out']['specificity']:.3f} ("
              + ", ".join(f"{k[len('rag_author_'):]} {v['recall']:.2f}/{v['specificity']:.2f}"
                          for k, v in cv.items() if k.startswith("rag_author_"))
              + f"); 5-fold RAG kappa {cv['rag']['kappa']:.3f}; XSTest kappa {cv['xstest']['kappa']:.3f}; "
              f"leave-one-model-out {cv['xstest_leave_one_model_out']['kappa']:.3f} ("
              + ", ".join(f"{m} {cv[f'xstest_{m}']['kappa']:.3f}" for m in XSTEST_MODELS) + ")",
              flush=True)
    top = max(grid, key=lambda g: cv_score(results[g]))
    se = cv_score_se(results[top])
    best = min(g for g in grid if cv_score(results[g]) >= cv_score(results[top]) - se)
    print(f"  best cross-validated score {cv_score(results[top]):.3f} at C={top[0]}, scale {top[1]} (bootstrap SE "
          f"{se:.3f}); one-standard-error rule: C={best[0]}, scale {best[1]}")
    return best[0], best[1], results[best]


def choose_threshold(rows: list[dict], y: np.ndarray, lao_probs: np.ndarray) -> float:
    """The threshold of :data:`THRESHOLD_GRID` with the largest ``min(refusals caught, negative-sounding
    answers left alone, all answers left alone)`` on the leave-authors-out probabilities (fit rows
    only), on authors the model never saw: the abstention rate and the false-refusal rate are
    reported together, so neither side is traded away for the other. Thresholds within
    :data:`THRESHOLD_TIE` of the best count as ties (about one standard error of a share of 2,000
    answers), and a tie goes to the one nearest 0.5."""
    kinds = np.array([r["kind"] for r in rows])
    seen = ~np.isnan(lao_probs) & np.array([r["split"] == "fit" for r in rows])
    refused, negative = seen & (y == 1), seen & np.isin(kinds, NEGATIVE_SOUNDING)
    print("  threshold: refusals caught / negative-sounding answers left alone / all answers left alone "
          "(leave-authors-out, fit rows)")
    worst = {}
    for t in THRESHOLD_GRID:
        caught = float((lao_probs[refused] >= t).mean())
        left = float((lao_probs[negative] < t).mean())
        answered = float((lao_probs[seen & (y == 0)] < t).mean())
        print(f"    {t:.2f}: {caught:.3f} / {left:.3f} / {answered:.3f}")
        worst[t] = min(caught, left, answered)
    top = max(worst.values())
    return min((t for t in THRESHOLD_GRID if worst[t] >= top - THRESHOLD_TIE), key=lambda t: abs(t - 0.5))


def _probs(x: np.ndarray, weights: np.ndarray, bias: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ weights + bias)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--dry-run", action="store_true", help="print the figures, write nothing")
    args = parser.parse_args()

    rows = load_rows()
    embedder = OfflineEmbedder()
    from sklearn.feature_extraction.text import CountVectorizer

    answers = [r["answer"] for r in rows]
    dense, heads = features_and_heads(answers, embedder.embed_sync)
    y = np.array([r["y"] for r in rows])
    groups = np.array(["xstest" if r["set"].startswith("xstest") else "rag" for r in rows])
    fit_mask = np.array([r["split"] == "fit" for r in rows])
    # The n-gram vocabulary comes from the fit rows only (refusal.head_ngrams of the heads the
    # features were built from: the same words the detector looks up).
    vectorizer = CountVectorizer(analyzer=lambda head: sorted(head_ngrams(head)), binary=True,
                                 min_df=NGRAM_MIN_ANSWERS, dtype=np.float64)
    vectorizer.fit([h for h, keep in zip(heads, fit_mask) if keep])
    ngrams = divided_rows(vectorizer.transform(heads), NGRAM_DIVISOR)
    vocabulary = vectorizer.get_feature_names_out()
    print(f"fit rows: {int(fit_mask.sum())} (hand-written fit split {int((fit_mask & (groups == 'rag')).sum())}, "
          f"XSTest fit prompts x 3 models {int((fit_mask & (groups == 'xstest')).sum())}); held out: "
          f"{int((~fit_mask).sum())}")
    print(f"n-grams with a weight (in at least {NGRAM_MIN_ANSWERS} fit answers): {len(vocabulary)}")
    print("cross-validation on the FIT rows only (chooses C and the n-gram scale; features and data are judged on it):")
    C, scale, cv = choose_c(rows, dense, ngrams, y, groups, fit_mask)
    print(f"  chosen C={C}, n-gram scale {scale}")
    x = design_matrix(dense, ngrams, scale)
    weights, bias = fit(x[fit_mask], y[fit_mask], groups[fit_mask], C)
    threshold = choose_threshold(rows, y, cv["_lao_probs"])
    print(f"  chosen threshold {threshold}")
    probs = _probs(x, weights, bias)
    lomo = np.full(len(rows), np.nan)
    for model in XSTEST_MODELS:
        held = np.array([r["set"] == f"xstest-{model}" for r in rows])
        w, b = fit(x[fit_mask & ~held], y[fit_mask & ~held], groups[fit_mask & ~held], C)
        lomo[held] = _probs(x[held], w, b)  # reported on this file's held-out prompts only
    report = held_out_report(rows, probs, lomo, threshold)

    print(f"\nheld-out figures, threshold {threshold} (XSTest against the human majority, held-out prompts only;"
          " xstest_<model>: a refit that never saw that model file):")
    names = ["rag_test", "rag_test_first_round", "rag_test_later_rows",
             *sorted(k for k in report if k.startswith("rag_test_author_")), "promoted_authors_test",
             "unseen_authors_test", *(k for k in report if k.startswith("unseen_authors_test_author_")), "chat_test",
             "xstest_heldout_prompts", *(f"xstest_{m}" for m in XSTEST_MODELS), "xstest_heldout_pooled"]
    for name in (n for n in names if n in report):  # held_out_report leaves out empty pools
        for which in ("model", "phrase_list"):
            f = report[name][which]
            print(f"  {name:<24} {which:<11} n={f['n']:<4} kappa={f['kappa']:.3f} recall={f['recall']:.3f} "
                  f"specificity={f['specificity']:.3f} (refusals caught {f['refusals_caught']}, "
                  f"answers left alone {f['answers_left_alone']})")
    print(f"  XSTest ties left out (the two annotators disagree): {report['xstest_heldout_pooled']['ties_left_out']}")
    print("  how far the answer alone goes on each XSTest file: a model fitted ONLY on that file's fit prompts, "
          "scored on its held-out prompts (a ceiling for this representation, not a held-out-model figure):")
    ym_all = _majority(rows)
    for model in XSTEST_MODELS:
        own = np.array([r["set"] == f"xstest-{model}" for r in rows])
        w, b = fit(x[fit_mask & own], y[fit_mask & own], groups[fit_mask & own], C)
        sel = ~fit_mask & own & (ym_all >= 0)
        f = figures(ym_all[sel], (_probs(x[sel], w, b) >= threshold).astype(int))
        report[f"xstest_{model}_own_file_only"] = f
        print(f"    {model:<16} kappa={f['kappa']:.3f} (refusals caught {f['refusals_caught']}, "
              f"answers left alone {f['answers_left_alone']})")
    test = [i for i, r in enumerate(rows) if r["set"] == "rag" and r["split"] == "test"]
    print("\nRAG test split by kind (share the model labels correctly):")
    for kind in sorted({rows[i]["kind"] for i in test}):
        idx = [i for i in test if rows[i]["kind"] == kind]
        right = sum((probs[i] >= threshold) == bool(y[i]) for i in idx)
        print(f"  {kind:<22} {'refused' if y[idx[0]] else 'answered':<9} {right}/{len(idx)}")
    for name, figs in report.items():
        if "negative_sounding_left_alone" in figs:
            print(f"  {name}: negative-sounding answers ({', '.join(NEGATIVE_SOUNDING)}) left alone: "
                  f"{figs['negative_sounding_left_alone']}")
    # The second-reading answers' authors may be fitted: the model's side comes from the refit that
    # left their authors out (the shipped model where no such refit exists: an unseen author).
    unseen_probs = np.where(np.isnan(cv["_lao_probs"]), probs, cv["_lao_probs"])
    report["second_reading"] = second_reading_report(rows, unseen_probs, threshold)
    wrong = [i for i in test if (probs[i] >= threshold) != bool(y[i])]
    if wrong:
        print("\nRAG held-out rows the model gets wrong:")
        for i in wrong:
            print(f"  {rows[i]['id']} label={'refused' if y[i] else 'answered'} p={probs[i]:.2f}: {rows[i]['answer'][:100]}")

    spec = {
        "cue_version": CUE_VERSION,
        "cues": list(CUE_NAMES),
        "embedding": (f"wordllama l2_supercat {EMBEDDING_DIM} of each head sentence (refusal.head_text), "
                      f"L2-normalised: their normalised mean, then their element-wise max ({EMBEDDING_FEATURES})"),
        "bias": round(bias, 6),
        "embedding_weights": [round(float(w), 6) for w in weights[:EMBEDDING_FEATURES]],
        "cue_weights": [round(float(w), 6) for w in weights[EMBEDDING_FEATURES:EMBEDDING_FEATURES + len(CUE_NAMES)]],
        "ngrams": (f"word unigrams and bigrams of the head in the cues' form (refusal.head_ngrams), present in at "
                   f"least {NGRAM_MIN_ANSWERS} fit answers; the model adds the summed weight of the head's n-grams "
                   f"listed here divided by max(their number, ngram_divisor); each weight is the fitted weight "
                   f"times the scale {scale}"),
        "ngram_weights": {str(term): round(float(w) * scale, 5) for term, w in
                          zip(vocabulary, weights[EMBEDDING_FEATURES + len(CUE_NAMES):])},
        "ngram_scale": scale,
        "ngram_divisor": NGRAM_DIVISOR,
        "threshold": threshold,
        "C": C,
        "cross_validation": {k: v for k, v in cv.items() if not k.startswith("_")},
        "fitted_on": {"rag_abstention.jsonl": "split == fit", "rag_abstention_chat.jsonl": "split == fit", "rag_abstention_independent.jsonl": "split == fit (promoted authors only; an unseen author's rows are all test)",
                      "xstest_abstention.jsonl": "refusal.xstest_split(id) == fit (by prompt, all three models)"},
        "held_out": report,
        "refit": "scripts/fit_refusal_detector.py",
    }
    if args.dry_run:
        print("\n--dry-run: nothing written")
        return
    args.out.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
