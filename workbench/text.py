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


def normalise_with_map(text: str) -> tuple[str, list[int]]:
    """``normalise(text)`` built character by character, with, for each normalised character, the
    index of the original character it came from (so a match in normalised text maps back to a
    genuine span of ``text``). Per-character NFKC can differ from whole-string NFKC only for rare
    combining sequences; a quote in such text falls back to fuzzy matching."""
    out: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        for piece in unicodedata.normalize("NFKC", char).translate(_QUOTES).lower():
            if piece.isspace():
                if not out or out[-1] == " ":
                    continue
                piece = " "
            out.append(piece)
            origin.append(index)
    while out and out[-1] == " ":
        out.pop()
        origin.pop()
    return "".join(out), origin


@dataclass(frozen=True)
class QuoteMatch:
    """Where a judge's quote was found: passage id, match score in [0, 100], exact or fuzzy, and
    ``span``, the genuine substring of that passage's text that matched (``None`` if not found)."""

    passage_id: str | None
    found: bool
    score: float
    exact: bool
    span: str | None = None


def _span(text: str, origin: list[int], start: int, end: int) -> str:
    """The original substring of ``text`` behind normalised positions ``[start, end)``, widened
    to whole words (a fuzzy alignment may start or stop inside one)."""
    first, last = origin[start], origin[end - 1] + 1
    while first > 0 and text[first - 1].isalnum() and text[first].isalnum():
        first -= 1
    while last < len(text) and text[last].isalnum() and text[last - 1].isalnum():
        last += 1
    return text[first:last].strip()


def locate_quote(quote: str, passages: Sequence[Passage], *, min_fuzzy: float = 90.0) -> QuoteMatch:
    """Locate a judge's ``quote`` in ``passages``: exact after normalisation, else fuzzy.

    Exact means the normalised quote is a substring of a normalised passage (whitespace, quote
    marks, dashes and case ignored). Otherwise rapidfuzz's best-aligned substring
    (``partial_ratio``) must reach ``min_fuzzy`` (0-100), and a fuzzy match never counts as found
    when the quote holds a number the passage lacks. An empty quote is never found. When found,
    ``span`` is the passage's own text for the match, always a genuine substring of it.
    """
    needle = normalise(quote.strip().strip('"').strip("'")) if quote else ""
    if not needle:
        return QuoteMatch(None, False, 0.0, False)
    mapped = [(passage, *normalise_with_map(passage.text)) for passage in passages]
    for passage, haystack, origin in mapped:
        start = haystack.find(needle)
        if start >= 0:
            return QuoteMatch(passage.id, True, 100.0, True, _span(passage.text, origin, start, start + len(needle)))
    numbers = set(_NUMBER.findall(needle))
    best = QuoteMatch(None, False, 0.0, False)
    for passage, haystack, origin in mapped:
        if not haystack:
            continue
        alignment = fuzz.partial_ratio_alignment(needle, haystack)
        if alignment is None:
            continue
        score = float(alignment.score)
        if score > best.score:
            found = score >= min_fuzzy and numbers <= set(_NUMBER.findall(haystack))
            span = _span(passage.text, origin, alignment.dest_start, alignment.dest_end) if found else None
            best = QuoteMatch(passage.id, found, score, False, span or None)
    if best.found and not best.span:
        best = QuoteMatch(best.passage_id, False, best.score, False)
    return best


REFUSAL_PATTERNS = (
    r"\bi(?: can ?not| can't| cannot| am unable to|'m unable to| am not able to|'m not able to| won't| will not) "
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
