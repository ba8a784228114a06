"""Convert the public human-labelled sets in ``../shared/data`` into the files shipped in ``data/``.

Run by hand from the repository root (the ONLY code in the project that reads ``/work/shared``)::

    .venv/bin/python scripts/build_data.py [--src /work/shared/data] [--out data]

Writes (deterministically; re-running gives byte-identical files):

- ``begin_eval.jsonl`` + ``begin_labels.jsonl``: BEGIN dev (wow + cmu-dog) as eval items, labels
  ``answer_faithfulness`` (``Generic`` responses keep their item but get no label).
- ``wice_claims.jsonl`` + ``wice_labels.jsonl`` + ``wice_claims_units.jsonl``: WiCE dev claims
  (oracle chunks, the ~3 rows per claim merged) as eval items, ``claim_support`` labels, claim units.
- ``alce_relevance.jsonl``: ALCE ASQA utility ratings (1-5) of four systems' answers.
- ``xstest_abstention.jsonl``: XSTest completions of three models with both annotators' labels.
- ``licenses/``: the licence and notice files of each source, copied unchanged.

The hand-made demo files (``demo_rag.jsonl``, ``demo_corpus.jsonl``, ``demo_rag_expected.md``),
``NOTICE`` and ``README.md`` are written by hand and are not touched here.
"""
from __future__ import annotations

import argparse
import csv
import json
import shutil
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

BEGIN_LABELS = {"Fully attributable": "faithful", "Not fully attributable": "unfaithful", "Generic": None}
WICE_LABELS = {"supported": "supported", "partially_supported": "unsupported", "not_supported": "unsupported"}
EMPTY_MESSAGE = "(no user message)"
XSTEST_MODELS = ("gpt4", "llama2new", "mistralinstruct")

LICENSE_FILES = {
    "wice/LICENSE.md": "wice-LICENSE.md",
    "begin/LICENSE": "begin-LICENSE",
    "begin/wow/LICENSE": "begin-wow-LICENSE",
    "begin/wow/NOTICE": "begin-wow-NOTICE",
    "begin/cmu-dog/LICENSE": "begin-cmu-dog-LICENSE",
    "begin/cmu-dog/NOTICE": "begin-cmu-dog-NOTICE",
    "alce/LICENSE": "alce-LICENSE",
    "xstest/LICENSE": "xstest-LICENSE",
}


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")
    print(f"wrote {path} ({len(rows)} rows)")


def _no_fake_citations(text: str) -> str:
    """Replace the editorial ellipsis ``[...]`` so the citation pattern does not read it as an id."""
    return text.replace("[...]", "...")


def build_begin(src: Path, out: Path) -> None:
    items: list[dict] = []
    labels: list[dict] = []
    for folder, name, short in (("wow", "begin_dev_wow.tsv", "wow"), ("cmu-dog", "begin_dev_cmu.tsv", "cmu")):
        path = src / "begin" / folder / name
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
        for number, row in enumerate(rows, start=1):
            item_id = f"begin-{short}-{number:04d}"
            raw = row["begin_label"]
            if raw not in BEGIN_LABELS:
                raise ValueError(f"{path}: row {number + 1}: begin_label {raw!r} not in {list(BEGIN_LABELS)}")
            items.append({
                "id": item_id,
                # two cmu-dog rows have an empty message; an eval item needs a question
                "question": row["message"] if row["message"].strip() else EMPTY_MESSAGE,
                "answer": _no_fake_citations(row["response"]),
                "contexts": [{"id": f"{item_id}#0", "text": row["knowledge"], "source": f"begin/{folder}"}],
                "meta": {"set": "begin", "data_source": row["data_source"], "model_name": row["model_name"],
                         "begin_label": raw},
            })
            value = BEGIN_LABELS[raw]
            if value is not None:
                labels.append({"task": "answer_faithfulness", "item_id": item_id, "claim_index": None,
                               "annotator": "begin", "value": value, "raw_label": raw})
    _write_jsonl(out / "begin_eval.jsonl", items)
    _write_jsonl(out / "begin_labels.jsonl", labels)
    print("  begin raw labels:", Counter(item["meta"]["begin_label"] for item in items))


