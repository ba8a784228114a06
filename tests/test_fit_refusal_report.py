"""scripts/fit_refusal_detector.py: which held-out pools its report carries (no fit is run here)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location("fit_refusal_detector", ROOT / "scripts" / "fit_refusal_detector.py")
fit_refusal_detector = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fit_refusal_detector)


def _rows(independent_split: str) -> list[dict]:
    rows = []
    for n in range(1, 9):
        rows.append({"id": f"rag-abst-{n:04d}", "set": "rag", "split": "test" if n % 2 else "fit", "author": "author-1",
                     "kind": "negative_fact", "answer": "No fee applies.", "y": n % 3 == 0, "y_majority": None})
        rows.append({"id": f"rag-indep-{n:04d}", "set": "independent", "split": independent_split if n % 2 else "fit",
                     "author": "author-2", "kind": "dont_know", "answer": "I don't know.", "y": 1, "y_majority": None})
        for model in fit_refusal_detector.XSTEST_MODELS:
            rows.append({"id": f"xstest-{model}-{n}", "set": f"xstest-{model}", "split": "test", "author": model,
                         "kind": "xstest", "answer": "I can't help with that.", "y": n % 2, "y_majority": n % 2})
    return rows


def test_report_leaves_out_pools_with_no_rows():
    # Every independent author promoted: there is no unseen author, so no unseen_authors_test block
    # (it used to be printed as "0/0"); the promoted authors' held-out third is reported.
    rows = _rows("test")
    probs = np.linspace(0, 1, len(rows))
    report = fit_refusal_detector.held_out_report(rows, probs, probs, 0.5)
    assert "unseen_authors_test" not in report and "chat_test" not in report
    assert report["promoted_authors_test"]["model"]["n"] == 4
    assert all(figs["model"]["n"] for figs in report.values())
    assert report["xstest_heldout_pooled"]["ties_left_out"] == 0
    # An author with no fit row is unseen: all of its rows are reported, per author too.
    for r in rows:
        if r["set"] == "independent":
            r["split"] = "test"
    report = fit_refusal_detector.held_out_report(rows, probs, probs, 0.5)
    assert report["unseen_authors_test"]["model"]["n"] == 8
    assert report["unseen_authors_test_author_author-2"]["model"]["n"] == 8
    assert "promoted_authors_test" not in report
