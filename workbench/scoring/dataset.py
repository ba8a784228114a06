"""Load and validate eval sets (JSONL or CSV) and citation corpora.

An eval set holds one item per JSONL line (or CSV row): ``question``, ``answer`` and ``contexts``
are required; ``id``, ``reference``, ``gold_context_ids`` and ``answerable`` are optional. RAGAS
and DeepEval field names are accepted as aliases (see ``FIELD_ALIASES``). Unknown fields are
ignored.

Errors are collected, never dropped: every bad line of a file is reported in one
:class:`DatasetError` whose message lists each :class:`Problem` as ``file:line: field 'x': what
was expected, what was found``. The only exception is a CSV syntax error (an unclosed quote, say),
after which the reader cannot find the next record reliably, so reading stops there (and says so).

I/O stays at the edge: :func:`parse_item` turns one decoded record (a ``dict``) into an
:class:`~workbench.types.EvalItem` without touching the file system; the loaders stream the file
line by line, decode, and call it.
"""
from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from workbench.scoring.limits import DEFAULT_LIMITS, over_limit
from workbench.text import DEFAULT_CITATION_PATTERN
from workbench.types import EvalItem, Passage

__all__ = [
    "CSV_FIELD_SIZE_LIMIT",
    "DatasetError",
    "FIELD_ALIASES",
    "MAX_PROBLEMS_SHOWN",
    "Problem",
    "load_corpus",
    "load_eval_set",
    "parse_item",
    "parse_passage",
]

#: Canonical field -> accepted aliases, in the order they are looked up.
#: RAGAS: ``user_input``, ``response``, ``retrieved_contexts`` (``reference`` is already canonical;
#: ``ground_truth`` is its RAGAS 0.1 name). DeepEval: ``input``, ``actual_output``,
#: ``retrieval_context``, ``expected_output``.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "question": ("user_input", "input"),
    "answer": ("response", "actual_output"),
    "contexts": ("retrieved_contexts", "retrieval_context"),
    "reference": ("expected_output", "ground_truth"),
}
REQUIRED_FIELDS: tuple[str, ...] = ("question", "answer", "contexts")

#: How many problems ``str(DatasetError)`` lists before summarising the rest as "and N more".
MAX_PROBLEMS_SHOWN = 50
#: The CSV field size limit the loader raises ``csv.field_size_limit`` to (never lowers it).
CSV_FIELD_SIZE_LIMIT = 2**31 - 1

_JSON_LINE_SUFFIXES = (".jsonl", ".json", ".ndjson")
_CSV_SUFFIXES = (".csv",)
# CSV columns whose cells hold JSON text (lists/objects); blank cell = field absent.
_CSV_JSON_FIELDS = frozenset({"contexts", "gold_context_ids"})
# CSV columns where a blank cell means "absent" rather than "empty string".
_CSV_BLANK_IS_ABSENT = frozenset({"id", "reference", "answerable"})
_BOOL_WORDS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


# --------------------------------------------------------------------------------------------
# Problems and the error that carries them
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file.

    Attributes:
        file: The path as the caller gave it.
        line: 1-based physical line (for CSV: the line the record starts on); ``None`` when the
            problem concerns the whole file (missing file, no items, bad option).
        field: The field as it is spelled in the file (an alias stays an alias), with a
            ``[index]`` / ``.key`` path into lists and objects; ``None`` for line-level problems.
        message: What was expected and what was found.
    """

    file: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        if self.field is None:
            return f"{where}: {self.message}"
        return f"{where}: field '{self.field}': {self.message}"


class DatasetError(ValueError):
    """An input file failed validation; ``problems`` lists every problem found, in file order.

    ``str()`` gives one problem per line, the first ``MAX_PROBLEMS_SHOWN`` of them, then
    ``... and N more problems``.
    """

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: list[Problem] = list(problems)
        super().__init__(self._render())

    def _render(self) -> str:
        shown = [str(p) for p in self.problems[:MAX_PROBLEMS_SHOWN]]
        hidden = len(self.problems) - len(shown)
        if hidden > 0:
            shown.append(f"... and {hidden} more problem{'s' if hidden != 1 else ''}")
        return "\n".join(shown)

    def __str__(self) -> str:
        return self._render()


# --------------------------------------------------------------------------------------------
# Pure parsing of one record
# --------------------------------------------------------------------------------------------


class _Invalid:
    """Sentinel for a value already reported as a problem upstream (e.g. a bad CSV cell)."""

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "<invalid>"


_INVALID: Any = _Invalid()


def _kind(value: Any) -> str:
    """The JSON-ish name of a value's type, for messages (``got int``, ``got null`` ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _show(value: Any, limit: int = 60) -> str:
    """A short, escaped rendering of an untrusted value for an error message."""
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + "..."
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Collector:
    """Accumulates problems for one record of one file."""

    def __init__(self, source: str, line: int | None) -> None:
        self.source = source
        self.line = line
        self.problems: list[Problem] = []

    def add(self, field: str | None, message: str) -> None:
        self.problems.append(Problem(self.source, self.line, field, message))


