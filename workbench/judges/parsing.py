"""Tolerant parsers for LLM judge output: JSON objects, booleans, one-item-per-line lists.

Models wrap JSON in code fences, add a sentence before or after it, use single quotes or Python
literals (``True``/``None``), or leave a trailing comma. These parsers accept all of that, and
raise :class:`ParseError` (with a short excerpt of the text) when nothing usable is left. Values
that were present but unusable (a claim that is not a string, a non-boolean verdict) are listed in
``ParseResult.problems`` rather than silently dropped.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_LIST_MARKER = re.compile(r"^\s*(?:[-*\u2022]+|\(?\d{1,2}[.)\]:]|Q\d{1,2}[.):]|Question\s*\d*\s*[:.)])\s*", re.I)
_TRUE = {"true", "yes", "supported", "1", "y", "t"}
_FALSE = {"false", "no", "unsupported", "not supported", "0", "n", "f", "none", "null"}


class ParseError(ValueError):
    """Judge output that could not be parsed; ``excerpt`` is the first 200 characters."""

    def __init__(self, message: str, text: str) -> None:
        self.excerpt = excerpt(text)
        super().__init__(f"{message}; output began: {self.excerpt!r}")


class TruncatedReply(ParseError):
    """A reply the server cut off at the request's ``max_tokens`` (``finish_reason: length``).

    Never parsed (a cut-off JSON object may still "repair" into a wrong verdict) and never
    retried (the same request would be cut off again).
    """

    def __init__(self, max_tokens: int | None, text: str) -> None:
        limit = f"the {max_tokens}-token limit" if max_tokens else "the token limit"
        super().__init__(f"reply cut off at {limit} (finish_reason: length): the model did not finish "
                         "its answer; a model that does not stop, or a limit too low for this task", text)


@dataclass(frozen=True)
class ParseResult:
    """A parsed value plus what could not be used (``problems``, human-readable)."""

    value: Any
    problems: tuple[str, ...] = field(default_factory=tuple)


def excerpt(text: str | None, limit: int = 200) -> str:
    """First ``limit`` characters of ``text`` on one line (for error messages)."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _balanced_objects(text: str) -> list[str]:
    """Every top-level ``{...}`` substring, matching braces outside string literals."""
    found, depth, start, quote, escaped = [], 0, None, None, False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'" and depth > 0:
            quote = ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0 and start is not None:
                found.append(text[start : i + 1])
                start = None
    if depth > 0 and start is not None:  # unterminated: let the repairs try the tail
        found.append(text[start:] + "}" * depth)
    return found


