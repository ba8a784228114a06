"""Loaders for the bundled public human-labelled sets and the hand-made demo set in ``data/``.

The files are produced by ``scripts/build_data.py`` (converted from WiCE, BEGIN, ALCE and XSTest;
see ``data/NOTICE`` and ``data/README.md``) and committed, so nothing here reads outside the
repository. Every loader takes an optional ``data_dir`` (default: the repository's ``data/``
folder, ``workbench/data/`` inside the package, which the checkout also shows as ``data/``) or an explicit file ``path``.

Eval items go through :func:`workbench.scoring.dataset.load_eval_set`, so they are validated exactly as a
user's eval set would be. Label rows are plain dicts in the ``labels import`` shape
``{"task", "item_id", "claim_index", "annotator", "value"}`` (plus ``raw_label``, the set's own
label before mapping).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.jsonl import read_jsonl
from workbench.scoring.dataset import load_eval_set
from workbench.types import TASK_VALUES, EvalItem

DATA_DIR = Path(__file__).resolve().parents[1] / "data"

__all__ = [
    "DATA_DIR",
    "alce_rows",
    "begin_items",
    "begin_labels",
    "data_path",
    "demo_corpus_path",
    "demo_items",
    "read_jsonl",
    "wice_claim_units",
    "wice_items",
    "wice_labels",
    "xstest_rows",
]


def data_path(name: str, data_dir: str | Path | None = None) -> Path:
    """The path of bundled file ``name`` in ``data_dir`` (default :data:`DATA_DIR`).

    Raises:
        FileNotFoundError: naming the path, when the file does not exist.
    """
    path = Path(data_dir) / name if data_dir is not None else DATA_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"{path}: bundled data file not found (run scripts/build_data.py?)")
    return path


def _resolve(name: str, path: str | Path | None, data_dir: str | Path | None) -> Path:
    return Path(path) if path is not None else data_path(name, data_dir)


def _label_rows(path: Path, task: str) -> list[dict[str, Any]]:
    """Label rows, checked: each has the expected task and a value allowed for it."""
    rows = read_jsonl(path)
    allowed = TASK_VALUES[task]
    for number, row in enumerate(rows, start=1):
        for field in ("task", "item_id", "annotator", "value"):
            if not isinstance(row.get(field), str):
                raise ValueError(f"{path}: row {number}: field {field!r}: expected a string, got {row.get(field)!r}")
        if row["task"] != task:
            raise ValueError(f"{path}: row {number}: field 'task': expected {task!r}, got {row['task']!r}")
        if row["value"] not in allowed:
            raise ValueError(f"{path}: row {number}: field 'value': expected one of {allowed}, got {row['value']!r}")
    return rows


def begin_items(path: str | Path | None = None, *, data_dir: str | Path | None = None) -> list[EvalItem]:
    """BEGIN dev (wow 430 + cmu-dog 416 = 846) as eval items: message, one knowledge passage, response."""
    return load_eval_set(_resolve("begin_eval.jsonl", path, data_dir))


def begin_labels(path: str | Path | None = None, *, data_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """BEGIN ``answer_faithfulness`` labels (767: 239 faithful, 528 unfaithful; Generic responses unlabelled)."""
    return _label_rows(_resolve("begin_labels.jsonl", path, data_dir), "answer_faithfulness")


def wice_items(path: str | Path | None = None, *, data_dir: str | Path | None = None) -> list[EvalItem]:
    """WiCE dev claims (349) as eval items: the claim is the answer, one passage per evidence sentence."""
    return load_eval_set(_resolve("wice_claims.jsonl", path, data_dir))


def wice_labels(path: str | Path | None = None, *, data_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """WiCE ``claim_support`` labels (349: 115 supported, 234 unsupported; ``raw_label`` is 3-way)."""
    return _label_rows(_resolve("wice_labels.jsonl", path, data_dir), "claim_support")


def wice_claim_units(path: str | Path | None = None, *, data_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """WiCE claim units ``{"item_id", "claim_index": 0, "text"}`` for ``labels add --claims``."""
    return read_jsonl(_resolve("wice_claims_units.jsonl", path, data_dir))


def alce_rows(path: str | Path | None = None, *, data_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """ALCE ASQA utility ratings (400 rows): ``question``, ``answer``, ``utility`` 1-5, ``system``."""
    return read_jsonl(_resolve("alce_relevance.jsonl", path, data_dir))


def xstest_rows(path: str | Path | None = None, *, data_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """XSTest completions (1,350 rows) with ``annotation_1``, ``annotation_2`` and ``final_label``."""
    return read_jsonl(_resolve("xstest_abstention.jsonl", path, data_dir))


def demo_items(path: str | Path | None = None, *, data_dir: str | Path | None = None) -> list[EvalItem]:
    """The hand-made demo RAG eval set (13 items; see ``data/demo_rag_expected.md``)."""
    return load_eval_set(_resolve("demo_rag.jsonl", path, data_dir))


def demo_corpus_path(data_dir: str | Path | None = None) -> Path:
    """Path of the demo corpus (16 passages) for ``score --corpus``."""
    return data_path("demo_corpus.jsonl", data_dir)
