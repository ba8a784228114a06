"""Label files in and out of the store: reading claims and label files (JSONL/CSV) with a ``file:line``
for every problem, matching labels to the text versions they were made on, and export rows.
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from workbench import store
from workbench.calibration.labelling import CLAIM_TASK
from workbench.jsonl import jsonl_objects
from workbench.types import Label, Unit

EXPORT_COLUMNS = ("task", "item_id", "claim_index", "annotator", "value", "note", "created_at", "text_hash", "text")


REQUIRED_IMPORT_FIELDS = ("task", "item_id", "claim_index", "annotator", "value")


class InputFileError(ValueError):
    """Problems in a claims or labels file; ``problems`` holds ``"file:line: ..."`` strings."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


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
        raise InputFileError(sorted(problems, key=problem_line))
    return units


def problem_line(problem: str) -> int:
    """The line number in a ``"<file>:<line>: ..."`` problem (0 when it names none), for sorting."""
    head = problem.split(": ", 1)[0]
    number = head.rsplit(":", 1)[-1]
    return int(number) if number.isdigit() else 0


def detect_format(path: Path, explicit: str | None = None) -> str:
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
    if detect_format(path) == "jsonl":
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


def _clip(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."
