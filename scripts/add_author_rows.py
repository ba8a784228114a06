"""Append one author's hand-written refusal rows to a bundled data file, with ids and splits.

Run by hand from the repository root::

    python scripts/add_author_rows.py rag|independent AUTHOR FILE

``FILE`` is JSON Lines with ``answer``, ``label`` (``refused`` / ``answered``), ``kind`` and
``domain``, as an author wrote it from the writing brief. Each row gets the next running id of the
target file and ``author`` = ``AUTHOR``:

- ``rag``: ``data/rag_abstention.jsonl``; ``split`` is ``test`` when the first byte of
  sha256(id) is divisible by 3, else ``fit`` (the file's fixed rule);
- ``independent``: ``data/rag_abstention_independent.jsonl``; every row is ``test``.

An answer that is already in any of the hand-written data files (exactly, after whitespace is
collapsed) is dropped and counted, so no answer is both fitted on and held out. Nothing is written
when a row is malformed; the error names the line and field.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from workbench.jsonl import jsonl_objects, read_jsonl  # noqa: E402

DATA = REPO / "data"
TARGETS = {"rag": (DATA / "rag_abstention.jsonl", "rag-abst-"),
           "independent": (DATA / "rag_abstention_independent.jsonl", "rag-indep-")}
HAND_WRITTEN = (DATA / "rag_abstention.jsonl", DATA / "rag_abstention_chat.jsonl",
                DATA / "rag_abstention_independent.jsonl")
LABELS = ("refused", "answered")


def _key(answer: str) -> str:
    return " ".join(answer.split())


def split_for(row_id: str, target: str) -> str:
    """The fixed split of a new row: ``test`` on the independent file; on the RAG file ``test`` when
    the first byte of sha256(id) is divisible by 3."""
    if target == "independent":
        return "test"
    return "test" if hashlib.sha256(row_id.encode()).digest()[0] % 3 == 0 else "fit"


def fitted_authors(rows: list[dict]) -> set[str]:
    """The authors (the ``author`` column) with at least one ``fit`` row: whoever a refit has seen
    (in the independent file: the promoted authors; every other author there is unseen)."""
    return {r["author"] for r in rows if r["split"] == "fit"}


def author_rows(path: Path) -> list[dict]:
    """The author's rows, checked: each needs a non-empty ``answer``, a ``label`` of :data:`LABELS`, and
    a ``kind`` and ``domain`` string.

    Raises:
        ValueError: naming the file, line and field.
    """
    with path.open(encoding="utf-8") as handle:
        numbered, problems = jsonl_objects(handle, str(path))
    if problems:
        raise ValueError(problems[0])
    rows = []
    for number, row in numbered:
        if not isinstance(row.get("answer"), str) or not row["answer"].strip():
            raise ValueError(f"{path}:{number}: field 'answer': expected a non-empty string")
        if row.get("label") not in LABELS:
            raise ValueError(f"{path}:{number}: field 'label': expected one of {LABELS}, got {row.get('label')!r}")
        for field in ("kind", "domain"):
            if not isinstance(row.get(field), str) or not row[field].strip():
                raise ValueError(f"{path}:{number}: field {field!r}: expected a non-empty string")
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("target", choices=sorted(TARGETS))
    parser.add_argument("author", help='the author column, e.g. "author-23"')
    parser.add_argument("file", type=Path)
    args = parser.parse_args()

    out, prefix = TARGETS[args.target]
    existing = list(read_jsonl(out))
    if any(r.get("author") == args.author for r in existing):
        sys.exit(f"{out}: author {args.author!r} is already in the file")
    seen = {_key(r["answer"]) for path in HAND_WRITTEN for r in read_jsonl(path)}
    number = max(int(r["id"].rsplit("-", 1)[-1]) for r in existing)
    added, dropped = [], 0
    for row in author_rows(args.file):
        if _key(row["answer"]) in seen:
            dropped += 1
            continue
        seen.add(_key(row["answer"]))
        number += 1
        row_id = f"{prefix}{number:04d}"
        added.append({"id": row_id, "answer": row["answer"], "label": row["label"], "kind": row["kind"],
                      "domain": row["domain"], "split": split_for(row_id, args.target), "author": args.author})
    with out.open("a", encoding="utf-8") as handle:
        for row in added:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    tests = sum(r["split"] == "test" for r in added)
    print(f"{out.name}: added {len(added)} rows of {args.author} ({tests} test), dropped {dropped} repeated answers")


if __name__ == "__main__":
    main()
