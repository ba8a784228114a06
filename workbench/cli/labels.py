"""CLI: ``labels add`` (items and units into the store), ``labels import`` and ``labels export``.

Each command opens the store once (``--db``, default ``WORKBENCH_DB`` or ``labels/workbench.db``),
does one thing, prints what it did, and closes it. Problems in input files are reported with
file, line, field and what was expected; exit code 2 means nothing was written.
"""
from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import click

from workbench import store
from workbench.config import JudgeConfig
from workbench.jsonl import jsonl_objects
from workbench.calibration.labelling import (
    ANSWER_TASKS,
    CLAIM_TASK,
    DEFAULT_TASKS,
    PASSAGE_TASK,
    answer_units,
    decomposed_claim_units,
)
from workbench.types import Label, Unit

EXPORT_COLUMNS = ("task", "item_id", "claim_index", "annotator", "value", "note", "created_at", "text_hash", "text")
REQUIRED_IMPORT_FIELDS = ("task", "item_id", "claim_index", "annotator", "value")
DB_HELP = "Label store (default: $WORKBENCH_DB or labels/workbench.db)."


class InputFileError(ValueError):
    """Problems in a claims or labels file; ``problems`` holds ``"file:line: ..."`` strings."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def _fail(message: str, code: int = 2) -> None:
    click.echo(message, err=True)
    raise SystemExit(code)


def _store_exists(db_path: Path | None) -> bool:
    return store.resolve_db_path(db_path).is_file()


def _resolved_db(db_path: Path | None) -> Path:
    return store.resolve_db_path(db_path)


def _open_existing(db_path: Path | None):
    """Open a store that must exist already (exit 2 with a clear message otherwise)."""
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
    allowed = (CLAIM_TASK, *ANSWER_TASKS, PASSAGE_TASK)
    bad = [t for t in tasks if t not in allowed]
    if bad or not tasks:
        raise click.BadParameter(f"expected tasks from {', '.join(allowed)}, got {', '.join(bad) or 'nothing'}")
    return tuple(dict.fromkeys(tasks))


def _int_or_none(value, field: str) -> tuple[int | None, str | None]:
    """Parse a claim index: blank/None -> None; an integer >= 0 (or its digits) -> int; else an error."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "null", "none")):
        return None, None
    if isinstance(value, bool):
        return None, f"field '{field}': expected an integer >= 0 or empty, got {value!r}"
    if isinstance(value, int) and value >= 0:
        return value, None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip()), None
    return None, f"field '{field}': expected an integer >= 0 or empty, got {value!r}"


def read_claims_file(path: str | Path, item_ids: set[str]) -> list[Unit]:
    """Read ``--claims`` JSONL rows ``{"item_id", "claim_index", "text"}`` into claim units.

    Every row must name a known item, a claim index (integer >= 0, unique per item) and non-empty
    text. Raises ``InputFileError`` listing every bad line; nothing is returned partially.
    """
    source = str(path)
    units: list[Unit] = []
    seen: dict[tuple[str, int], int] = {}
    try:
        handle = open(path, encoding="utf-8-sig")
    except OSError as exc:
        raise InputFileError([f"{source}: cannot open: {exc.strerror or exc}"]) from None
    with handle:
        rows, problems = jsonl_objects(handle, source)
        for line_no, row in rows:
            item_id, text = row.get("item_id"), row.get("text")
            if not isinstance(item_id, (str, int)) or isinstance(item_id, bool) or str(item_id) == "":
                problems.append(f"{source}:{line_no}: field 'item_id': expected an item id, got {item_id!r}")
                continue
            item_id = str(item_id)
            if item_id not in item_ids:
                problems.append(f"{source}:{line_no}: field 'item_id': no item {item_id!r} in the eval set or store")
            index, error = _int_or_none(row.get("claim_index"), "claim_index")
            if error or index is None:
                problems.append(f"{source}:{line_no}: " + (error or "field 'claim_index': expected an integer >= 0, got nothing"))
            if not isinstance(text, str) or not text.strip():
                problems.append(f"{source}:{line_no}: field 'text': expected the claim text, got {text!r}")
            if index is not None and (item_id, index) in seen:
                problems.append(
                    f"{source}:{line_no}: claim {index} of item {item_id!r} already given on line {seen[(item_id, index)]}"
                )
            if index is not None and isinstance(text, str) and text.strip() and not error:
                seen[(item_id, index)] = line_no
                units.append(Unit(Unit.make_id(CLAIM_TASK, item_id, index), CLAIM_TASK, item_id, index, text.strip()))
    if problems:
        raise InputFileError(sorted(problems, key=_line_of))
    return units