def _resolve(record: Mapping[str, Any], canonical: str, out: _Collector) -> tuple[str, Any, bool]:
    """Find ``canonical`` or one of its aliases in ``record``.

    Returns ``(name used, value, present)``. Names whose value is ``null`` count only when no name
    has a non-null value. Two names with different non-null values are a problem naming both.
    """
    names = [n for n in (canonical, *FIELD_ALIASES.get(canonical, ())) if n in record]
    if not names:
        return canonical, None, False
    given = [n for n in names if record[n] is not None]
    if not given:
        return names[0], None, True
    if any(record[n] is _INVALID for n in given):  # already reported upstream
        return given[0], _INVALID, True
    first = given[0]
    for other in given[1:]:
        if record[other] != record[first]:
            out.add(f"{first}/{other}", f"both '{first}' and '{other}' are given, with different "
                                        f"values; give only one of them")
            return first, _INVALID, True
    return first, record[first], True


def _id_string(value: Any, field: str, out: _Collector) -> str | None:
    """An id: a non-blank string, or an integer (turned into its decimal string)."""
    if isinstance(value, str):
        if value.strip():
            return value
        out.add(field, "expected a non-empty string, got an empty or blank string")
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    out.add(field, f"expected a string or integer, got {_kind(value)}")
    return None


def _parse_contexts(value: Any, field: str, item_id: str, out: _Collector) -> tuple[Passage, ...]:
    """Contexts: a list of strings or of objects ``{id?, text, source?, score?}``.

    A string, or an object without ``id``, gets the id ``<item id>#<index>`` (index from 0).
    Passage ids must be unique within the item.
    """
    if not isinstance(value, list):
        out.add(field, f"expected a list of strings or objects with 'text', got {_kind(value)}")
        return ()
    passages: list[Passage] = []
    first_index: dict[str, int] = {}
    for index, element in enumerate(value):
        where = f"{field}[{index}]"
        default_id = f"{item_id}#{index}"
        passage: Passage | None = None
        if isinstance(element, str):
            passage = Passage(id=default_id, text=element)
        elif isinstance(element, Mapping):
            passage = _parse_passage_fields(element, where, default_id, out, allow_score=True)
        else:
            out.add(where, f"expected a string or an object with 'text', got {_kind(element)}")
        if passage is None:
            continue
        if passage.id in first_index:
            out.add(f"{where}.id", f"duplicate passage id {_show(passage.id)} "
                                   f"(also {field}[{first_index[passage.id]}]); ids must be unique within an item")
            continue
        first_index[passage.id] = index
        passages.append(passage)
    return tuple(passages)


def _sub(where: str, key: str) -> str:
    """``where.key``, or just ``key`` at the top level."""
    return f"{where}.{key}" if where else key


def _parse_passage_fields(obj: Mapping[str, Any], where: str, default_id: str | None,
                          out: _Collector, *, allow_score: bool) -> Passage | None:
    """One passage object. ``default_id=None`` makes ``id`` required (corpus files)."""
    before = len(out.problems)
    if obj.get("id") is None:
        if default_id is None:
            out.add(_sub(where, "id"), "missing required field")
        passage_id = default_id
    else:
        passage_id = _id_string(obj["id"], _sub(where, "id"), out)
    text_field = _sub(where, "text")
    text = obj.get("text")
    if "text" not in obj:
        out.add(text_field, "missing required field (each passage needs 'text')")
    elif not isinstance(text, str):
        out.add(text_field, f"expected a string, got {_kind(text)}")
    source = obj.get("source")
    if source is not None and not isinstance(source, str):
        out.add(_sub(where, "source"), f"expected a string or null, got {_kind(source)}")
    score = obj.get("score") if allow_score else None
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            out.add(_sub(where, "score"), f"expected a number or null, got {_kind(score)}")
        elif not math.isfinite(score):
            out.add(_sub(where, "score"), f"expected a finite number, got {score}")
        else:
            score = float(score)
    if len(out.problems) > before or passage_id is None or not isinstance(text, str):
        return None
    return Passage(id=passage_id, text=text, source=source, score=score)