def build_wice(src: Path, out: Path) -> None:
    # Labels come from full_articles (one row per claim; matches the published counts). Evidence is
    # the union of the oracle chunks' sentences (each chunk = supporting sentences + random fillers),
    # ordered by their index in the article.
    full = {}
    with (src / "wice/full_articles/claim_dev.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            full[row["meta"]["id"]] = row
    sentences: dict[str, dict[int, str]] = defaultdict(dict)
    oracle: dict[str, set[int]] = defaultdict(set)
    order: list[str] = []
    with (src / "wice/oracle_chunks/claim_dev.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            claim_id = row["meta"]["id"]
            if claim_id not in sentences:
                order.append(claim_id)
            for index, sentence in zip(row["meta"]["chunk_idx"], row["evidence"], strict=True):
                sentences[claim_id][index] = sentence
            oracle[claim_id].update(row["meta"].get("oracle_idx", ()))
    items, labels, units = [], [], []
    for claim_id in order:
        article = full[claim_id]
        item_id = f"wice-{claim_id}"
        indices = sorted(sentences[claim_id])
        # gold = any annotator's supporting sentence that the shipped chunks contain
        supporting = oracle[claim_id] | {i for group in article["supporting_sentences"] for i in group}
        contexts = [{"id": f"{item_id}#{pos}", "text": sentences[claim_id][idx]} for pos, idx in enumerate(indices)]
        gold = [f"{item_id}#{pos}" for pos, idx in enumerate(indices) if idx in supporting]
        claim = _no_fake_citations(article["claim"])
        title = article["meta"]["claim_title"]
        section = (article["meta"].get("claim_section") or "").strip().rstrip(".")
        question = f"What does the cited source say about {title}" + (f" ({section})?" if section else "?")
        items.append({
            "id": item_id, "question": question, "answer": claim, "contexts": contexts,
            "gold_context_ids": gold,
            "meta": {"set": "wice", "wice_id": claim_id, "claim_title": title, "claim_section": section,
                     "label": article["label"], "article_sentence_index": indices},
        })
        labels.append({"task": "claim_support", "item_id": item_id, "claim_index": 0, "annotator": "wice",
                       "value": WICE_LABELS[article["label"]], "raw_label": article["label"]})
        units.append({"item_id": item_id, "claim_index": 0, "text": claim})
    _write_jsonl(out / "wice_claims.jsonl", items)
    _write_jsonl(out / "wice_labels.jsonl", labels)
    _write_jsonl(out / "wice_claims_units.jsonl", units)
    print("  wice raw labels:", Counter(row["raw_label"] for row in labels))


def build_alce(src: Path, out: Path) -> None:
    data = json.loads((src / "alce/human_eval_utility_asqa.json").read_text(encoding="utf-8"))
    rows = []
    for number, system in enumerate(sorted(data["asqa"]), start=1):
        for key, record in data["asqa"][system].items():
            if key == "overall_results":
                continue
            rows.append({"id": f"alce-s{number}-{record['id']}",
                         "question_id": record["id"], "question": record["question"],
                         "answer": record["output"], "utility": int(record["utility_score"]),
                         "system": system})
    _write_jsonl(out / "alce_relevance.jsonl", rows)


def build_xstest(src: Path, out: Path) -> None:
    rows = []
    for model in XSTEST_MODELS:
        path = src / f"xstest/model_completions/xstest_v2_completions_{model}.csv"
        with path.open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                rows.append({"id": f"xstest-{model}-{row['id']}", "prompt": row["prompt"],
                             "completion": row["completion"], "annotation_1": row["annotation_1"],
                             "annotation_2": row["annotation_2"], "final_label": row["final_label"],
                             "type": row["type"], "model": model})
    _write_jsonl(out / "xstest_abstention.jsonl", rows)


def copy_licences(src: Path, out: Path) -> None:
    target = out / "licenses"
    target.mkdir(exist_ok=True)
    for source, name in LICENSE_FILES.items():
        shutil.copyfile(src / source, target / name)
    print(f"copied {len(LICENSE_FILES)} licence files to {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=Path("/work/shared/data"))
    parser.add_argument("--out", type=Path, default=REPO / "data")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    build_begin(args.src, args.out)
    build_wice(args.src, args.out)
    build_alce(args.src, args.out)
    build_xstest(args.src, args.out)
    copy_licences(args.src, args.out)


if __name__ == "__main__":
    main()
