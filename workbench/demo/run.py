"""``workbench demo``: the whole calibration + scoring loop on the bundled public data, offline.

1. Score the hand-made RAG set (``data/demo_rag.jsonl``) with default thresholds.
2. Build a label store from four public human-labelled sets (WiCE claims, BEGIN answers, ALCE
   answers, XSTest refusals with two annotators), run the offline judge over every unit, measure
   its agreement with the people, and calibrate thresholds (``thresholds.json``).
3. Correct the RAG run's rates with that label store (``corrected`` in its ``summary.json``).
4. Score the BEGIN eval set with the tuned thresholds and the label store, so its summary
   carries ``corrected`` faithfulness, relevance and false-refusal rates.

Each scoring step prints the same warnings as ``workbench score --db``: pass rates or quadrants
that rest on a placeholder score, or on a score whose calibration does not beat chance.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.config import JudgeConfig, load_thresholds, save_thresholds
from workbench.demo import public_sets
from workbench.judges.factory import build_judge
from workbench.scoring.dataset import load_corpus
from workbench.scoring.pipeline import ScoreOptions, run_scoring, write_outputs
from workbench.types import EvalItem, ItemScore, Label, Unit


@dataclass(frozen=True)
class CalibrationSet:
    """Items, units and human labels of one public set, ready for the label store."""

    name: str
    items: list[EvalItem]
    units: list[Unit]
    labels: list[Label]
    decompose: bool = False  # claim units still to be decomposed by the judge


def _labels_from_rows(rows: list[dict]) -> list[Label]:
    return [Label(unit_id=Unit.make_id(r["task"], r["item_id"], r.get("claim_index")), task=r["task"],
                  annotator=r["annotator"], value=r["value"]) for r in rows]


def _answer_units(items: list[EvalItem], task: str) -> list[Unit]:
    return [Unit(Unit.make_id(task, i.id), task, i.id, None, i.answer) for i in items]


def calibration_sets(*, data_dir: Path | None = None, limit: int | None = None) -> list[CalibrationSet]:
    """The four public sets as label-store content (``limit`` keeps the first n items of each).

    WiCE and BEGIN keep only the offline model's held-out half (``split_of(id) == "test"``): the
    offline judge's weights were fitted on the other half, so agreement is never measured on its
    own training data. XSTest keeps only the refusal detector's held-out prompts
    (``refusal.xstest_split(id) == "test"``) for the same reason.
    """
    from workbench.judges.offline_features import split_of
    from workbench.judges.refusal import xstest_split

    def cut(xs: list) -> list:
        return xs[:limit] if limit else xs

    def heldout(items: list[EvalItem]) -> list[EvalItem]:
        return [i for i in items if split_of(i.id) == "test"]

    wice = cut(heldout(public_sets.wice_items(data_dir=data_dir)))
    wice_ids = {i.id for i in wice}
    wice_units = [Unit(Unit.make_id("claim_support", r["item_id"], r["claim_index"]), "claim_support",
                       r["item_id"], r["claim_index"], r["text"])
                  for r in public_sets.wice_claim_units(data_dir=data_dir) if r["item_id"] in wice_ids]
    wice_labels = _labels_from_rows([r for r in public_sets.wice_labels(data_dir=data_dir) if r["item_id"] in wice_ids])

    begin = cut(heldout(public_sets.begin_items(data_dir=data_dir)))
    begin_ids = {i.id for i in begin}
    begin_labels = _labels_from_rows([r for r in public_sets.begin_labels(data_dir=data_dir) if r["item_id"] in begin_ids])

    alce_rows = cut(public_sets.alce_rows(data_dir=data_dir))
    alce = [EvalItem(r["id"], r["question"], r["answer"], ()) for r in alce_rows]
    alce_labels = [Label(Unit.make_id("answer_relevance", r["id"]), "answer_relevance", "alce",
                         "relevant" if int(r["utility"]) >= 4 else "not_relevant") for r in alce_rows]

    xs_rows = cut([r for r in public_sets.xstest_rows(data_dir=data_dir) if xstest_split(r["id"]) == "test"])
    xstest = [EvalItem(r["id"], r["prompt"], r["completion"], (),
                       answerable=not str(r["type"]).startswith("contrast_")) for r in xs_rows]
    def refused(raw: object) -> str:
        return "answered" if str(raw).startswith("1_") else "refused"  # full or partial refusal

    xs_labels = [Label(Unit.make_id("abstention", r["id"]), "abstention", annotator, refused(r[column]))
                 for r in xs_rows for annotator, column in (("xstest_a1", "annotation_1"), ("xstest_a2", "annotation_2"))
                 if r.get(column)]
    return [
        CalibrationSet("wice", wice, wice_units, wice_labels),
        CalibrationSet("begin", begin, _answer_units(begin, "answer_faithfulness"), begin_labels, decompose=True),
        CalibrationSet("alce", alce, _answer_units(alce, "answer_relevance"), alce_labels),
        CalibrationSet("xstest", xstest, _answer_units(xstest, "abstention"), xs_labels),
    ]


def load_calibration_store(db, judge, sets: list[CalibrationSet]) -> dict[str, int]:
    """Put items, units (claims decomposed once by ``judge`` where needed) and labels in the store."""
    from workbench import store
    from workbench.calibration.labelling import decomposed_claim_units

    counts = {}
    for cset in sets:
        store.add_items(db, cset.items)
        units = list(cset.units)
        if cset.decompose:
            claims, failures = decomposed_claim_units(judge, cset.items, progress=False)
            if failures:
                raise RuntimeError(f"{cset.name}: could not decompose {len(failures)} answers: {failures[0]}")
            units += claims
        store.add_units(db, units)
        store.append_labels(db, cset.labels)
        counts[cset.name] = len(cset.labels)
    return counts


def run_demo(out_dir: Path, *, limit: int | None = None, echo: Callable[[str], None] = print,
             progress: bool = True) -> dict:
    """Run the whole loop into ``out_dir``; returns ``{"rag": summary, "agreement": ..., "thresholds": ...,
    "begin": summary}``."""
    from workbench import store
    from workbench.calibration.agreement import agreement_report, calibration_report
    from workbench.calibration.judging import run_judges
    from workbench.reports.console import format_agreement, format_calibration, format_corrected, format_summary

    out_dir.mkdir(parents=True, exist_ok=True)
    config = JudgeConfig(backend="offline")
    judge, embedder = build_judge(config)
    echo(f"judge: {judge.fingerprint} (offline baseline: deterministic, no API key, to be calibrated)\n")

    echo("== 1. Scoring the hand-made RAG eval set (data/demo_rag.jsonl), default thresholds ==")
    corpus = load_corpus(public_sets.demo_corpus_path())
    rag_records, rag_summary = run_scoring(public_sets.demo_items(), judge, embedder, ScoreOptions(corpus=corpus),
                                           progress=progress)
    write_outputs(out_dir / "rag", rag_records, rag_summary)
    echo(format_summary(rag_summary))

    echo("\n== 2. Calibrating the judge against people (WiCE, BEGIN, ALCE, XSTest human labels) ==")
    db_path = out_dir / "labels.db"
    if db_path.exists():
        for suffix in ("", "-wal", "-shm"):
            Path(str(db_path) + suffix).unlink(missing_ok=True)
    db = store.open_db(db_path)
    try:
        counts = load_calibration_store(db, judge, calibration_sets(limit=limit))
        echo("human labels loaded: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        run_judges(db, config, progress=progress)
        rng = np.random.default_rng(0)
        agreement = agreement_report(db, rng=rng, n_boot=500)
        thresholds = calibration_report(db, judge=judge.fingerprint, criterion="kappa", rng=rng, n_boot=500)
    finally:
        db.conn.close()
    (out_dir / "agreement.json").write_text(json.dumps(agreement, indent=2) + "\n", encoding="utf-8")
    save_thresholds(thresholds, out_dir / "thresholds.json")
    echo("")
    echo(format_agreement(agreement))
    echo("")
    echo(format_calibration(thresholds))

    echo("\n== 3. The RAG run's rates corrected with the label store ==")
    rag_summary["corrected"] = _corrected(db_path, rag_records, public_sets.demo_items(), load_thresholds(None),
                                          judge.fingerprint)
    _no_signal(rag_summary, db_path, judge.fingerprint, echo)
    write_outputs(out_dir / "rag", rag_records, rag_summary)
    echo("\n".join(format_corrected(rag_summary["corrected"])) if rag_summary["corrected"] else "no corrected rates")

    echo("\n== 4. Scoring BEGIN (data/begin_eval.jsonl) with the calibrated thresholds and the label store ==")
    tuned = load_thresholds(out_dir / "thresholds.json")
    begin_items = public_sets.begin_items()[:limit] if limit else public_sets.begin_items()
    records, begin_summary = run_scoring(begin_items, judge, embedder, ScoreOptions(thresholds=tuned), progress=progress)
    begin_summary["corrected"] = _corrected(db_path, records, begin_items, tuned, judge.fingerprint)
    _no_signal(begin_summary, db_path, judge.fingerprint, echo)
    write_outputs(out_dir / "begin", records, begin_summary)
    echo(format_summary(begin_summary))
    echo(f"\noutputs in {out_dir}/: rag/ and begin/ (items.jsonl, summary.json), labels.db, agreement.json, "
         f"thresholds.json\nnext: `workbench app --db {db_path}` to browse and label; "
         f"`workbench report {out_dir / 'begin'} --db {db_path} --out report.html`")
    return {"rag": rag_summary, "agreement": agreement, "thresholds": thresholds, "begin": begin_summary}


def _corrected(db_path: Path, records: list[ItemScore], items: list[EvalItem], thresholds, fingerprint: str) -> dict:
    """``workbench.calibration.corrections`` rates for one run from the demo's label store (``rng`` seeded 0)."""
    from workbench.calibration.corrections import corrected_from_db

    return corrected_from_db(db_path, records, thresholds=thresholds, fingerprint=fingerprint, items=items,
                             rng=np.random.default_rng(0))


def _no_signal(summary: dict, db_path: Path, fingerprint: str, echo: Callable[[str], None]) -> None:
    """Record the calibration check in ``summary`` and print the warnings ``workbench score`` prints."""
    from workbench.calibration.placeholders import no_signal_warnings

    warnings, checks = no_signal_warnings(summary, db_path, fingerprint)
    if checks is not None:
        summary["calibration_check"] = checks
    for line in warnings:
        echo(line)
