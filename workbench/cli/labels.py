"""CLI: ``labels add`` (items and units into the store), ``labels import`` and ``labels export``.

Each command opens the store once (``--db``, default ``WORKBENCH_DB`` or ``labels/workbench.db``),
does one thing, prints what it did, and closes it. Problems in input files are reported with
file, line, field and what was expected; exit code 2 means nothing was written.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from workbench.cli.common import DB_HELP, echo_err
from workbench.config import JudgeConfig
from workbench.tasks import BY_NAME, DEFAULT_TASKS, TASK_NAMES

# The store, the label files and the labelling path are imported inside the commands: ``workbench
# --help`` must not pay for sqlite-utils (and pandas behind it).

if TYPE_CHECKING:
    import sqlite_utils

def _fail(message: str, code: int = 2) -> NoReturn:
    echo_err(message)
    raise SystemExit(code)


def _open_existing(db_path: Path | None) -> sqlite_utils.Database:
    """Open a store that must exist already (exit 2 with a clear message otherwise)."""
    from workbench import store

    try:
        return store.open_db(db_path, create=False)
    except store.StoreNotFoundError as exc:
        _fail(f"error: {exc}")


def _build_judge(backend: str | None, model: str | None):
    """The judge for decomposition (a seam for tests)."""
    from workbench.judges.factory import build_judge

    judge, _embedder = build_judge(JudgeConfig.from_env(backend=backend, model=model))
    return judge


# --------------------------------------------------------------------------------------------
# Pure helpers
# --------------------------------------------------------------------------------------------


def parse_tasks(text: str | Sequence[str]) -> tuple[str, ...]:
    """Split ``--tasks`` (comma-separated, may be repeated) into known tasks ``labels add`` makes.

    Raises ``click.BadParameter`` naming the unknown ones.
    """
    parts = [text] if isinstance(text, str) else list(text)
    tasks = [t.strip() for part in parts for t in part.split(",") if t.strip()]
    allowed = TASK_NAMES
    bad = [t for t in tasks if t not in allowed]
    if bad or not tasks:
        raise click.BadParameter(f"expected tasks from {', '.join(allowed)}, got {', '.join(bad) or 'nothing'}")
    return tuple(dict.fromkeys(tasks))


# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------


@click.group("labels")
def labels() -> None:
    """Put eval items into the label store, and import or export human labels.

    Example: workbench labels export --out labels.csv
    """


@labels.command("add")
@click.argument("evalset", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--claims", "claims_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help='JSONL rows {"item_id", "claim_index", "text"}: take claims from this file, no judge.')
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help=DB_HELP)
@click.option("--judge", "backend", type=click.Choice(["offline", "openai"]), default=None,
              help="Judge that decomposes answers into claims (env WORKBENCH_JUDGE, default offline).")
@click.option("--model", default=None, help="Judge model (env WORKBENCH_MODEL).")
@click.option("--tasks", multiple=True, default=(",".join(DEFAULT_TASKS),), show_default=",".join(DEFAULT_TASKS),
              help="Comma-separated tasks to make units for, from: "
                   + ", ".join(f"{t.name} (one unit per retrieved passage)" if t.unit == "passage"
                               else f"{t.name} (items with a reference only)" if t.needs_reference else t.name
                               for t in BY_NAME.values()) + ".")
def add_command(evalset: Path, claims_file: Path | None, db_path: Path | None, backend: str | None,
                model: str | None, tasks: tuple[str, ...]) -> None:
    """Store an eval set's items and make the units people and judges label.

    Answer-level tasks get one unit per item (text = the answer). claim_support gets one unit per
    claim: each answer is decomposed once by the judge, or, with --claims, the claims come from
    the file so labels made elsewhere line up exactly. Items that already have claim units are
    not decomposed again; re-running is safe. A unit is one version of a text: an item stored
    again with changed text gets new units (the command says how many changed), and the old
    units keep their labels as stale, never counted for the new text. Creates the store if
    needed, and says so.

    Example: workbench labels add data/demo_rag.jsonl
    """
    from workbench import store
    from workbench.calibration.label_files import InputFileError, read_claims_file
    from workbench.calibration.labelling import CLAIM_TASK, answer_units, decomposed_claim_units
    from workbench.scoring.dataset import DatasetError, load_eval_set
    from workbench.types import Unit

    task_list = parse_tasks(tasks)
    try:
        items = load_eval_set(evalset)
    except DatasetError as exc:
        _fail(str(exc))
    db_file = store.resolve_db_path(db_path)
    db_existed = db_file.is_file()
    with store.open_db(db_file) as db:
        if not db_existed:
            click.echo(f"store: created a new label store at {db_file}")
        known_before = {item.id for item in store.list_items(db)}
        units_before = Counter(unit.task for unit in store.list_units(db))
        file_units: list[Unit] = []
        if CLAIM_TASK in task_list and claims_file is not None:
            try:  # checked before anything is written
                file_units = read_claims_file(claims_file, known_before | {item.id for item in items})
            except InputFileError as exc:
                _fail(f"{exc}\nnothing stored")
        stale_before = store.stale_label_count(db)
        item_counts = store.store_items(db, items)
        changed_slots = store.store_units(db, answer_units(items, task_list), source="answer")["changed"]
        failures: list[str] = []
        if CLAIM_TASK not in task_list:
            click.echo("judge: none (no claim_support units asked for)")
            if claims_file is not None:
                click.echo(f"warning: --claims {claims_file} ignored: claim_support is not in --tasks", err=True)
        else:
            if claims_file is not None:
                click.echo(f"judge: none (claims from {claims_file})")
                changed_slots += store.store_units(db, file_units, source=f"file:{claims_file.name}")["changed"]
            else:
                decomposed = store.items_with_claim_units(db)
                todo = [item for item in items if item.id not in decomposed]
                if not todo:
                    click.echo("judge: none needed (every item already has claim units)")
                else:
                    judge = _build_judge(backend, model)
                    click.echo(f"judge: {judge.fingerprint} (decomposing {len(todo)} answers into claims)")
                    units, failures = decomposed_claim_units(judge, todo)
                    changed_slots += store.store_units(db, units, source=judge.fingerprint)["changed"]
        all_units = store.list_units(db)
        units_after = Counter(unit.task for unit in all_units)
        new_units = units_after - units_before
        ids = {item.id for item in items}
        present = sum(1 for unit in all_units if unit.item_id in ids and unit.task in task_list)
        new_items = item_counts["new"]
        click.echo(f"items: {len(items)} stored from {evalset} ({new_items} new, {len(items) - new_items} updated, "
                   f"{item_counts['changed']} with changed text)")
        made = ", ".join(f"{task} {new_units[task]}" for task in task_list)
        total_new = sum(new_units.values())
        click.echo(f"units: {total_new} new ({made}); {present - total_new} already present")
        n_stale = len(set(item_counts["stale_units"])) + changed_slots
        stale_labels = store.stale_label_count(db) - stale_before
        if n_stale or item_counts["changed"]:
            click.echo(f"changed: {n_stale} units had their text changed; the old versions are kept as stale with "
                       f"their {stale_labels} labels, which never count for the new text")
        click.echo(f"store: {sum(units_after.values())} units, {len(known_before | {i.id for i in items})} items")
    if failures:
        for line in failures[:20]:
            click.echo(f"decompose failed: {line}", err=True)
        _fail(f"{len(failures)} answer(s) not decomposed; run the command again to retry them", code=1)


@labels.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help=DB_HELP)
def import_command(file: Path, db_path: Path | None) -> None:
    """Import human labels from CSV or JSONL (rows: task,item_id,claim_index,annotator,value[,note]).

    claim_index is empty for answer-level tasks. Optional created_at (and retracted_at, from an
    --all-history export) are kept. Optional text (the claim, answer or passage labelled) and
    text_hash (as `labels export` writes it) are checked against the store: a label is attached
    only to the unit version with that exact text, never to other text. Every row is checked
    first (unknown task or value, unknown unit, missing field, text mismatch); if any is bad,
    each is reported as file:line and nothing is written. The store must exist.

    Example: workbench labels add data/wice_claims.jsonl --claims data/wice_claims_units.jsonl && workbench labels import data/wice_labels.jsonl
    """
    from workbench import store
    from workbench.calibration.label_files import (
        already_present,
        labels_from_rows,
        problem_line,
        read_label_rows,
        resolve_text_versions,
    )

    rows, problems = read_label_rows(file)
    labels_, retracted, lines, row_problems = labels_from_rows(rows, str(file))
    problems += row_problems
    with _open_existing(db_path) as db:
        labels_, text_problems, unchecked = resolve_text_versions(db, labels_, lines, dict(rows), str(file))
        problems += text_problems
        if text_problems:  # keep the rows that resolved, aligned with their lines, for the checks below
            bad_lines = {problem_line(p) for p in text_problems}
            kept = [(r, n) for r, n in zip(retracted, lines) if n not in bad_lines]
            retracted, lines = [r for r, _ in kept], [n for _, n in kept]
        for index, message in store.validate_labels(db, labels_, allow_stale=True):
            problems.append(f"{file}:{lines[index]}: {message}")
        if not problems and not labels_:
            problems.append(f"{file}: no label rows found")
        if problems:
            _fail("\n".join(sorted(problems, key=problem_line)) + f"\n{len(problems)} problem(s); nothing imported")
        keep = already_present(db, labels_, retracted)
        labels_ = [label for label, k in zip(labels_, keep) if k]
        retracted = [r for r, k in zip(retracted, keep) if k]
        store.append_labels(db, labels_, retracted_at=retracted if any(retracted) else None, allow_stale=True)
    by_task = Counter(label.task for label in labels_)
    shown = ", ".join(f"{t} {n}" for t, n in sorted(by_task.items())) or "nothing new"
    skipped = len(keep) - len(labels_)
    click.echo(f"imported {len(labels_)} labels from {file} ({shown}); {skipped} already in the store, skipped")
    if unchecked:
        click.echo(f"warning: {unchecked} row(s) carried no text or text_hash, so the text they were made on "
                   "could not be checked; they were attached to the current text of their unit", err=True)


@labels.command("export")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help=DB_HELP)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Output file (default: standard output).")
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl"]), default=None,
              help="Output format (default: from --out's suffix, else csv).")
@click.option("--all-history", is_flag=True,
              help="Every row of the log, retracted ones and those on stale text too (adds retracted_at, stale).")
def export_command(db_path: Path | None, out: Path | None, fmt: str | None, all_history: bool) -> None:
    """Export labels: one row per current label per annotator, oldest first.

    Columns: task,item_id,claim_index,annotator,value,note,created_at. Importing the file into a
    store with the same items and units gives back the same labels.

    Example: workbench labels export --out labels.csv
    """
    from workbench.calibration.label_files import EXPORT_COLUMNS, detect_format, export_rows, format_rows

    fmt = detect_format(out, fmt) if out is not None else (fmt or "csv")
    columns = EXPORT_COLUMNS + (("retracted_at", "stale") if all_history else ())
    with _open_existing(db_path) as db:
        rows = export_rows(db, all_history=all_history)
    text = format_rows(rows, fmt, columns)
    if out is None:
        click.echo(text, nl=False)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8", newline="")
    click.echo(f"exported {len(rows)} labels to {out}", err=True)


COMMANDS: list = [labels]
