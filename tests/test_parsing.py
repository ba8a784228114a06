"""Tolerant parsers for judge output (workbench.judges.parsing)."""
from __future__ import annotations

import pytest

from workbench.judges.parsing import (
    ParseError,
    parse_bool,
    parse_claims,
    parse_json_object,
    parse_lines,
    parse_refusal,
    parse_verdict,
)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "b": "x"}',
        '```json\n{"a": 1, "b": "x"}\n```',
        'Sure! Here it is:\n```\n{"a": 1, "b": "x"}\n```\nHope this helps.',
        'Here you go: {"a": 1, "b": "x"} -- done',
        "{'a': 1, 'b': 'x'}",
        '{"a": 1, "b": "x",}',
        '{"a": 1, "b": "x"',  # truncated: closing brace repaired
    ],
    ids=["plain", "fenced", "fenced-with-prose", "inline-prose", "single-quotes", "trailing-comma", "unterminated"],
)
def test_parse_json_object_tolerates_common_slips(text):
    assert parse_json_object(text) == {"a": 1, "b": "x"}


def test_parse_json_object_braces_inside_strings_do_not_confuse_it():
    assert parse_json_object('note {"quote": "a } b { c", "ok": true} end') == {"quote": "a } b { c", "ok": True}


@pytest.mark.parametrize("text", ["", "   ", "no json here", "[1, 2, 3]"])
def test_parse_json_object_raises_with_excerpt(text):
    with pytest.raises(ParseError) as info:
        parse_json_object(text)
    assert info.value.excerpt == " ".join(text.split())


def test_parse_error_excerpt_is_short():
    with pytest.raises(ParseError) as info:
        parse_json_object("x" * 5000)
    assert len(info.value.excerpt) == 200 and info.value.excerpt.endswith("...")


def test_parse_claims_keeps_strings_and_records_the_rest():
    result = parse_claims('{"claims": ["A is B.", "", 42, {"claim": "C is D."}, "  E  is\\nF. "]}')
    assert result.value == ["A is B.", "C is D.", "E is F."]
    assert len(result.problems) == 2 and "claims[1]" in result.problems[0] and "claims[2]" in result.problems[1]


def test_parse_claims_accepts_bare_list_and_empty_list():
    assert parse_claims('["x", "y"]').value == ["x", "y"]
    assert parse_claims('{"claims": []}').value == []


def test_parse_claims_without_list_raises():
    with pytest.raises(ParseError):
        parse_claims('{"claims": "just a string"}')


def test_parse_verdict_maps_none_and_booleans():
    result = parse_verdict('{"quote": "NONE", "passage_id": "none", "supported": "false", "reason": "absent"}')
    assert result.value == {"quote": None, "passage_id": None, "supported": False, "reason": "absent"}
    result = parse_verdict("```json\n{'quote': 'renews yearly', 'passage_id': 'p-1', 'supported': True}\n```")
    assert result.value == {"quote": "renews yearly", "passage_id": "p-1", "supported": True, "reason": ""}


def test_parse_verdict_without_readable_supported_raises():
    with pytest.raises(ParseError, match="supported"):
        parse_verdict('{"quote": "x", "supported": "maybe"}')


@pytest.mark.parametrize("value,expected", [(True, True), ("Yes", True), (1, True), ("no", False), (0, False), ("perhaps", None), (None, None), (2, None)])
def test_parse_bool(value, expected):
    assert parse_bool(value) is expected


def test_parse_refusal_json_and_bare_word():
    assert parse_refusal('{"refusal": true}') is True
    assert parse_refusal("false") is False
    with pytest.raises(ParseError):
        parse_refusal("It depends.")


def test_parse_lines_strips_numbering_dedupes_and_caps():
    text = "1. When do plans renew?\n- When do plans renew?\n\n2) How long is the refund window?\nQ3: Who pays?\nExtra?"
    result = parse_lines(text, 3)
    assert result.value == ["When do plans renew?", "How long is the refund window?", "Who pays?"]
    assert result.problems == ("1 line(s) beyond the 3 requested were dropped",)


def test_parse_lines_accepts_json_list_and_rejects_empty():
    assert parse_lines('{"questions": ["a?", "b?"]}', 5).value == ["a?", "b?"]
    with pytest.raises(ParseError):
        parse_lines("\n \n", 3)
