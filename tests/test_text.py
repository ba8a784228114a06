"""Text helpers: quote location returns genuine spans; sentence and citation parsing."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.text import (
    locate_quote,
    looks_like_refusal,
    normalise,
    normalise_with_map,
    parse_citations,
    split_sentences,
    strip_citations,
)
from workbench.types import Passage

PASSAGE = Passage("x", "Annual plans:  Refunds take \u201c30 days\u201d, always.")


def test_exact_and_fuzzy_quotes_map_back_to_the_passages_own_text():
    exact = locate_quote("refunds  TAKE \"30 days", [PASSAGE])
    assert exact.found and exact.exact and exact.span == "Refunds take \u201c30 days"
    fuzzy = locate_quote("refunds take 30 day", [PASSAGE])
    assert fuzzy.found and not fuzzy.exact and fuzzy.span == "Refunds take \u201c30 days"


def test_a_changed_number_or_an_invented_quote_is_not_found():
    assert not locate_quote("refunds take 31 days", [PASSAGE]).found
    assert not locate_quote("gift cards never expire", [PASSAGE]).found
    assert not locate_quote("", [PASSAGE]).found and not locate_quote("x", []).found


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(min_size=1, max_size=80), st.data())
def test_any_found_quote_is_a_genuine_substring(text, data):
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    match = locate_quote(text[start:end], [Passage("p", text)])
    if match.found:
        assert match.span and match.span in text


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=60))
def test_normalise_with_map_agrees_with_normalise_on_plain_text(text):
    mapped, origin = normalise_with_map(text)
    assert len(mapped) == len(origin)
    assert all(0 <= i < len(text) for i in origin)
    if text.isascii():
        assert mapped == normalise(text)


def test_sentences_citations_and_refusals():
    assert split_sentences("- One. Two!\n* Three") == ["One.", "Two!", "Three"]
    assert parse_citations("a [p1] b [p2, p3]") == ["p1", "p2", "p3"]
    assert strip_citations("Refunds take 30 days [p2, p3].") == "Refunds take 30 days."
    assert looks_like_refusal("I'm sorry, but I can't help with that.")
    assert looks_like_refusal("The provided context does not mention refunds.")
    assert looks_like_refusal("   ")
    assert not looks_like_refusal("Refunds take 30 days.")


def test_refusal_patterns_match_contractions():
    # "I'm unable to" / "I'm not able to": the apostrophe follows "i" directly, with no space.
    assert looks_like_refusal("I'm unable to help with that request.")
    assert looks_like_refusal("I'm not able to provide that information.")
    assert looks_like_refusal("I am unable to answer this.")
    assert looks_like_refusal("I can't help with that.")
    assert not looks_like_refusal("I'm able to help: refunds take 30 days.")