def _parse_record(record: Any, *, line: int, source: str) -> tuple[EvalItem | None, list[Problem]]:
    """Validate one record; return the item (``None`` if any problem) and all its problems."""
    out = _Collector(source, line)
    if not isinstance(record, Mapping):
        out.add(None, f"expected a JSON object, got {_kind(record)}")
        return None, out.problems

    raw_id = record.get("id")
    if raw_id is None:
        item_id: str | None = str(line)
    elif raw_id is _INVALID:
        item_id = None
    else:
        item_id = _id_string(raw_id, "id", out)

    values: dict[str, Any] = {}
    for name in REQUIRED_FIELDS:
        used, value, present = _resolve(record, name, out)
        if value is _INVALID:
            continue
        if not present:
            aliases = ", ".join(FIELD_ALIASES[name])
            out.add(name, f"missing required field (also accepted: {aliases})")
        elif name == "contexts":
            values[name] = _parse_contexts(value, used, item_id or str(line), out)
        elif not isinstance(value, str):
            out.add(used, f"expected a string, got {_kind(value)}")
        elif name == "question" and not value.strip():
            out.add(used, "expected a non-empty question, got an empty or blank string")
        else:
            values[name] = value

    used, reference, _ = _resolve(record, "reference", out)
    if reference is not None and reference is not _INVALID and not isinstance(reference, str):
        out.add(used, f"expected a string or null, got {_kind(reference)}")

    gold = record.get("gold_context_ids")
    gold_ids: tuple[str, ...] | None = None
    if gold is not None and gold is not _INVALID:
        if not isinstance(gold, list):
            out.add("gold_context_ids", f"expected a list of strings, got {_kind(gold)}")
        else:
            parsed = [_id_string(g, f"gold_context_ids[{i}]", out) for i, g in enumerate(gold)]
            gold_ids = tuple(p for p in parsed if p is not None)

    answerable = record.get("answerable")
    if answerable is None:
        answerable = True
    elif answerable is not _INVALID and not isinstance(answerable, bool):
        out.add("answerable", f"expected true or false, got {_kind(answerable)} {_show(answerable)}")

    # A value that is _INVALID, or a required field absent from ``values``, was reported upstream.
    if out.problems or item_id is None or any(v is _INVALID for v in (reference, gold, answerable)):
        return None, out.problems
    if any(name not in values for name in REQUIRED_FIELDS):
        return None, out.problems
    return EvalItem(
        id=item_id,
        question=values["question"],
        answer=values["answer"],
        contexts=values["contexts"],
        reference=reference,
        gold_context_ids=gold_ids,
        answerable=answerable,
        line=line,
    ), out.problems


def parse_item(record: dict, *, line: int, source: str) -> EvalItem:
    """Turn one decoded eval-set record into an :class:`EvalItem` (pure: no I/O).

    Args:
        record: One JSONL object (or a converted CSV row), canonical or alias field names.
        line: The 1-based line the record came from; it is the default ``id`` and ``item.line``.
        source: The file name, used in error messages only.

    Returns:
        The item. String contexts (and context objects without ``id``) get ids
        ``<item id>#<index>``; an integer ``id`` becomes its decimal string; a missing or null
        ``answerable`` is ``True``; missing ``reference``/``gold_context_ids`` are ``None``.
        An empty answer is allowed (scored as an empty/abstaining answer); a null one is not.

    Raises:
        DatasetError: listing every problem of the record (not just the first).
    """
    item, problems = _parse_record(record, line=line, source=source)
    if item is None:
        raise DatasetError(problems)
    return item


def parse_passage(record: dict, *, line: int, source: str) -> Passage:
    """Turn one corpus record ``{"id", "text", "source"?}`` into a :class:`Passage` (pure).

    ``id`` and ``text`` are required; an integer ``id`` becomes its decimal string.

    Raises:
        DatasetError: listing every problem of the record.
    """
    out = _Collector(source, line)
    if not isinstance(record, Mapping):
        raise DatasetError([Problem(source, line, None, f"expected a JSON object, got {_kind(record)}")])
    passage = _parse_passage_fields(record, "", None, out, allow_score=False)
    if passage is None:
        raise DatasetError(out.problems)
    return passage


