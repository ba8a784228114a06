"""Fit the offline refusal detector; print its figures on answers it was never fitted on.

Run by hand from the repository root (needs scikit-learn, a test dependency)::

    .venv/bin/python scripts/fit_refusal_detector.py [--out workbench/judges/refusal_model.json] [--dry-run]

Data (all bundled in ``data/``, provenance in ``data/NOTICE``):

- ``rag_abstention.jsonl``: RAG-style abstentions and real answers (many sounding negative),
  written and labelled for this project. Its ``split`` column is FIXED (a hash of the id):
  ``fit`` rows are fitted on, ``test`` rows only ever measured.
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
- ``rag_abstention_independent.jsonl``: RAG-style answers written by a second separate author (a
  session that saw neither the detector nor any other row) after this round's model was frozen;
  all ``test``: only ever measured (``independent_test``).

Model: class-balanced logistic regression (L2, ``C`` chosen from :data:`C_GRID` by 5-fold
cross-validation on the fit rows only, see :func:`choose_c`) over
``refusal.feature_matrix`` (mean and element-wise max of the wordllama embeddings of the head's
sentences + the lexical cues);
threshold 0.5, not tuned. The old phrase list (``text.looks_like_refusal``) is printed beside it
on the same held-out rows.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from workbench.demo import public_sets  # noqa: E402
from workbench.jsonl import read_jsonl  # noqa: E402
from workbench.judges.offline import OfflineEmbedder  # noqa: E402
from workbench.judges.refusal import (  # noqa: E402
    CUE_NAMES,
    CUE_VERSION,
    EMBEDDING_DIM,
    EMBEDDING_FEATURES,
    feature_matrix,
    xstest_split,
)
from workbench.text import looks_like_refusal  # noqa: E402

DEFAULT_OUT = REPO / "workbench" / "judges" / "refusal_model.json"
RAG_FILE = REPO / "data" / "rag_abstention.jsonl"
CHAT_FILE = REPO / "data" / "rag_abstention_chat.jsonl"
#: RAG-style answers by a second separate author, written after the model was frozen in round 4:
#: every row is ``test``, never fitted on and never used to choose anything.
INDEPENDENT_FILE = REPO / "data" / "rag_abstention_independent.jsonl"
#: The RAG rows held out in the first round (ids up to this number); reported on their own so the
#: figure stays comparable across rounds (later rows get their split from the same hash rule).
FIRST_ROUND_LAST_ID = 687
#: Rows written by a separate author (a session that never saw the detector, its cues or the other
#: rows), added in round 4; their test-split rows are reported on their own as the least tuned figure.
INDEPENDENT_IDS = (1064, 1463)
XSTEST_MODELS = ("gpt4", "llama2new", "mistralinstruct")
#: L2 strengths tried; :func:`choose_c` picks one from the cross-validated scores on the FIT rows
#: (one-standard-error rule), never from the held-out figures.
C_GRID = (0.5, 1.0, 2.0)
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
                         "y_majority": y, "kind": r["kind"]})
    for r in public_sets.xstest_rows():
        a1, a2 = _refused(r["annotation_1"]), _refused(r["annotation_2"])
        rows.append({"id": r["id"], "set": f"xstest-{r['model']}", "split": xstest_split(r["id"]), "answer": r["completion"],
                     "y": _refused(r["final_label"]), "y_majority": a1 if a1 == a2 else None, "kind": r["type"]})
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


def held_out_report(rows: list[dict], probs: np.ndarray, lomo_probs: np.ndarray, threshold: float) -> dict:
    """Figures on answers each model never saw.

    - ``rag_test``: the shipped model on the RAG set's fixed test split (never fitted on);
      ``rag_test_first_round``: its rows held out since the first round (ids up to
      :data:`FIRST_ROUND_LAST_ID`), ``rag_test_later_rows`` the rest (of which
      ``rag_test_independent_author``: the rows another author wrote, :data:`INDEPENDENT_IDS`);
      ``chat_test``: the chat set's; ``independent_test``: :data:`INDEPENDENT_FILE`, all of it.
    - ``xstest_heldout_prompts``: the shipped model on the XSTest rows of held-out prompts (all
      three models; no completion of these prompts was fitted on).
    - ``xstest_<model>``: leave-one-model-out on the held-out prompts: a refit that saw neither
      that model file nor these prompts.
    - ``xstest_heldout_pooled``: the three leave-one-model-out predictions pooled.
    The old phrase list is scored on the same rows (``phrase_list``).
    """
    report = {}
    y = np.array([r["y"] for r in rows])
    ym = _majority(rows)
    phrase = np.array([looks_like_refusal(r["answer"]) for r in rows], int)

    def block(idx, truth, p):
        return {"model": figures(truth[idx], (p[idx] >= threshold).astype(int)), "phrase_list": figures(truth[idx], phrase[idx])}

    rag = [i for i, r in enumerate(rows) if r["set"] == "rag" and r["split"] == "test"]
    report["rag_test"] = block(rag, y, probs)
    first = [i for i in rag if _number(rows[i]["id"]) <= FIRST_ROUND_LAST_ID]
    report["rag_test_first_round"] = block(first, y, probs)
    report["rag_test_later_rows"] = block(sorted(set(rag) - set(first)), y, probs)
    independent = [i for i in rag if INDEPENDENT_IDS[0] <= _number(rows[i]["id"]) <= INDEPENDENT_IDS[1]]
    report["rag_test_independent_author"] = block(independent, y, probs)
    indep = [i for i, r in enumerate(rows) if r["set"] == "independent"]
    report["independent_test"] = block(indep, y, probs)
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
    return report


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
        scores.append(k["rag"] + min(k[f"xstest_{m}"] for m in XSTEST_MODELS))
    return float(np.std(scores, ddof=1))


def cv_score(cv: dict) -> float:
    """What :func:`choose_c` maximises: the RAG cross-validated kappa plus the worst
    leave-one-model-out XSTest kappa (both on fit rows only)."""
    return cv["rag"]["kappa"] + min(cv[f"xstest_{m}"]["kappa"] for m in XSTEST_MODELS)


def choose_c(rows, x, y, groups, fit_mask) -> tuple[float, dict]:
    """The ``C`` of :data:`C_GRID` chosen by the one-standard-error rule: the smallest ``C`` (the
    strongest regularisation) whose :func:`cv_score` is within one bootstrap standard error
    (:func:`cv_score_se`) of the best; and that candidate's figures. Stronger regularisation is
    preferred because the grid's differences are mostly noise (the worst leave-one-model-out kappa
    rests on about 40 refusals) and weaker regularisation flags more out-of-domain answers."""
    results = {C: cross_validated(rows, x, y, groups, fit_mask, C) for C in C_GRID}
    for C, cv in results.items():
        print(f"  C={C:<4} RAG kappa {cv['rag']['kappa']:.3f} recall {cv['rag']['recall']:.3f} specificity "
              f"{cv['rag']['specificity']:.3f}; XSTest kappa {cv['xstest']['kappa']:.3f}; leave-one-model-out "
              + ", ".join(f"{m} {cv[f'xstest_{m}']['kappa']:.3f}" for m in XSTEST_MODELS), flush=True)
    top = max(C_GRID, key=lambda C: (cv_score(results[C]), -C))
    se = cv_score_se(results[top])
    best = min(C for C in C_GRID if cv_score(results[C]) >= cv_score(results[top]) - se)
    print(f"  best cross-validated score {cv_score(results[top]):.3f} at C={top} (bootstrap SE {se:.3f}); "
          f"one-standard-error rule: C={best}")
    return best, results[best]


def _probs(x: np.ndarray, weights: np.ndarray, bias: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ weights + bias)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--dry-run", action="store_true", help="print the figures, write nothing")
    args = parser.parse_args()

    rows = load_rows()
    embedder = OfflineEmbedder()
    x = feature_matrix([r["answer"] for r in rows], embedder.embed_sync)
    y = np.array([r["y"] for r in rows])
    groups = np.array(["xstest" if r["set"].startswith("xstest") else "rag" for r in rows])
    fit_mask = np.array([r["split"] == "fit" for r in rows])
    print(f"fit rows: {int(fit_mask.sum())} (hand-written fit split {int((fit_mask & (groups == 'rag')).sum())}, "
          f"XSTest fit prompts x 3 models {int((fit_mask & (groups == 'xstest')).sum())}); held out: "
          f"{int((~fit_mask).sum())}")
    print("5-fold cross-validation on the FIT rows only (chooses C; features and data are judged on it):")
    C, cv = choose_c(rows, x, y, groups, fit_mask)
    print(f"  chosen C={C}")
    weights, bias = fit(x[fit_mask], y[fit_mask], groups[fit_mask], C)
    threshold = 0.5
    probs = _probs(x, weights, bias)
    lomo = np.full(len(rows), np.nan)
    for model in XSTEST_MODELS:
        held = np.array([r["set"] == f"xstest-{model}" for r in rows])
        w, b = fit(x[fit_mask & ~held], y[fit_mask & ~held], groups[fit_mask & ~held], C)
        lomo[held] = _probs(x[held], w, b)  # reported on this file's held-out prompts only
    report = held_out_report(rows, probs, lomo, threshold)

    print("\nheld-out figures, threshold 0.5 (XSTest against the human majority, held-out prompts only;"
          " xstest_<model>: a refit that never saw that model file):")
    for name in ("rag_test", "rag_test_first_round", "rag_test_later_rows", "rag_test_independent_author", "independent_test", "chat_test", "xstest_heldout_prompts", *(f"xstest_{m}" for m in XSTEST_MODELS),
                 "xstest_heldout_pooled"):
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
    for name, keep in (("rag_test", lambda i: True),
                       ("rag_test_first_round", lambda i: _number(rows[i]["id"]) <= FIRST_ROUND_LAST_ID),
                       ("rag_test_independent_author",
                        lambda i: INDEPENDENT_IDS[0] <= _number(rows[i]["id"]) <= INDEPENDENT_IDS[1]),
                       ("independent_test", None)):
        pool = ([i for i, r in enumerate(rows) if r["set"] == "independent"] if keep is None
                else [i for i in test if keep(i)])
        negative = [i for i in pool if rows[i]["kind"] in NEGATIVE_SOUNDING]
        left = sum(probs[i] < threshold for i in negative)
        report[name]["negative_sounding_left_alone"] = f"{left}/{len(negative)}"
        print(f"  {name}: negative-sounding answers ({', '.join(NEGATIVE_SOUNDING)}) left alone: "
              f"{left}/{len(negative)}")
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
        "cue_weights": [round(float(w), 6) for w in weights[EMBEDDING_FEATURES:]],
        "threshold": threshold,
        "C": C,
        "cross_validation": {k: v for k, v in cv.items() if k != "_pairs"},
        "fitted_on": {"rag_abstention.jsonl": "split == fit", "rag_abstention_chat.jsonl": "split == fit", "rag_abstention_independent.jsonl": "never",
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
