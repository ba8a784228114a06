"""Text helpers: normalisation, sentence splitting, citation parsing and quote location.

Pure functions, no I/O.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import blingfire
from rapidfuzz import fuzz

from workbench.types import Passage

DEFAULT_CITATION_PATTERN = r"\[([^\[\]]+)\]"

_BULLET = re.compile(r"^\s*(?:[-*\u2022\u25aa\u2023]|\d{1,3}[.)])\s+")
_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u00a0": " ",
                         "\u2013": "-", "\u2014": "-", "`": "'"})
_WS = re.compile(r"\s+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def normalise(text: str) -> str:
    """Lower-case, NFKC, straight quotes and dashes, collapsed whitespace, stripped."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    return _WS.sub(" ", text).strip().lower()


def split_sentences(text: str) -> list[str]:
    """Split text into sentences: newlines and bullet markers first, then blingfire.

    Empty pieces are dropped; the returned sentences keep their original wording (minus bullets).
    """
    sentences: list[str] = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        if not line:
            continue
        for sentence in blingfire.text_to_sentences(line).split("\n"):
            sentence = sentence.strip()
            if sentence:
                sentences.append(sentence)
    return sentences


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of ``text``, each a genuine substring."""
    spans: list[tuple[int, int]] = []
    cursor = 0
    for sentence in split_sentences(text):
        start = text.find(sentence, cursor)
        if start < 0:  # blingfire may normalise whitespace; fall back to a search from the top
            start = text.find(sentence)
        if start < 0:
            continue
        spans.append((start, start + len(sentence)))
        cursor = start + len(sentence)
    return spans


def parse_citations(text: str, pattern: str = DEFAULT_CITATION_PATTERN) -> list[str]:
    """Ids cited in ``text``: each match's first group, split on commas, stripped, in order."""
    ids: list[str] = []
    for match in re.finditer(pattern, text):
        group = match.group(1) if match.groups() else match.group(0)
        ids.extend(part.strip() for part in group.split(",") if part.strip())
    return ids


def strip_citations(text: str, pattern: str = DEFAULT_CITATION_PATTERN) -> str:
    """``text`` with citation markers removed and whitespace tidied."""
    stripped = re.sub(pattern, "", text)
    stripped = re.sub(r"\s+([.,;:!?])", r"\1", stripped)
    return _WS.sub(" ", stripped).strip()


@dataclass(frozen=True)
class QuoteMatch:
    """Where a judge's quote was found: passage id, match score in [0, 100], exact or fuzzy."""

    passage_id: str | None
    found: bool
    score: float
    exact: bool


def locate_quote(quote: str, passages: Sequence[Passage], *, min_fuzzy: float = 90.0) -> QuoteMatch:
    """Locate a judge's ``quote`` in ``passages``: exact after normalisation, else fuzzy.

    A fuzzy match never counts as found when the quote holds a number the passage lacks.
    Exact means the normalised quote is a substring of a normalised passage (whitespace, quote
    marks, dashes and case ignored). Otherwise rapidfuzz's ``partial_ratio`` (best-aligned
    substring) must reach ``min_fuzzy`` (0-100). An empty quote is never found.
    """
    needle = normalise(quote.strip().strip('"').strip("'")) if quote else ""
    if not needle:
        return QuoteMatch(None, False, 0.0, False)
    for passage in passages:
        if needle in normalise(passage.text):
            return QuoteMatch(passage.id, True, 100.0, True)
    numbers = set(_NUMBER.findall(needle))
    best = QuoteMatch(None, False, 0.0, False)
    for passage in passages:
        haystack = normalise(passage.text)
        score = float(fuzz.partial_ratio(needle, haystack))
        numbers_agree = numbers <= set(_NUMBER.findall(haystack))
        if score > best.score:
            best = QuoteMatch(passage.id, score >= min_fuzzy and numbers_agree, score, False)
    return best


REFUSAL_PATTERNS = (
    r"\bi (?:can ?not|can't|cannot|am unable to|'m unable to|am not able to|'m not able to|won't|will not) "
    r"(?:help|assist|provide|answer|find|comply|share|give|do that|fulfil|fulfill|support)",
    r"\bi(?:'m| am) (?:sorry|afraid)\b.{0,60}\b(?:can(?:no|')t|unable|not able|don't have|do not have)",
    r"\b(?:the|these|provided) (?:context|passages?|documents?|sources?) (?:do(?:es)? not|don't|doesn't) "
    r"(?:contain|mention|include|provide|say|cover|specify)",
    r"\bi (?:don't|do not) (?:have|know)\b.{0,40}\b(?:information|enough|answer|details)",
    r"\b(?:no|not enough|insufficient) (?:relevant )?information\b",
    r"\bnot (?:able|possible) to (?:answer|determine)\b",
    r"\bas an ai\b",
    r"\bi must (?:decline|refuse)\b",
    r"\bcannot (?:be )?(?:answered|determined)\b",
)
_REFUSAL = re.compile("|".join(REFUSAL_PATTERNS), re.IGNORECASE | re.DOTALL)


def looks_like_refusal(answer: str) -> bool:
    """Heuristic refusal detector: an empty answer, or a refusal phrase in its first 300 characters."""
    head = normalise(answer)[:300]
    return not head or bool(_REFUSAL.search(head))