def _line_of(problem: str) -> int:
    """The line number in a ``"<file>:<line>: ..."`` problem (0 when it names none), for sorting."""
    head = problem.split(": ", 1)[0]
    number = head.rsplit(":", 1)[-1]
    return int(number) if number.isdigit() else 0


def _detect_format(path: Path, explicit: str | None = None) -> str:
    if explicit:
        return explicit
    return "jsonl" if path.suffix.lower() in (".jsonl", ".ndjson", ".json") else "csv"


def read_label_rows(path: str | Path) -> tuple[list[tuple[int, dict]], list[str]]:
    """Read a labels file (CSV with a header, or JSONL) into ``(line, record)`` pairs and problems.

    CSV line numbers are the physical line a record starts on (header = line 1). Extra columns
    are kept in the record and ignored later.
    """
    path = Path(path)
    source = str(path)
    rows: list[tuple[int, dict]] = []
    problems: list[str] = []
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:  # keep "\r" inside quoted CSV cells
            text = handle.read()
    except UnicodeDecodeError as exc:
        return [], [f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})"]
    except OSError as exc:
        return [], [f"{source}: cannot open: {exc.strerror or exc}"]
    if _detect_format(path) == "jsonl":
        # split on "\n" only: str.splitlines would also break on U+0085, U+2028 ... inside strings
        return jsonl_objects(text.split("\n"), source)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return [], [f"{source}: empty file, expected a header row {','.join(REQUIRED_IMPORT_FIELDS)}[,note]"]
    except csv.Error as exc:
        return [], [f"{source}:1: CSV syntax error ({exc})"]
    header = [h.strip() for h in header]
    missing = [f for f in REQUIRED_IMPORT_FIELDS if f not in header]
    if missing:
        return [], [f"{source}:1: header: missing column(s) {', '.join(missing)} (found {', '.join(header)})"]
    last = reader.line_num
    try:
        for cells in reader:
            start, last = last + 1, reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            if len(cells) != len(header):
                problems.append(f"{source}:{start}: expected {len(header)} cells (as in the header), got {len(cells)}")
                continue
            rows.append((start, dict(zip(header, cells))))
    except csv.Error as exc:
        problems.append(f"{source}:{reader.line_num}: CSV syntax error ({exc}); reading stopped here")
    return rows, problems


def labels_from_rows(
    rows: Sequence[tuple[int, dict]], source: str
) -> tuple[list[Label], list[str | None], list[int], list[str]]:
    """Turn ``(line, record)`` pairs into labels; returns labels, their retracted_at, lines, problems.

    A record needs ``task, item_id, claim_index, annotator, value`` (``claim_index`` may be
    empty for answer-level tasks); ``note``, ``created_at`` and ``retracted_at`` are optional.
    """
    labels: list[Label] = []
    retracted: list[str | None] = []
    lines: list[int] = []
    problems: list[str] = []
    for line_no, record in rows:
        where = f"{source}:{line_no}"
        bad = False
        for field in REQUIRED_IMPORT_FIELDS:
            if field not in record:
                problems.append(f"{where}: field '{field}': missing")
                bad = True
        for field in ("task", "item_id", "annotator", "value"):
            value = record.get(field)
            if field in record and (value is None or (isinstance(value, str) and not value.strip())):
                problems.append(f"{where}: field '{field}': expected a value, got nothing")
                bad = True
            elif field in record and (isinstance(value, bool) or not isinstance(value, (str, int))):
                problems.append(f"{where}: field '{field}': expected text, got {value!r}")
                bad = True
        index, error = _int_or_none(record.get("claim_index"), "claim_index")
        if error:
            problems.append(f"{where}: {error}")
            bad = True
        optional = {}
        for field in ("note", "created_at", "retracted_at"):
            value = record.get(field)
            if value is not None and not isinstance(value, str):
                problems.append(f"{where}: field '{field}': expected text, got {value!r}")
                bad = True
            optional[field] = value if value else None
        if bad:
            continue
        task, item_id = str(record["task"]), str(record["item_id"])
        labels.append(
            Label(
                Unit.make_id(task, item_id, index),
                task,
                str(record["annotator"]),
                str(record["value"]),
                optional["note"],
                optional["created_at"],
            )
        )
        retracted.append(optional["retracted_at"])
        lines.append(line_no)
    return labels, retracted, lines, problems


