"""``score --dry-run``: the judge calls, tokens and cost a scoring run will make, before any call.

Counted per kind the way ``pipeline.score_item`` makes them (see ``estimate_calls``). Claims are
estimated by the answer's sentence count (the judge's decomposition is not known yet); a
judge that splits sentences further makes more verify calls. Tokens are characters / 4 of the
rendered prompts; completion tokens are a typical reply per task, and their upper bound is the
task's ``max_tokens``. Retries are not counted (a healthy run makes none).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from workbench.judges.prompts import load_prompt
from workbench.metrics.citations import cited_sentences
from workbench.text import DEFAULT_CITATION_PATTERN, split_sentences
from workbench.types import EvalItem, Passage

#: every metric ``score --metrics`` can name (``pipeline.METRICS``), in its order
ALL_METRICS = ("faithfulness", "answer_relevance", "abstention", "citations", "context_precision",
               "context_recall", "correctness", "retrieval")
#: call kind -> the metrics that need it; a kind none of the chosen metrics needs is not made
KIND_USERS = {"verify_estimated": {"faithfulness"}, "reverse_questions": {"answer_relevance"},
              "refusal": {"abstention"}, "citation_checks": {"citations"},
              "context_judgments": {"context_precision"}, "context_recall_verify_estimated": {"context_recall"},
              "correctness_verify_estimated": {"correctness"}}

CHARS_PER_TOKEN = 4
# a typical reply per task, in tokens (the bound is judges.openai_compat.MAX_TOKENS)
TYPICAL_COMPLETION = {"decompose": None, "verify": 60, "reverse_questions": 45, "refusal": 8,
                      "context_relevance": 30}


def _tokens(chars: int) -> int:
    return max(1, chars // CHARS_PER_TOKEN)


def _passages_chars(passages: Sequence[Passage]) -> int:
    return sum(len(p.text) + len(p.id) + 30 for p in passages)


def estimate_calls(items: Sequence[EvalItem], *, citation_pattern: str = DEFAULT_CITATION_PATTERN,
                   corpus: Mapping[str, Passage] | None = None, metrics: Sequence[str] = ALL_METRICS) -> dict:
    """Expected judge calls before spending anything, counted per kind.

    Per item with a non-empty answer: 1 decompose, one verify per claim when there are passages
    (claims estimated by sentence count), 1 reverse-questions, 1 refusal, one verify per citation
    whose passage is known (retrieved, or in ``corpus``), one context judgment per retrieved
    passage, 1 embedding request; with a ``reference``, 1 more decompose, one verify per reference
    statement against the passages (context recall), one per claim and per statement for
    correctness (answer vs reference, both ways) and 1 more embedding request (a ceiling:
    concurrent items share embedding requests, see ``embed_batch``). Kinds that no
    metric in ``metrics`` needs count 0 (``score --metrics``).
    """
    from workbench.scoring.limits import DEFAULT_LIMITS

    wanted = set(metrics)

    cap = DEFAULT_LIMITS.max_claims
    est = {k: 0 for k in ("decompose", "verify_estimated", "reverse_questions", "refusal", "citation_checks",
                          "context_judgments", "context_recall_verify_estimated", "correctness_verify_estimated")}
    embeddings = 0
    for item in items:
        has_answer = bool(item.answer.strip())
        has_reference = bool(item.reference and item.reference.strip())
        claims = min(cap, len(split_sentences(item.answer))) if has_answer else 0
        statements = min(cap, len(split_sentences(item.reference or ""))) if has_reference else 0
        est["decompose"] += ((has_answer if wanted & {"faithfulness", "correctness"} else 0)
                             + (has_reference if wanted & {"context_recall", "correctness"} else 0))
        est["verify_estimated"] += claims if item.contexts else 0
        est["reverse_questions"] += has_answer
        est["refusal"] += has_answer
        retrieved = {p.id for p in item.contexts}
        est["citation_checks"] += sum(1 for _, ids in cited_sentences(item.answer, pattern=citation_pattern)
                                      for cid in ids if cid in retrieved or (corpus is not None and cid in corpus))
        est["context_judgments"] += len(item.contexts)
        est["context_recall_verify_estimated"] += statements if item.contexts else 0
        if has_reference and has_answer:
            est["correctness_verify_estimated"] += claims + statements
        embeddings += ((has_answer if "answer_relevance" in wanted else 0)
                       + (has_reference and has_answer if "correctness" in wanted else 0))
    for kind, users in KIND_USERS.items():
        if not wanted & users:
            est[kind] = 0
    return {"items": len(items), **est, "chat_calls_estimated": sum(est.values()), "embedding_calls": embeddings}


def estimate_tokens(items: Sequence[EvalItem], *, citation_pattern: str = DEFAULT_CITATION_PATTERN,
                    corpus: Mapping[str, Passage] | None = None, metrics: Sequence[str] = ALL_METRICS) -> dict:
    """``{"prompt_tokens", "completion_tokens", "completion_tokens_max"}`` over the run's chat calls
    for the chosen ``metrics``."""
    wanted = set(metrics)
    faith, rel, abst, cites = ("faithfulness" in wanted, "answer_relevance" in wanted, "abstention" in wanted,
                               "citations" in wanted)
    cprec, crec, corr = ("context_precision" in wanted, "context_recall" in wanted, "correctness" in wanted)
    from workbench.judges.openai_compat import MAX_TOKENS

    template = {name: len(load_prompt(name).text) for name in MAX_TOKENS}
    prompt = completion = bound = 0

    def call(task: str, input_chars: int, reply: int) -> None:
        nonlocal prompt, completion, bound
        prompt += _tokens(template[task] + input_chars)
        completion += reply
        bound += MAX_TOKENS[task]

    for item in items:
        if not item.answer.strip():
            continue
        sentences = split_sentences(item.answer)[: 64]
        answer_tokens = _tokens(len(item.answer))
        if faith or corr:
            call("decompose", len(item.answer), answer_tokens + 10)
        passages = _passages_chars(item.contexts)
        for sentence in sentences if item.contexts and faith else ():
            call("verify", passages + len(sentence), TYPICAL_COMPLETION["verify"])
        if rel:
            call("reverse_questions", len(item.answer), TYPICAL_COMPLETION["reverse_questions"])
        if abst:
            call("refusal", len(item.answer), TYPICAL_COMPLETION["refusal"])
        by_id = {p.id: p for p in item.contexts}
        for sentence, ids in cited_sentences(item.answer, pattern=citation_pattern) if cites else ():
            for cid in ids:
                passage = by_id.get(cid) or (corpus.get(cid) if corpus is not None else None)
                if passage is not None:
                    call("verify", _passages_chars([passage]) + len(sentence), TYPICAL_COMPLETION["verify"])
        for p in item.contexts if cprec else ():
            call("context_relevance", len(p.text) + len(item.question), TYPICAL_COMPLETION["context_relevance"])
        if item.reference and item.reference.strip():
            statements = split_sentences(item.reference)[:64]
            if crec or corr:
                call("decompose", len(item.reference), _tokens(len(item.reference)) + 10)
            for s in statements if item.contexts and crec else ():
                call("verify", passages + len(s), TYPICAL_COMPLETION["verify"])
            for s in sentences if corr else ():
                call("verify", len(item.reference) + 40 + len(s), TYPICAL_COMPLETION["verify"])
            for s in statements if corr else ():
                call("verify", len(item.answer) + 40 + len(s), TYPICAL_COMPLETION["verify"])
    return {"prompt_tokens": prompt, "completion_tokens": completion, "completion_tokens_max": bound}


def estimate_run(items: Sequence[EvalItem], *, corpus: Mapping[str, Passage] | None = None,
                 price_in: float | None = None, price_out: float | None = None,
                 citation_pattern: str = DEFAULT_CITATION_PATTERN, remote_embeddings: bool = True,
                 metrics: Sequence[str] = ALL_METRICS) -> dict:
    """Calls (``estimate_calls``), tokens (``estimate_tokens``) and, with a price per million
    tokens, ``cost_estimated`` (typical replies) and ``cost_max`` (every reply at ``max_tokens``).
    ``remote_embeddings=False`` (``--embedder offline``): no embedding requests."""
    from workbench.failures import estimate_cost

    out = estimate_calls(items, citation_pattern=citation_pattern, corpus=corpus, metrics=metrics)
    if not remote_embeddings:
        out["embedding_calls"] = 0
    tokens = estimate_tokens(items, citation_pattern=citation_pattern, corpus=corpus, metrics=metrics)
    out.update({f"{k}_estimated" if k != "completion_tokens_max" else k: v for k, v in tokens.items()})
    cost = estimate_cost(tokens["prompt_tokens"], tokens["completion_tokens"], price_in=price_in, price_out=price_out)
    cost_max = estimate_cost(tokens["prompt_tokens"], tokens["completion_tokens_max"], price_in=price_in,
                             price_out=price_out)
    if cost is not None and cost_max is not None:
        out["cost_estimated"] = round(cost, 6)
        out["cost_max"] = round(cost_max, 6)
    return out
