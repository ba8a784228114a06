"""Citations: does each cited id exist, was it retrieved for this query, and does it support the
sentence that cites it?

Each citation is checked against three references: the corpus (exists at all), the item's
retrieved contexts (was in the context the generator saw), and the cited passage alone (a judge
verification of the citing sentence against that one passage).
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping

from workbench.judges.base import Judge
from workbench.metrics.faithfulness import verify_claim
from workbench.text import DEFAULT_CITATION_PATTERN, parse_citations, split_sentences, strip_citations
from workbench.types import CitationCheck, EvalItem, Passage


def cited_sentences(answer: str, *, pattern: str = DEFAULT_CITATION_PATTERN) -> list[tuple[str, list[str]]]:
    """``(sentence without markers, cited ids)`` for each answer sentence that cites something.

    A sentence made only of markers (e.g. a trailing ``[p-1]`` on its own line) attaches its ids to
    the previous sentence.
    """
    out: list[tuple[str, list[str]]] = []
    for sentence in split_sentences(answer):
        ids = parse_citations(sentence, pattern)
        text = strip_citations(sentence, pattern)
        if not ids:
            continue
        if not text.strip(" .") and out:
            out[-1] = (out[-1][0], out[-1][1] + ids)
        elif text.strip(" ."):
            out.append((text, ids))
    return out


async def check_citations(item: EvalItem, judge: Judge, *, corpus: Mapping[str, Passage] | None = None,
                          pattern: str = DEFAULT_CITATION_PATTERN) -> list[CitationCheck]:
    """Check every citation in ``item.answer`` (one judge call per citation with a passage)."""
    retrieved = {p.id: p for p in item.contexts}

    async def check(sentence: str, cid: str) -> CitationCheck:
        in_corpus = (cid in corpus) if corpus is not None else (True if cid in retrieved else None)
        passage = retrieved.get(cid) or (corpus.get(cid) if corpus is not None else None)
        if passage is None:
            return CitationCheck(cid, sentence, in_corpus, cid in retrieved, None)
        verdict = await verify_claim(sentence, [passage], judge)
        if verdict.error:
            return CitationCheck(cid, sentence, in_corpus, cid in retrieved, None, verdict.error)
        return CitationCheck(cid, sentence, in_corpus, cid in retrieved, verdict.supported)

    tasks = [check(sentence, cid) for sentence, ids in cited_sentences(item.answer, pattern=pattern) for cid in ids]
    return list(await asyncio.gather(*tasks))
