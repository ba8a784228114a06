"""Lexical features of a claim against passages, for the offline baseline judge.

Pure functions (plus one LRU cache of per-passage-list indexes); numpy-free so the fit script and
the judge compute exactly the same numbers. What is compared: the claim's content words (stop
words and negation words out, light suffix stemming) against the passages' content words, taken
three ways (best single sentence, best single passage, all passages pooled), plus a flag for a
number in the claim that no passage contains, the claim's length, and whether the claim and its
best-matching sentence disagree on negation.

Degenerate cases: a claim with no content words has coverage 0 everywhere; an empty passage list
(or passages with no text) gives an index with no sentences, coverage 0 and no best sentence.
"""
from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from workbench.text import normalise, sentence_spans
from workbench.types import Passage

#: Bump when any feature's definition changes (it is part of the judge fingerprint).
FEATURE_VERSION = "lex-3"

FEATURE_NAMES: tuple[str, ...] = (
    "cov_sentence",       # share of claim content stems in the best-matching passage sentence
    "cov_passage",        # ... in the best single passage
    "cov_pooled",         # ... in all passages pooled
    "number_missing",     # 1 when a number in the claim appears in no passage
    "log_length",         # log(1 + number of distinct claim content stems)
    "negation_mismatch",  # 1 when exactly one of claim / best sentence is negated
)

STOP_WORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves s t d ll m re ve y also may might must shall us one
""".split())

NEGATIONS = frozenset("""
not no never none nobody nothing neither nor cannot without nowhere n't
don't doesn't didn't isn't aren't wasn't weren't won't wouldn't can't couldn't shouldn't
hasn't haven't hadn't mustn't needn't
""".split())

_NUMBER_WORDS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
                 "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11",
                 "twelve": "12", "twenty": "20", "hundred": "100", "thousand": "1000"}
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix stemmer: plural -s/-es/-ies, -ing, -ed, -ly, then a final -e.

    Only meant to line up inflections ("renews", "renewed", "renewal" stay close); never returns
    fewer than 3 characters from a longer word.
    """
    w = word
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 4 and w.endswith("sses"):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    elif len(w) > 4 and w.endswith("ly"):
        w = w[:-2]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` (after :func:`workbench.text.normalise`)."""
    return _TOKEN.findall(normalise(text))


def content_stems(words: Sequence[str]) -> frozenset[str]:
    """Stems of the words that are neither stop words nor negations (numbers kept)."""
    return frozenset(stem(w) for w in words if w not in STOP_WORDS and w not in NEGATIONS)


def has_negation(words: Sequence[str]) -> bool:
    """True when any token is a negation word (``not``, ``never``, ``n't`` forms, ...)."""
    return any(w in NEGATIONS or w.endswith("n't") for w in words)


def numbers(text: str) -> frozenset[str]:
    """Numbers in ``text``, thousands separators removed; small number words mapped to digits."""
    found = {m.replace(",", "") for m in _NUMBER.findall(text)}
    found.update(_NUMBER_WORDS[w] for w in _TOKEN.findall(text.lower()) if w in _NUMBER_WORDS)
    return frozenset(n.rstrip(".") for n in found if n)


@dataclass(frozen=True)
class SentenceRef:
    """One passage sentence: passage position, character span in ``passage.text``, its stems."""

    passage_index: int
    start: int
    end: int
    stems: frozenset[str]
    negated: bool


@dataclass(frozen=True)
class PassageIndex:
    """Precomputed tokens of a passage list (built once per list, see :func:`build_index`)."""

    passages: tuple[Passage, ...]
    sentences: tuple[SentenceRef, ...]
    passage_stems: tuple[frozenset[str], ...]
    pooled_stems: frozenset[str]
    pooled_numbers: frozenset[str]


@lru_cache(maxsize=512)
def build_index(passages: tuple[Passage, ...]) -> PassageIndex:
    """Split every passage into sentences (``text.sentence_spans``) and tokenise them once."""
    refs: list[SentenceRef] = []
    per_passage: list[frozenset[str]] = []
    all_numbers: set[str] = set()
    for index, passage in enumerate(passages):
        text = passage.text or ""
        stems_here: set[str] = set()
        for start, end in sentence_spans(text):
            words = tokens(text[start:end])
            stems = content_stems(words)
            stems_here |= stems
            refs.append(SentenceRef(index, start, end, stems, has_negation(words)))
        per_passage.append(frozenset(stems_here))
        all_numbers |= numbers(normalise(text))
    pooled = frozenset().union(*per_passage) if per_passage else frozenset()
    return PassageIndex(tuple(passages), tuple(refs), tuple(per_passage), pooled, frozenset(all_numbers))


@dataclass(frozen=True)
class ClaimFeatures:
    """Feature values (in :data:`FEATURE_NAMES` order) and the best-matching sentence (or ``None``)."""

    values: tuple[float, ...]
    best: SentenceRef | None

    def as_dict(self) -> dict[str, float]:
        return dict(zip(FEATURE_NAMES, self.values))


def claim_features(claim: str, index: PassageIndex) -> ClaimFeatures:
    """Features of ``claim`` against the indexed passages (see :data:`FEATURE_NAMES`).

    Coverage values are in [0, 1] (0 when the claim has no content words). The best sentence is
    the one covering most claim stems (ties: the earlier one; ``None`` when it covers nothing).
    """
    words = tokens(claim)
    stems = content_stems(words)
    n = len(stems)
    best: SentenceRef | None = None
    best_hits = 0
    if n:
        for ref in index.sentences:
            hits = len(stems & ref.stems)
            if hits > best_hits:
                best, best_hits = ref, hits
        passage_hits = max((len(stems & s) for s in index.passage_stems), default=0)
        pooled_hits = len(stems & index.pooled_stems)
    else:
        passage_hits = pooled_hits = 0
    cov_sentence = best_hits / n if n else 0.0
    cov_passage = passage_hits / n if n else 0.0
    cov_pooled = pooled_hits / n if n else 0.0
    claim_numbers = numbers(normalise(claim))
    number_missing = 1.0 if claim_numbers - index.pooled_numbers else 0.0
    claim_negated = has_negation(words)
    best_negated = best.negated if best is not None else False
    negation_mismatch = 1.0 if (best is not None and claim_negated != best_negated) else 0.0
    values = (cov_sentence, cov_passage, cov_pooled, number_missing, math.log1p(n), negation_mismatch)
    return ClaimFeatures(values, best)


def split_of(unit_id: str) -> str:
    """The fixed fit/held-out split of the offline model: ``"fit"`` when the first byte of
    sha256(unit id) is even, else ``"test"``. Agreement is only ever reported on ``"test"``."""
    return "fit" if hashlib.sha256(unit_id.encode()).digest()[0] % 2 == 0 else "test"
