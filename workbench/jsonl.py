"""Reading JSON Lines files of objects, with problems that name the file and line."""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def jsonl_objects(lines: Iterable[str], source: str) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """``(line number, object)`` for every line that is a JSON object, and a problem per line that
    is not (``"<source>:<line>: ..."``); blank lines are skipped. Every line is read: a bad line
    never hides the ones after it."""
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[str] = []
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{source}:{line_number}: not valid JSON ({exc.msg})")
            continue
        if not isinstance(row, dict):
            problems.append(f"{source}:{line_number}: expected a JSON object, got {type(row).__name__}")
            continue
        rows.append((line_number, row))
    return rows, problems


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSON Lines file of objects; blank lines are skipped.

    Raises:
        FileNotFoundError: when the file does not exist.
        ValueError: ``"<file>:<line>: ..."`` for the first line that is not a JSON object.
    """
    with open(path, encoding="utf-8") as handle:
        rows, problems = jsonl_objects(handle, str(path))
    if problems:
        raise ValueError(problems[0])
    return [row for _, row in rows]


def read_json_object(path: str | Path) -> tuple[bytes, dict[str, Any]]:
    """The bytes of a JSON file (for hashing) and its top-level object.

    Raises:
        FileNotFoundError: when the file does not exist.
        ValueError: naming the file (and the line) when it is not valid JSON or not an object.
    """
    raw = Path(path).read_bytes()
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(value).__name__}")
    return raw, value