def resolve_text_versions(
    db, labels: Sequence[Label], lines: Sequence[int], records: dict[int, dict], source: str
) -> tuple[list[Label], list[str], int]:
    """Point each label at the unit version whose text it was made on; ``(labels, problems, unchecked)``.

    A record may carry ``text_hash`` (as ``labels export`` writes it) and/or ``text`` (the claim,
    answer or passage labelled). With ``text_hash`` the label goes to the version with that hash,
    stale or live; with ``text`` only, the slot's live version must have exactly that text
    (surrounding whitespace aside). Every mismatch is a ``"file:line: ..."`` problem; nothing is
    attached to other text. A record with neither goes to the live version unchecked (counted).
    """
    resolved: list[Label] = []
    problems: list[str] = []
    unchecked = 0
    for label, line_no in zip(labels, lines):
        record = records.get(line_no, {})
        given_hash, given_text = record.get("text_hash"), record.get("text")
        given_hash = given_hash.strip() if isinstance(given_hash, str) and given_hash.strip() else None
        given_text = given_text if isinstance(given_text, str) and given_text.strip() else None
        item_id, index = str(record.get("item_id")), _int_or_none(record.get("claim_index"), "claim_index")[0]
        versions = store.slot_versions(db, label.task, item_id, index) if label.task in store.TASK_FIELDS else []
        live = [v for v in versions if not v["stale"]]
        where = f"{source}:{line_no}"
        slot = Unit.make_id(label.task, item_id, index)
        if not versions:
            resolved.append(label)  # validate_labels reports the missing unit
            continue
        if given_hash is not None:
            match = [v for v in versions if v["text_hash"] == given_hash]
            if not match:
                now = live[0]["text_hash"] if live else "none"
                problems.append(f"{where}: field 'text_hash': {given_hash!r} matches no version of {slot} "
                                f"(its current text has hash {now}); the text labelled is not in the store")
                continue
            if given_text is not None and given_text.strip() != match[0]["text"].strip():
                problems.append(f"{where}: field 'text': differs from the text of {slot} with hash {given_hash}")
                continue
            resolved.append(Label(match[0]["unit_id"], *_label_rest(label)))
            continue
        if not live:
            problems.append(f"{where}: {slot} has no current text (only stale versions); give text_hash to "
                            "attach the label to an old version")
            continue
        if given_text is not None:
            if given_text.strip() != live[0]["text"].strip():
                older = any(v["stale"] and v["text"].strip() == given_text.strip() for v in versions)
                problems.append(
                    f"{where}: field 'text': the label was made on {_clip(given_text)!r}, but {slot} in the store "
                    f"reads {_clip(live[0]['text'])!r}" + (" (the labelled text is an older, stale version)" if older else "")
                )
                continue
        else:
            unchecked += 1
        resolved.append(Label(live[0]["unit_id"], *_label_rest(label)))
    return resolved, problems, unchecked


def _label_rest(label: Label) -> tuple:
    return label.task, label.annotator, label.value, label.note, label.created_at