def _loads_lenient(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        pass
    repaired = _TRAILING_COMMA.sub(r"\1", candidate)
    try:
        return json.loads(repaired)
    except json.JSONDecodeError:
        pass
    # Python-literal style: single quotes, True/False/None, JSON true/false/null.
    pyish = re.sub(r"\btrue\b", "True", repaired)
    pyish = re.sub(r"\bfalse\b", "False", pyish)
    pyish = re.sub(r"\bnull\b", "None", pyish)
    try:
        return ast.literal_eval(pyish)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def parse_json_object(text: str | None) -> dict:
    """The first JSON object in ``text``, tolerating fences, surrounding prose and common slips.

    Tries, in order: the whole text, each fenced block, each balanced ``{...}`` span; each with
    plain JSON, then trailing-comma removal, then Python-literal syntax (single quotes, ``True``).
    Raises ``ParseError`` when no candidate yields a ``dict``.
    """
    if text is None or not text.strip():
        raise ParseError("empty output, expected a JSON object", text or "")
    candidates = [text.strip()]
    candidates += [block.strip() for block in _FENCE.findall(text)]
    for source in list(candidates):
        candidates += _balanced_objects(source)
    for candidate in candidates:
        value = _loads_lenient(candidate)
        if isinstance(value, dict):
            return value
    raise ParseError("no JSON object found", text)


def parse_bool(value: Any) -> bool | None:
    """``True``/``False`` from a bool, 0/1 or words like ``"yes"``/``"supported"``; ``None`` if unclear."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().strip(".").lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    return None


def parse_claims(text: str) -> ParseResult:
    """``{"claims": [...]}`` -> list of non-empty claim strings.

    Accepts a bare JSON list too. Non-string or empty entries are skipped and named in
    ``problems``. Raises ``ParseError`` when there is no list of claims at all.
    """
    obj: Any
    try:
        obj = parse_json_object(text)
        claims = obj.get("claims")
        if claims is None and len(obj) == 1:
            claims = next(iter(obj.values()))
    except ParseError:
        stripped = (text or "").strip()
        match = re.search(r"\[.*\]", stripped, re.DOTALL)
        claims = _loads_lenient(match.group(0)) if match else None
        if not isinstance(claims, list):
            raise
    if not isinstance(claims, list):
        raise ParseError('expected {"claims": [...]} with a list', text)
    kept, problems = [], []
    for i, claim in enumerate(claims):
        if isinstance(claim, dict):  # {"claim": "..."} / {"text": "..."} items
            claim = claim.get("claim", claim.get("text"))
        if isinstance(claim, str) and claim.strip():
            kept.append(" ".join(claim.split()))
        else:
            problems.append(f"claims[{i}]: expected a non-empty string, got {excerpt(repr(claim), 60)}")
    return ParseResult(kept, tuple(problems))


def parse_verdict(text: str) -> ParseResult:
    """Verify output -> ``{"quote": str|None, "passage_id": str|None, "supported": bool, "reason": str}``.

    ``"NONE"`` (any case), empty strings and null become ``None`` for quote and passage id.
    Raises ``ParseError`` when ``supported`` is missing or not readable as a boolean.
    """
    obj = parse_json_object(text)
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    supported = parse_bool(lowered.get("supported", lowered.get("verdict")))
    if supported is None:
        raise ParseError('field "supported": expected true or false', text)
    problems = []

    def optional_text(key: str) -> str | None:
        value = lowered.get(key)
        if value is None:
            return None
        if not isinstance(value, (str, int, float)):
            problems.append(f"{key}: expected a string, got {type(value).__name__}")
            return None
        value = str(value).strip()
        return None if not value or value.upper() in {"NONE", "N/A", "NULL"} else value

    reason = lowered.get("reason", "")
    return ParseResult(
        {
            "quote": optional_text("quote"),
            "passage_id": optional_text("passage_id"),
            "supported": supported,
            "reason": reason if isinstance(reason, str) else json.dumps(reason),
        },
        tuple(problems),
    )


def parse_verdict_batch(text: str, n: int) -> ParseResult:
    """Batched verify output ``{"verdicts": [...]}`` -> a list of ``n`` verdict dicts in claim order.

    Each entry is read like :func:`parse_verdict`; entries are placed by ``claim_index`` when given,
    else by position. Raises ``ParseError`` unless exactly one readable verdict exists per claim.
    """
    obj = parse_json_object(text)
    entries = {str(k).strip().lower(): v for k, v in obj.items()}.get("verdicts")
    if not isinstance(entries, list):
        raise ParseError('field "verdicts": expected a list', text)
    out: list[dict | None] = [None] * n
    problems: list[str] = []
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ParseError(f"verdicts[{position}]: expected an object", text)
        index = entry.get("claim_index", position)
        if not isinstance(index, int) or not 0 <= index < n or out[index] is not None:
            raise ParseError(f"verdicts[{position}]: bad or repeated claim_index {index!r}", text)
        parsed = parse_verdict(json.dumps(entry))
        out[index] = parsed.value
        problems.extend(f"claim {index}: {p}" for p in parsed.problems)
    missing = [i for i, v in enumerate(out) if v is None]
    if missing:
        raise ParseError(f"no verdict for claims {missing}", text)
    return ParseResult(out, tuple(problems))


def parse_flag(text: str, field: str) -> bool:
    """A one-flag JSON output ``{"<field>": true|false}`` -> bool (a bare true/false is accepted);
    raises ``ParseError`` if unreadable."""
    try:
        obj = parse_json_object(text)
        value = parse_bool({str(k).lower(): v for k, v in obj.items()}.get(field))
    except ParseError:
        value = parse_bool((text or "").strip())
    if value is None:
        raise ParseError(f'field "{field}": expected true or false', text)
    return value


def parse_refusal(text: str) -> bool:
    """Refusal output ``{"refusal": true|false}`` -> bool; raises ``ParseError`` if unreadable."""
    return parse_flag(text, "refusal")


def parse_context_relevance(text: str) -> bool:
    """Context-relevance output ``{"relevant": true|false, "reason": ...}`` -> bool."""
    return parse_flag(text, "relevant")


def parse_lines(text: str, n: int) -> ParseResult:
    """Up to ``n`` distinct non-empty lines, list markers and numbering stripped.

    Also accepts a JSON list or ``{"questions": [...]}``. Lines beyond ``n`` are dropped and
    counted in ``problems``. Raises ``ParseError`` when no line is left.
    """
    items: list[str] = []
    stripped = _FENCE.sub(lambda m: m.group(1), text or "").strip()
    as_json = _loads_lenient(stripped) if stripped[:1] in "[{" else None
    if isinstance(as_json, dict):
        as_json = as_json.get("questions", next(iter(as_json.values()), None))
    if isinstance(as_json, list) and all(isinstance(x, str) for x in as_json):
        items = list(as_json)
    else:
        items = stripped.splitlines()
    out: list[str] = []
    seen: set[str] = set()
    for line in items:
        line = _LIST_MARKER.sub("", line).strip().strip('"').strip()
        if not line or line.lower() in seen:
            continue
        seen.add(line.lower())
        out.append(line)
    if not out:
        raise ParseError("no lines found", text)
    problems = (f"{len(out) - n} line(s) beyond the {n} requested were dropped",) if len(out) > n else ()
    return ParseResult(out[:n], problems)
