"""What a real endpoint is asked and how its refusals are read: per-task ``max_tokens``, the JSON
schemas sent as ``response_format``, and the errors that mean the endpoint cannot serve a run.

Used by :mod:`workbench.judges.openai_compat` (and the batch request writer, so batch bodies equal
interactive ones).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import openai
else:
    from workbench.judges.lazy_openai import openai  # imported on first use (a cached run never needs it)

from workbench.judges.base import JudgeError
from workbench.judges.concurrency import is_timeout

# Completion budget per task: enough for a good answer in the prompt's format, and a bound on a
# model that does not stop. Part of the fingerprint and the cache key (it can change a reply).
MAX_TOKENS: dict[str, int] = {
    "decompose": 512,            # ~25 claims of ~20 tokens
    "verify": 256,               # a quote, an id, a boolean, one sentence
    "reverse_questions": 160,    # a few one-line questions
    "refusal": 48,               # {"refusal": false} (and some fencing)
    "context_relevance": 128,    # a boolean and one sentence
}
VERIFY_BATCH_TOKENS = (128, 192, 4096)  # verify_batch: 128 + 192 per claim, at most 4096


def max_tokens_for(task: str, n_claims: int = 1) -> int:
    """The ``max_tokens`` of one call of ``task`` (``verify_batch`` grows with its claims)."""
    if task == "verify_batch":
        base, per_claim, cap = VERIFY_BATCH_TOKENS
        return min(cap, base + per_claim * max(1, n_claims))
    return MAX_TOKENS[task]


# JSON schemas of the JSON tasks, sent as ``response_format`` when the endpoint takes one.
_VERDICT = {"quote": {"type": "string"}, "passage_id": {"type": "string"}, "supported": {"type": "boolean"},
            "reason": {"type": "string"}}


def _object(properties: dict) -> dict:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


JSON_SCHEMAS: dict[str, dict] = {
    "decompose": _object({"claims": {"type": "array", "items": {"type": "string"}}}),
    "verify": _object(_VERDICT),
    "verify_batch": _object({"verdicts": {"type": "array", "items": _object({"claim_index": {"type": "integer"},
                                                                              **_VERDICT})}}),
    "refusal": _object({"refusal": {"type": "boolean"}}),
    "context_relevance": _object({"relevant": {"type": "boolean"}, "reason": {"type": "string"}}),
}
# How JSON is asked for, best first; the first the endpoint accepts is remembered (in the cache).
RESPONSE_FORMATS = ("json_schema", "json_object", "plain")


def response_format_body(mode: str, task: str) -> dict | None:
    """The ``response_format`` request field for ``mode`` (``None`` for ``plain``)."""
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": task, "schema": JSON_SCHEMAS[task], "strict": True}}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


class EmbeddingsUnavailable(JudgeError):
    """The endpoint has no ``/v1/embeddings`` (or not for this model: llama.cpp started without
    ``--embedding`` answers 500 "must be created with embedding=True"); answer relevance cannot be
    scored with it. Raised once per embedder from the endpoint's reply, then without calls."""


class EndpointError(JudgeError):
    """The endpoint cannot serve this run at all: the key is refused (401/403), the base URL or the
    model is wrong (404), or nothing is listening. Raised by the first failing call and then by
    every later call of the same judge without sending anything, so a run stops within seconds.
    ``status`` is the HTTP status (``None`` for a connection failure).
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


FATAL_CAUSES = {
    401: "the API key was refused: check OPENAI_API_KEY (a local server without keys accepts any)",
    403: "the key has no access to this model or endpoint",
    404: ("wrong base URL or unknown model: OPENAI_BASE_URL usually ends in /v1, and --model must be a "
          "model the server serves (llama.cpp: any name; Ollama: `ollama list`; vLLM: the served model name)"),
}


def endpoint_failure(exc: BaseException, *, base_url: str, model: str, answered: bool) -> EndpointError | None:
    """An ``EndpointError`` when ``exc`` means the endpoint cannot serve this run, else ``None``.

    401, 403 and 404 always do. A connection failure does only before the endpoint ever
    ``answered`` (later it is a transient fault and is retried).
    """
    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.APIStatusError) and status in FATAL_CAUSES:
        detail = " ".join(str(exc).split())[:160]
        return EndpointError(f"{base_url} answered HTTP {status} for model {model!r} ({detail}); likely cause: "
                             f"{FATAL_CAUSES[status]}", status)
    if isinstance(exc, openai.APIConnectionError) and not is_timeout(exc) and not answered:
        cause = exc.__cause__ or exc.__context__
        detail = " ".join(str(cause or exc).split())[:160]
        return EndpointError(f"cannot connect to {base_url} (model {model!r}): {detail}; likely cause: no server "
                             "is listening there (not started yet, another port, or http vs https)")
    return None