def _clip(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def already_present(db, labels: Sequence[Label], retracted: Sequence[str | None]) -> list[bool]:
    """Which labels to keep on import (``True``) so that importing the same file twice adds nothing.

    A row is skipped when it carries ``created_at`` and an identical row (unit, annotator, value,
    note, created_at, retracted_at) is already in the log, or when it has no ``created_at`` and
    the annotator's current label for the unit already has the same value and note.
    """
    log = {
        (r["unit_id"], r["annotator"], r["value"], r["note"], r["created_at"], r["retracted_at"])
        for r in store.label_log(db)
    }
    current = {(l.unit_id, l.annotator): (l.value, l.note) for l in store.current_labels(db, include_stale=True)}
    keep = []
    for label, retracted_at in zip(labels, retracted):
        if label.created_at is not None:
            key = (label.unit_id, label.annotator, label.value, label.note, label.created_at, retracted_at)
            keep.append(key not in log)
            log.add(key)
        else:
            same = current.get((label.unit_id, label.annotator)) == (label.value, label.note)
            keep.append(not same)
            current[(label.unit_id, label.annotator)] = (label.value, label.note)
    return keep


def export_rows(db, *, all_history: bool = False) -> list[dict]:
    """Label rows to export, oldest first.

    Default: current labels on live units (text unchanged since labelled). ``all_history``: every
    row of the log, with ``retracted_at`` and ``stale`` (1 = the unit's text changed since; the
    row's ``text`` and ``text_hash`` are the old text's).
    """
    columns = EXPORT_COLUMNS + (("retracted_at", "stale") if all_history else ())
    return [{c: row[c] for c in columns}
            for row in store.label_log(db, current_only=not all_history, include_stale=all_history)]


_LINE_BREAKS_JSON_KEEPS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _json_line(record: dict) -> str:
    """One JSONL line, UTF-8 text kept readable, but with the characters some line readers treat as
    line breaks (U+0085, U+2028, U+2029; JSON leaves them raw) escaped, so a line stays a line."""
    text = json.dumps(record, ensure_ascii=False)
    for char, escaped in _LINE_BREAKS_JSON_KEEPS.items():
        text = text.replace(char, escaped)
    return text + "\n"


def format_rows(rows: Sequence[dict], fmt: str, columns: Sequence[str]) -> str:
    """Render export rows as CSV (header first; ``None`` -> empty cell) or JSONL (``None`` -> null)."""
    if fmt == "jsonl":
        return "".join(_json_line({c: row[c] for c in columns}) for row in rows)
    buffer = io.StringIO(newline="")
    # RFC 4180 line ends: with "\r\n" as terminator the writer also quotes a field holding a lone "\r"
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row[c] is None else row[c] for c in columns])
    return buffer.getvalue()


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
@click.option("--tasks", multiple=True, default=(",".join(DEFAULT_TASKS),), show_default="the first four",
              help=f"Comma-separated tasks to make units for, from: {CLAIM_TASK}, {', '.join(ANSWER_TASKS)}, {PASSAGE_TASK} "
                   "(one unit per retrieved passage).")
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
    from workbench.scoring.dataset import DatasetError, load_eval_set

    task_list = parse_tasks(tasks)
    try:
        items = load_eval_set(evalset)
    except DatasetError as exc:
        _fail(str(exc))
    db_existed = _store_exists(db_path)
    with store.open_db(db_path) as db:
        if not db_existed:
            click.echo(f"store: created a new label store at {_resolved_db(db_path)}")
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
    rows, problems = read_label_rows(file)
    labels_, retracted, lines, row_problems = labels_from_rows(rows, str(file))
    problems += row_problems
    with _open_existing(db_path) as db:
        labels_, text_problems, unchecked = resolve_text_versions(db, labels_, lines, dict(rows), str(file))
        problems += text_problems
        if text_problems:  # keep the rows that resolved, aligned with their lines, for the checks below
            bad_lines = {_line_of(p) for p in text_problems}
            kept = [(r, n) for r, n in zip(retracted, lines) if n not in bad_lines]
            retracted, lines = [r for r, _ in kept], [n for _, n in kept]
        for index, message in store.validate_labels(db, labels_, allow_stale=True):
            problems.append(f"{file}:{lines[index]}: {message}")
        if not problems and not labels_:
            problems.append(f"{file}: no label rows found")
        if problems:
            def line_of(problem: str) -> int:
                head = problem[len(str(file)) + 1:].split(":", 1)[0]
                return int(head) if head.isdigit() else 0

            _fail("\n".join(sorted(problems, key=line_of)) + f"\n{len(problems)} problem(s); nothing imported")
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
    fmt = _detect_format(out, fmt) if out is not None else (fmt or "csv")
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