# --------------------------------------------------------------------------------------------
# Line-level decoding (pure helpers used by the streaming loaders)
# --------------------------------------------------------------------------------------------


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json`` object hook: a key given twice would silently lose one value, so refuse it."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"key {_show(key)} appears twice in one object")
        result[key] = value
    return result


def _decode_json(text: str) -> tuple[Any, str | None]:
    """Parse one JSON document; return ``(value, None)`` or ``(None, problem message)``."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys), None
    except json.JSONDecodeError as exc:
        # A line is one JSON text, so an error past its end (lineno 2, after the newline) is
        # reported at the column just after the line's last character.
        column = exc.colno if exc.lineno == 1 else len(text.rstrip("\r\n")) + 1
        return None, f"not valid JSON: {exc.msg} at column {column}"
    except RecursionError:
        return None, "not valid JSON: nested too deeply"
    except ValueError as exc:  # duplicate keys, integers beyond Python's digit limit
        return None, f"not valid JSON: {exc}"


def _decode_line(raw: bytes, line: int, source: str, problems: list[Problem]) -> str | None:
    """Decode one physical line as UTF-8 (a BOM on line 1 is dropped); report and return None if not."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(source, line, None, f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at "
                                                    f"byte offset {exc.start} of the line; save the file as UTF-8"))
        return None
    if line == 1 and text.startswith("\ufeff"):
        text = text[1:]
    return text


# --------------------------------------------------------------------------------------------
# Streaming loaders (the I/O edge)
# --------------------------------------------------------------------------------------------


def _open(path: Path, source: str) -> BinaryIO:
    try:
        return open(path, "rb")  # noqa: SIM115 - closed by the caller's ``with``
    except FileNotFoundError:
        raise DatasetError([Problem(source, None, None, "file not found")]) from None
    except IsADirectoryError:
        raise DatasetError([Problem(source, None, None, "is a directory, expected a file")]) from None
    except OSError as exc:
        raise DatasetError([Problem(source, None, None, f"cannot open: {exc.strerror or exc}")]) from None


def _format_of(path: Path, source: str, allowed: Sequence[str]) -> str:
    suffix = path.suffix.lower()
    if suffix in _JSON_LINE_SUFFIXES and "jsonl" in allowed:
        return "jsonl"
    if suffix in _CSV_SUFFIXES and "csv" in allowed:
        return "csv"
    expected = [s for s in _JSON_LINE_SUFFIXES if "jsonl" in allowed] + [s for s in _CSV_SUFFIXES if "csv" in allowed]
    shown = f"'{suffix}'" if suffix else "no extension"
    raise DatasetError([Problem(source, None, None, f"unknown file type ({shown}): expected {', '.join(expected)}")])


_ARRAY_HINT = "this looks like a JSON array, but the loader expects JSON Lines (one object per line)"


