"""Move authors of the independent set from "unseen" into the fitted pool, by the RAG file's hash rule.

Run by hand from the repository root::

    python scripts/promote_independent_authors.py AUTHOR [AUTHOR ...]

Every row of ``data/rag_abstention_independent.jsonl`` starts as ``test``: an author no fit has
seen, which is what "refusals caught on unseen authors" is measured on. Once an author's rows have
been reported that way, a later round may fit on them. This rewrites the named authors' rows with
the split ``data/rag_abstention.jsonl`` uses (``test`` when the first byte of sha256(id) is
divisible by 3, else ``fit``, see ``add_author_rows.split_for``), keeping ids, order and every
other field, so a third of each promoted author stays held out. Authors not named keep every row
``test``. An author not in the file, or already promoted, is an error and nothing is written.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from add_author_rows import fitted_authors, split_for  # noqa: E402

from workbench.jsonl import read_jsonl  # noqa: E402

INDEPENDENT_FILE = REPO / "data" / "rag_abstention_independent.jsonl"


def promoted(rows: list[dict], authors: Iterable[str]) -> list[dict]:
    """``rows`` with every row of ``authors`` given the RAG file's hash split (the others unchanged).

    Raises:
        ValueError: naming an author with no row, or one that already has ``fit`` rows.
    """
    authors = list(dict.fromkeys(authors))
    present = {r.get("author") for r in rows}
    fitted = fitted_authors(rows)
    for author in authors:
        if author not in present:
            raise ValueError(f"author {author!r}: no row of the independent file has this author")
        if author in fitted:
            raise ValueError(f"author {author!r}: already promoted (has fit rows)")
    chosen = set(authors)
    return [{**r, "split": split_for(r["id"], "rag")} if r.get("author") in chosen else r for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("authors", nargs="+", help='author columns, e.g. "author-2"')
    args = parser.parse_args()
    rows = list(read_jsonl(INDEPENDENT_FILE))
    try:
        out = promoted(rows, args.authors)
    except ValueError as error:
        sys.exit(f"{INDEPENDENT_FILE}: {error}")
    with INDEPENDENT_FILE.open("w", encoding="utf-8") as handle:
        for row in out:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    moved = [r for r, old in zip(out, rows) if r is not old]
    print(f"{INDEPENDENT_FILE.name}: promoted {len(args.authors)} authors, {len(moved)} rows "
          f"({sum(r['split'] == 'fit' for r in moved)} fit, {sum(r['split'] == 'test' for r in moved)} test)")


if __name__ == "__main__":
    main()