def _jsonl_records(handle: BinaryIO, source: str, problems: list[Problem]) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, decoded value)`` for each non-blank, decodable JSON line; report the others."""
    first_content = True
    for line, raw in enumerate(handle, start=1):
        text = _decode_line(raw, line, source, problems)
        del raw  # keep at most two copies of a (possibly huge) line alive
        if text is None:
            first_content = False
            continue
        if not text or text.isspace():
            continue
        value, error = _decode_json(text)
        looks_like_array = first_content and (isinstance(value, list) or (len(text) < 8 and text.strip() == "["))
        first_content = False
        if looks_like_array:
            found = error or "expected a JSON object, got list"
            problems.append(Problem(source, line, None, f"{found}; {_ARRAY_HINT}"))
        elif error is not None:
            problems.append(Problem(source, line, None, error))
        else:
            yield line, value


class _LineFeed:
    """Feeds decoded physical lines to ``csv.reader``, remembering which lines failed to decode."""

    def __init__(self, handle: BinaryIO, source: str, problems: list[Problem]) -> None:
        self.handle = handle
        self.source = source
        self.problems = problems
        self.line = 0
        self.bad_lines: set[int] = set()

    def __iter__(self) -> Iterator[str]:
        for raw in self.handle:
            self.line += 1
            text = _decode_line(raw, self.line, self.source, self.problems)
            if text is None:
                self.bad_lines.add(self.line)
                text = raw.decode("utf-8", errors="replace")
            yield text


def _parse_bool_word(cell: str) -> bool | None:
    return _BOOL_WORDS.get(cell.strip().lower())


def _csv_cell_json(cell: str, column: str, out: _Collector) -> Any:
    value, error = _decode_json(cell)
    if error is None:
        return value
    hint = ""
    if cell.lstrip().startswith(("[", "{")) and "'" in cell:
        hint = " (single quotes look like a Python repr; the cell must hold JSON, with double quotes)"
    elif not cell.lstrip().startswith(("[", "{")):
        hint = ' (the cell must hold a JSON list, e.g. ["first passage", "second passage"])'
    out.add(column, f"cell is {error}{hint}")
    return _INVALID


def _csv_row_to_record(header: Sequence[str], canon: Sequence[str | None], row: Sequence[str],
                       *, line: int, source: str) -> tuple[dict[str, Any], list[Problem]]:
    """Turn one CSV row into a record ``parse_item`` understands (pure).

    Cells of list/object columns (``contexts`` and its aliases, ``gold_context_ids``) are JSON
    text; ``answerable`` is ``true/false/1/0/yes/no`` (any case) or blank; a blank ``id``,
    ``reference`` (or alias), ``answerable``, ``gold_context_ids`` or contexts cell means the
    field is absent. ``question`` and ``answer`` cells are taken as they are (an empty answer
    cell is an empty answer). Cells that fail are reported and replaced by a sentinel so
    ``parse_item`` does not report them again.
    """
    out = _Collector(source, line)
    record: dict[str, Any] = {}
    for column, name, cell in zip(header, canon, row):
        if name is None:
            record[column] = cell
            continue
        if cell == "" and (name in _CSV_JSON_FIELDS or name in _CSV_BLANK_IS_ABSENT):
            continue
        if name in _CSV_JSON_FIELDS:
            record[column] = _csv_cell_json(cell, column, out)
        elif name == "answerable":
            flag = _parse_bool_word(cell)
            if flag is None:
                out.add(column, f"expected true/false/1/0/yes/no or a blank cell, got {_show(cell)}")
                record[column] = _INVALID
            else:
                record[column] = flag
        else:
            record[column] = cell
    contexts_columns = [c for c, n in zip(header, canon) if n == "contexts"]
    if contexts_columns and not any(c in record for c in contexts_columns):
        out.add(contexts_columns[0], "blank cell: expected a JSON list of strings or objects with 'text' "
                                     "(write [] for no contexts)")
        record[contexts_columns[0]] = _INVALID
    return record, out.problems


def _canonical_name(column: str) -> str | None:
    """The canonical field a CSV column feeds, or ``None`` for unknown columns."""
    if column in ("id", "gold_context_ids", "answerable"):
        return column
    for canonical, aliases in FIELD_ALIASES.items():
        if column == canonical or column in aliases:
            return canonical
    return None


def _csv_records(handle: BinaryIO, source: str, problems: list[Problem]) -> Iterator[tuple[int, Any]]:
    """Yield ``(start line, record)`` for each valid-so-far CSV row; report the others."""
    feed = _LineFeed(handle, source, problems)
    reader = csv.reader(feed, strict=True)
    header: list[str] | None = None
    canon: list[str | None] = []
    header_line = 0
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problems.append(Problem(source, start, None, f"CSV syntax error in the record starting on this line: "
                                                          f"{exc} (an unclosed quote?); stopped reading here"))
            return
        end = reader.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if any(n in feed.bad_lines for n in range(start, end + 1)):
            continue  # already reported as not UTF-8
        if header is None:
            header, header_line = [c.strip() for c in row], start
            if not _check_csv_header(header, source, header_line, problems):
                return
            canon = [_canonical_name(c) for c in header]
            continue
        if len(row) != len(header):
            extra = row[len(header):]
            if len(row) < len(header) or any(cell.strip() for cell in extra):
                problems.append(Problem(source, start, None, f"expected {len(header)} columns (as in the header "
                                                              f"on line {header_line}), got {len(row)}"))
                continue
            row = row[: len(header)]
        record, row_problems = _csv_row_to_record(header, canon, row, line=start, source=source)
        problems.extend(row_problems)
        yield start, record


def _check_csv_header(header: list[str], source: str, line: int, problems: list[Problem]) -> bool:
    """Duplicate column names and missing required columns are reported once, on the header line."""
    ok = True
    seen: set[str] = set()
    for column in header:
        if column in seen:
            problems.append(Problem(source, line, column, "column appears twice in the header"))
            ok = False
        seen.add(column)
    for name in REQUIRED_FIELDS:
        accepted = (name, *FIELD_ALIASES[name])
        if not any(a in seen for a in accepted):
            problems.append(Problem(source, line, name, f"missing required column (accepted names: "
                                                        f"{', '.join(accepted)})"))
            ok = False
    return ok


def _check_pattern(pattern: str | re.Pattern[str], source: str) -> None:
    if isinstance(pattern, re.Pattern):
        return
    try:
        re.compile(pattern)
    except (re.error, TypeError) as exc:
        raise DatasetError([Problem(source, None, "citation_pattern",
                                    f"not a valid regular expression: {exc}")]) from None


def _raise_csv_limit() -> None:
    if csv.field_size_limit() < CSV_FIELD_SIZE_LIMIT:
        csv.field_size_limit(CSV_FIELD_SIZE_LIMIT)


def _first_occurrence(key: str, line: int, first_line: dict[str, int], source: str,
                      problems: list[Problem]) -> bool:
    """Whether ``key`` is seen for the first time (recording its line); a repeat adds a problem
    naming both lines."""
    if key in first_line:
        problems.append(Problem(source, line, "id", f"duplicate id {_show(key)}: also on line {first_line[key]}"))
        return False
    first_line[key] = line
    return True


def load_eval_set(path: str | Path, *,
                  citation_pattern: str | re.Pattern[str] = DEFAULT_CITATION_PATTERN,
                  limits: Any = "default") -> list[EvalItem]:
    """Load and validate an eval set, streaming it line by line.

    The format follows the suffix (case-insensitive): ``.jsonl`` / ``.json`` / ``.ndjson`` are
    JSON Lines (one object per line; blank lines are skipped and still count for line numbers),
    ``.csv`` is a CSV file with a header row of the same field names (list columns hold JSON
    text; see :func:`_csv_row_to_record` for blank cells). For CSV, ``line`` (and the default
    ``id``) is the physical line the row starts on, the header being line 1.

    Args:
        path: The eval set file.
        citation_pattern: The regular expression the scorer will read citations with; it is
            checked here so a bad pattern fails before any work is done.
        limits: per-item size limits (``workbench.scoring.limits.InputLimits``; ``"default"`` = the
            documented defaults, ``None`` = none). An item over a limit is a problem naming its
            line and field.

    Returns:
        The items in file order.

    Raises:
        DatasetError: listing every problem: unreadable or missing file, unknown suffix, bytes
            that are not UTF-8, lines that are not JSON, missing or mistyped fields, conflicting
            aliases, duplicate item ids (naming both lines), or a file with no items at all.
    """
    path = Path(path)
    source = str(path)
    _check_pattern(citation_pattern, source)
    fmt = _format_of(path, source, ("jsonl", "csv"))
    problems: list[Problem] = []
    items: list[EvalItem] = []
    first_line: dict[str, int] = {}
    with _open(path, source) as handle:
        if fmt == "csv":
            _raise_csv_limit()
            records = _csv_records(handle, source, problems)
        else:
            records = _jsonl_records(handle, source, problems)
        for line, record in records:
            item, item_problems = _parse_record(record, line=line, source=source)
            problems.extend(item_problems)
            if item is None:
                continue
            if _first_occurrence(item.id, line, first_line, source, problems):
                items.append(item)
    if limits is not None:  # per-item size limits: bounded memory and calls
        limits = DEFAULT_LIMITS if limits == "default" else limits
        problems.extend(Problem(source, item.line, field, message) for item, field, message in over_limit(items, limits))
    if not items and not problems:
        problems.append(Problem(source, None, None, "no items: the file is empty or has only blank lines"
                                                    + (" and a header" if fmt == "csv" else "")))
    if problems:
        raise DatasetError(problems)
    return items


def load_corpus(path: str | Path) -> dict[str, Passage]:
    """Load a citation corpus: JSON Lines of ``{"id", "text", "source"?}``, streamed.

    Returns:
        Passages keyed by id, in file order.

    Raises:
        DatasetError: listing every problem (as :func:`load_eval_set`), including duplicate ids
            (naming both lines) and a corpus with no passages.
    """
    path = Path(path)
    source = str(path)
    _format_of(path, source, ("jsonl",))
    problems: list[Problem] = []
    passages: dict[str, Passage] = {}
    first_line: dict[str, int] = {}
    with _open(path, source) as handle:
        for line, record in _jsonl_records(handle, source, problems):
            try:
                passage = parse_passage(record, line=line, source=source)
            except DatasetError as exc:
                problems.extend(exc.problems)
                continue
            if _first_occurrence(passage.id, line, first_line, source, problems):
                passages[passage.id] = passage
    if not passages and not problems:
        problems.append(Problem(source, None, None, "no passages: the file is empty or has only blank lines"))
    if problems:
        raise DatasetError(problems)
    return passages
