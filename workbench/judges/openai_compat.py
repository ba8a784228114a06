"""LLM judge and embedder over any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp...).

Uses the official ``openai.AsyncOpenAI`` client with its own retries off (``max_retries=0``):
retries, backoff and the adaptive concurrency limit live in :mod:`workbench.judges.concurrency`.
Identical chat calls in flight at once share one request (with the cache on), answered to the
second caller like a cache hit.
Every successful reply is cached (:mod:`workbench.judges.cache`) under a key of named parts, so a
re-run makes no calls and a killed run resumes with only the missing ones. Errors are never cached.

Credentials: ``OPENAI_API_KEY`` (never stored, logged or cached). The endpoint is
``config.base_url`` or ``OPENAI_BASE_URL`` (default OpenAI). Without a key, a self-hosted endpoint
(any base URL other than api.openai.com) gets the placeholder key ``sk-no-key``; with neither a
key nor a base URL the constructor raises :class:`MissingCredentialsError`.
"""
from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
import os
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.config import JudgeConfig, default_cache_path
from workbench.judges.base import JudgeError, fingerprint
from workbench.judges.cache import JudgeCache, cache_key
from workbench.judges.concurrency import AdaptiveLimiter, FirstCallGate, is_timeout, with_retries
from workbench.judges.endpoint import (  # noqa: F401  (re-exported: the request shapes live there)
    FATAL_CAUSES,
    JSON_SCHEMAS,
    MAX_TOKENS,
    RESPONSE_FORMATS,
    VERIFY_BATCH_TOKENS,
    EmbeddingsUnavailable,
    EndpointError,
    endpoint_failure,
    max_tokens_for,
    response_format_body,
)

if TYPE_CHECKING:
    import openai
else:
    from workbench.judges.lazy_openai import openai  # imported on first use (a cached run never needs it)
from workbench.judges.client import (
    ClientSource,
    _endpoint_url,
    _LazyClient,
    client_for_running_loop,
    endpoint_host,
)
from workbench.judges.parsing import (
    ParseError,
    ParseResult,
    TruncatedReply,
    parse_claims,
    parse_context_relevance,
    parse_lines,
    parse_refusal,
    parse_verdict,
    parse_verdict_batch,
)
from workbench.judges.prompts import PROMPT_NAMES, Prompt, load_prompt, prompt_hashes
from workbench.types import ClaimVerdict, ContextVerdict, JudgeUsage, Passage

log = logging.getLogger(__name__)

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
EMBED_BATCH = 256
TOP_LOGPROBS = 5


def render_passages(passages: Sequence[Passage]) -> str:
    """Passages as ``<passage id="...">text</passage>`` blocks, in the given order."""
    return "\n".join(f'<passage id="{p.id}">\n{p.text}\n</passage>' for p in passages)


@functools.lru_cache(maxsize=512)
def _rendered_tuple(passages: tuple[Passage, ...]) -> tuple[str, tuple[tuple[str, str], ...]]:
    return render_passages(passages), tuple((p.id, p.text) for p in passages)


def rendered_passages(passages: Sequence[Passage]) -> tuple[str, list[list[str]]]:
    """``(prompt text, cache-key form)`` of the passages, rendered once per passage tuple (an
    item's claims are all verified against the same passages)."""
    try:
        text, pairs = _rendered_tuple(tuple(passages))
    except TypeError:  # unhashable passages: render each time
        return render_passages(passages), [[p.id, p.text] for p in passages]
    return text, [list(pair) for pair in pairs]


def _field(obj: Any, name: str, default: Any) -> Any:
    """``obj.name`` for SDK objects, ``obj[name]`` for the plain JSON dicts of a raw reply."""
    if isinstance(obj, dict):
        value = obj.get(name, default)
        return default if value is None and default is not None else value
    return getattr(obj, name, default)


async def post_json(client, path: str, body: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    """POST ``body`` to ``path`` of the endpoint with the SDK's client; the reply as a plain dict.

    The SDK's errors (429, 5xx, timeouts, connection errors, 400) are raised as by
    ``chat.completions.create``, but the request is not re-validated and the reply is not built
    into pydantic objects, which took most of the client's CPU per call. A 200 whose body is not
    a JSON object raises ``ParseError`` (retried like unparseable output).
    """
    raw = await client_for_running_loop(client).post(path, body=body, cast_to=bytes, options={"timeout": timeout})
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ParseError(f"{path}: the reply is not a JSON object", raw[:200].decode("utf-8", "replace"))
    return data


def p_true_from_logprobs(logprobs: Any, key: str = "supported") -> float | None:
    """P(true) for the boolean value of ``key`` in a JSON reply, from token logprobs.

    Finds the first token after the text ``"<key>"`` that reads ``true`` or ``false`` and returns
    ``P(true) / (P(true) + P(false))`` over its ``top_logprobs`` (both normalised so mass on other
    tokens is ignored). ``None`` when logprobs are missing or the token cannot be found.
    """
    tokens = _field(logprobs, "content", None) if logprobs is not None else None
    if not tokens:
        return None
    seen = ""
    marker = f'"{key}"'
    found_key = False
    for token in tokens:
        text = _field(token, "token", "") or ""
        if not found_key:
            seen += text
            found_key = marker in seen
            continue
        word = text.strip().strip('":,').lower()
        if not word:
            continue
        if word.startswith("true") or word.startswith("false"):
            alternatives = list(_field(token, "top_logprobs", None) or [])
            if not alternatives:
                alternatives = [token]
            mass = {"true": 0.0, "false": 0.0}
            for alt in alternatives:
                alt_word = (_field(alt, "token", "") or "").strip().strip('":,').lower()
                for name in mass:  # "true", "True", "tr" (a split token) all count for true
                    if alt_word and (name.startswith(alt_word) or alt_word.startswith(name)):
                        mass[name] += math.exp(_field(alt, "logprob", -math.inf))
                        break
            total = mass["true"] + mass["false"]
            return None if total <= 0 else mass["true"] / total
        return None  # something else came after the key (e.g. a string): no boolean token
    return None


@dataclass
class _Ledger:
    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    timeouts: int = 0  # attempts that timed out (each also halves the in-flight limit)
    truncated: int = 0  # replies cut off at max_tokens
    parse_problems: deque = field(default_factory=lambda: deque(maxlen=200))

    def usage(self) -> JudgeUsage:
        return JudgeUsage(self.calls, self.cache_hits, self.failures, self.prompt_tokens, self.completion_tokens)


def _open_cache(config: JudgeConfig, cache: JudgeCache | None) -> JudgeCache | None:
    if not config.use_cache:
        return None
    return cache if cache is not None else JudgeCache(config.cache_path or default_cache_path())


class OpenAICompatJudge:
    """The LLM judge (satisfies ``workbench.judges.base.Judge``).

    Args:
        config: model, base URL, temperature, seed, concurrency (``None`` = adaptive, starting
            at 1 call in flight), timeout per call, max retries, cache use and path.
        client: an ``openai.AsyncOpenAI`` to use instead of building one (tests, sharing).
        cache: a ``JudgeCache`` to use instead of the default path (ignored if ``use_cache`` is False).
        logprobs: request token logprobs on verify calls for a continuous score.
        retry_base_delay / retry_max_delay: backoff bounds in seconds.
        rng: random source for backoff jitter.

    ``usage().calls`` counts HTTP requests actually sent (retries included); ``cache_hits``
    counts calls answered from the cache; ``failures`` counts calls that raised ``JudgeError``;
    ``timeouts`` counts attempts that timed out.

    Every call sets ``max_tokens`` (``max_tokens_for``); a reply cut off there is a named
    failure. JSON tasks ask for JSON through ``response_format``: a JSON schema, else a JSON
    object, else the plain prompt, whichever the endpoint accepts first (``response_format``
    holds it once known; it is remembered in the cache per endpoint and model).

    The first call goes alone. If it fails with 401, 403, 404 or a refused connection, ``fatal``
    holds an ``EndpointError`` naming the base URL, the model and the likely cause, and every
    later call raises it without sending anything.
    """

    backend = "openai"
    client: _LazyClient = _LazyClient()

    def __init__(
        self,
        config: JudgeConfig | None = None,
        *,
        client: ClientSource = None,
        cache: JudgeCache | None = None,
        logprobs: bool = True,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 20.0,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config or JudgeConfig(backend="openai")
        self.model = self.config.model or os.environ.get("WORKBENCH_MODEL") or DEFAULT_MODEL
        # the endpoint's URL without building the client (a run answered from the cache never builds it)
        self.base_url = _endpoint_url(client, self.config)
        self.host = endpoint_host(self.base_url)
        self.client = client
        self.cache = _open_cache(self.config, cache)
        self.limiter = AdaptiveLimiter(fixed=self.config.concurrency, timeout=self.config.timeout)
        self.logprobs = logprobs
        self.prompts: dict[str, Prompt] = {name: load_prompt(name) for name in PROMPT_NAMES}
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self._rng = rng or random.Random()
        self._ledger = _Ledger()
        self._unsupported: set[str] = set()  # optional request params the endpoint rejected
        self._in_flight: dict[str, asyncio.Future] = {}  # cache key -> the call answering it now
        self.fatal: EndpointError | None = None
        self._gate = FirstCallGate()  # open once the endpoint answered with anything but 401/403/404
        self.response_format: str | None = self._remembered_format()
        self.fingerprint = fingerprint(self.fingerprint_parts())

    # -- identity ----------------------------------------------------------------------------
    def _decoding(self) -> dict[str, Any]:
        return {"temperature": self.config.temperature, "seed": self.config.seed, "logprobs": self.logprobs}

    def fingerprint_parts(self) -> dict[str, Any]:
        """What changes verdicts: backend, model, endpoint host, prompt hashes, decoding params
        (``max_tokens`` per task included)."""
        return {"backend": self.backend, "model": self.model, "host": self.host, "prompts": prompt_hashes(),
                **self._decoding(), "max_tokens": {**MAX_TOKENS, "verify_batch": list(VERIFY_BATCH_TOKENS)}}

    def usage(self) -> JudgeUsage:
        return self._ledger.usage()

    @property
    def timeouts(self) -> int:
        """Attempts that timed out so far."""
        return self._ledger.timeouts

    @property
    def truncated(self) -> int:
        """Replies cut off at ``max_tokens`` so far."""
        return self._ledger.truncated

    # -- the endpoint: first-call gate and response format ----------------------------------------
    def _format_key(self) -> str:
        return cache_key({"kind": "response_format", "backend": self.backend, "base_url": self.base_url,
                          "model": self.model})

    def _remembered_format(self) -> str | None:
        if self.cache is None:
            return None
        value = self.cache.get(self._format_key())
        return value if value in RESPONSE_FORMATS else None

    def _learn_format(self, mode: str) -> None:
        if self.response_format == mode:
            return
        self.response_format = mode
        log.info("endpoint %s (%s): JSON is requested as %s", self.base_url, self.model, mode)
        if self.cache is not None:
            self.cache.put(self._format_key(), mode)

    async def _request(self, text: str, *, task: str, json_mode: bool, logprobs: bool,
                       logprob_key: str = "supported", max_tokens: int) -> tuple[str, dict]:
        """One chat request; returns ``(content, meta)`` with ``meta["response_format"]`` the mode used."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": text}],
            "temperature": self.config.temperature,
            "max_tokens": max_tokens,
        }
        if self.config.seed is not None:
            kwargs["seed"] = self.config.seed
        mode = (self.response_format or RESPONSE_FORMATS[0]) if json_mode else "plain"
        if logprobs and "logprobs" not in self._unsupported:
            kwargs.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        while True:
            body = response_format_body(mode, task)
            if body is None:
                kwargs.pop("response_format", None)
            else:
                kwargs["response_format"] = body
            self._ledger.calls += 1
            try:
                response = await post_json(self.client, "/chat/completions", kwargs, self.config.timeout)
                break
            except openai.APIStatusError as exc:
                # a 400/422 (or a 500 from servers that report validation errors so, like
                # llama-cpp-python) naming response_format or logprobs: fall back, remember
                if exc.status_code not in (400, 422, 500) or exc.status_code in FATAL_CAUSES:
                    raise
                self._gate.open = True
                if "response_format" in kwargs and self._rejects_format(exc, kwargs):
                    mode = RESPONSE_FORMATS[RESPONSE_FORMATS.index(mode) + 1]
                    log.warning("endpoint %s rejected response_format %s (%s); trying %s", self.host,
                                kwargs["response_format"]["type"], " ".join(str(exc).split())[:120], mode)
                    if mode == "plain" or self.response_format is not None:
                        self._learn_format(mode)
                    continue
                if not self._drop_optional(exc, kwargs):
                    raise
        self._gate.open = True
        if json_mode:
            self._learn_format(mode)
        usage = response.get("usage") or {}
        meta = {
            "prompt_tokens": int(_field(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(_field(usage, "completion_tokens", 0) or 0),
            "response_format": mode,
        }
        self._ledger.prompt_tokens += meta["prompt_tokens"]
        self._ledger.completion_tokens += meta["completion_tokens"]
        choices = response.get("choices")
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise ParseError("reply has no choices", "")
        choice = choices[0]
        content = _field(choice.get("message") or {}, "content", "") or ""
        if not isinstance(content, str):
            raise ParseError("reply content is not text", str(content)[:200])
        if choice.get("finish_reason") == "length":
            self._ledger.truncated += 1
            raise TruncatedReply(max_tokens, content)
        if logprobs:
            meta["p_true"] = p_true_from_logprobs(choice.get("logprobs"), key=logprob_key)
        return content, meta

    @staticmethod
    def _rejects_format(exc: openai.APIStatusError, kwargs: dict) -> bool:
        """A 400/422 whose message names ``response_format`` (or a JSON schema / JSON object)."""
        message = str(exc).lower()
        return any(word in message for word in ("response_format", "response format", "json_schema", "schema",
                                                "json_object"))

    def _drop_optional(self, exc: openai.APIStatusError, kwargs: dict) -> bool:
        """After a 400 naming logprobs, drop them for the rest of the run; False if that is not it."""
        if "logprobs" not in kwargs or "logprob" not in str(exc).lower():
            return False
        kwargs.pop("logprobs", None)
        kwargs.pop("top_logprobs", None)
        if "logprobs" not in self._unsupported:
            log.warning("endpoint %s rejected logprobs (%s); continuing without them", self.host,
                        " ".join(str(exc).split())[:120])
        self._unsupported.add("logprobs")
        return True

    def chat_cache_key(self, task: str, key_input: dict[str, Any], json_mode: bool, *,
                       response_format: str | None = None, max_tokens: int | None = None) -> str:
        """The cache key of one chat request: named parts that change the reply, and the input.

        Parts: backend, model, host, task, template hash, decoding (temperature, seed, logprobs),
        ``max_tokens`` and how JSON was requested (``response_format``: the mode used, default the
        endpoint's known mode, else the first tried). Never retries, timeouts or concurrency.
        The batch driver files its results under the same key, so both paths share one cache.
        """
        if json_mode:
            response_format = response_format or self.response_format or RESPONSE_FORMATS[0]
        else:
            response_format = "plain"
        if max_tokens is None:
            max_tokens = max_tokens_for(task, len(key_input.get("claims", ())) if task == "verify_batch" else 1)
        return cache_key({
            "backend": self.backend, "model": self.model, "host": self.host, "task": task,
            "template": self.prompts[task].sha256, "decoding": {**self._decoding(), "max_tokens": max_tokens},
            "json_mode": json_mode, "response_format": response_format, "input": key_input,
        })

    def _from_cache(self, key: str, parse: Callable[[str], Any]) -> tuple[Any, dict] | None:
        """``(parsed, meta)`` for a cached reply (counted as a cache hit), else ``None``."""
        entry = self.cache.get_entry(key) if self.cache is not None else None
        if entry is None:
            return None
        try:
            parsed = parse(entry.value)
        except ParseError:
            return None  # should not happen (only parsed replies are stored): call again
        if parsed is None:
            return None
        self._ledger.cache_hits += 1
        return parsed, entry.meta

    async def _call(
        self,
        task: str,
        fields: dict[str, Any],
        key_input: dict[str, Any],
        parse: Callable[[str], Any],
        *,
        json_mode: bool,
        logprobs: bool = False,
        logprob_key: str = "supported",
    ) -> tuple[Any, dict]:
        prompt = self.prompts[task]
        max_tokens = max_tokens_for(task, len(key_input.get("claims", ())) if task == "verify_batch" else 1)
        key = None
        if self.cache is not None:
            key = self.chat_cache_key(task, key_input, json_mode, max_tokens=max_tokens)
            hit = self._from_cache(key, parse) or await self._from_in_flight(key, parse)
            if hit is not None:
                return hit
        # claim the key while this call is on its way, so a duplicate item waits for its reply (cached runs only)
        future = None
        if key is not None:
            future = self._in_flight[key] = asyncio.get_running_loop().create_future()
        answered = None
        try:
            parsed, meta, content = await self._call_endpoint(
                task, prompt.render(**fields), key_input, parse, json_mode=json_mode, logprobs=logprobs,
                logprob_key=logprob_key, max_tokens=max_tokens)
            answered = (content, meta)
        finally:
            if key is not None and future is not None:
                future.set_result(answered)
                if self._in_flight.get(key) is future:
                    del self._in_flight[key]
        return parsed, meta

    async def _from_in_flight(self, key: str, parse: Callable[[str], Any]) -> tuple[Any, dict] | None:
        """The reply of the same request already on its way on this loop (a duplicate item), as the
        cache would give it; ``None`` when there is none or it failed (this call then makes its own)."""
        pending = self._in_flight.get(key)
        if pending is None or pending.get_loop() is not asyncio.get_running_loop():
            return None
        answered = await asyncio.shield(pending)
        if answered is None:
            return None
        content, meta = answered
        parsed = parse(content)
        self._ledger.cache_hits += 1
        return parsed, {k: v for k, v in meta.items() if k != "response_format"}

    async def _call_endpoint(self, task: str, text: str, key_input: dict[str, Any], parse: Callable[[str], Any], *,
                             json_mode: bool, logprobs: bool, logprob_key: str,
                             max_tokens: int) -> tuple[Any, dict, str]:
        """One chat task sent to the endpoint (retried, limited, cached): ``(parsed, meta, content)``."""

        async def attempt() -> tuple[str, dict, Any]:
            try:
                content, meta = await self._request(text, task=task, json_mode=json_mode, logprobs=logprobs,
                                                    logprob_key=logprob_key, max_tokens=max_tokens)
            except openai.APIError as exc:
                fatal = endpoint_failure(exc, base_url=self.base_url, model=self.model, answered=self._gate.open)
                if fatal is not None:
                    self.fatal = self.fatal or fatal
                    self._gate.closed_with = self.fatal
                    raise self.fatal from exc
                if not isinstance(exc, openai.APIConnectionError):
                    self._gate.open = True  # a status error is an answer: the endpoint is there
                raise
            return content, meta, parse(content)

        def count(exc: BaseException) -> None:
            if is_timeout(exc):
                self._ledger.timeouts += 1

        try:
            first = await self._gate.enter()
            try:
                content, meta, parsed = await with_retries(
                    attempt, what=f"{task} ({self.model} @ {self.host})", max_retries=self.config.max_retries,
                    limiter=self.limiter, base_delay=self.retry_base_delay, max_delay=self.retry_max_delay,
                    rng=self._rng, on_failure=count,
                )
            finally:
                if first:
                    self._gate.leave()
        except JudgeError:
            self._ledger.failures += 1
            raise
        if isinstance(parsed, ParseResult):
            self._ledger.parse_problems.extend((task, p) for p in parsed.problems)
        if self.cache is not None:
            key = self.chat_cache_key(task, key_input, json_mode, response_format=meta.get("response_format"),
                                      max_tokens=max_tokens)
            self.cache.put(key, content, {k: v for k, v in meta.items() if k != "response_format"})
        return parsed, meta, content

    # -- the Judge protocol ------------------------------------------------------------------
    async def decompose(self, answer: str) -> list[str]:
        """Atomic standalone claims of ``answer``; ``[]`` without a call for an empty answer."""
        if not answer or not answer.strip():
            return []
        parsed, _ = await self._call("decompose", {"answer": answer}, {"answer": answer}, parse_claims, json_mode=True)
        return list(parsed.value)

    async def verify(self, claim: str, passages: Sequence[Passage]) -> ClaimVerdict:
        """One claim against the passages, one call (passages first, claim last; no question).

        Score = P("true") of the ``supported`` token when the endpoint returns logprobs, else
        1.0 / 0.0 from the verdict. With no passages the claim is unsupported (score 0, no call).
        """
        if not passages:
            return ClaimVerdict(claim=claim, supported=False, score=0.0, reason="no passages to check against")
        rendered, pairs = rendered_passages(passages)
        fields = {"passages": rendered, "claim": claim}
        key_input = {"claim": claim, "passages": pairs}
        parsed, meta = await self._call("verify", fields, key_input, parse_verdict, json_mode=True, logprobs=self.logprobs)
        verdict = parsed.value
        p_true = meta.get("p_true")
        score = float(p_true) if isinstance(p_true, (int, float)) else (1.0 if verdict["supported"] else 0.0)
        return ClaimVerdict(
            claim=claim,
            supported=verdict["supported"],
            score=min(1.0, max(0.0, score)),
            quote=verdict["quote"],
            passage_id=verdict["passage_id"],
            reason=verdict["reason"],
        )

    async def verify_batch(self, claims: Sequence[str], passages: Sequence[Passage]) -> list[ClaimVerdict]:
        """EXPERIMENT MODE (``judge --verify-mode batched``): all claims of one answer in ONE call.

        The default is one call per claim, because verdicts made together tend to share errors;
        this mode exists so that difference can be measured on human labels. Scores are 1.0/0.0.
        """
        claims = list(claims)
        if not claims:
            return []
        if not passages:
            return [ClaimVerdict(claim=c, supported=False, score=0.0, reason="no passages to check against")
                    for c in claims]
        numbered = "\n".join(f"{i}. {c}" for i, c in enumerate(claims))
        fields = {"passages": render_passages(passages), "claims": numbered}
        key_input = {"claims": claims, "passages": [[p.id, p.text] for p in passages]}
        parsed, _ = await self._call("verify_batch", fields, key_input,
                                     lambda text: parse_verdict_batch(text, len(claims)), json_mode=True)
        return [ClaimVerdict(claim=c, supported=v["supported"], score=1.0 if v["supported"] else 0.0,
                             quote=v["quote"], passage_id=v["passage_id"], reason=v["reason"])
                for c, v in zip(claims, parsed.value)]

    async def reverse_questions(self, answer: str, n: int) -> list[str]:
        """Up to ``n`` questions the answer answers, written from the answer alone; ``[]`` if n < 1 or empty."""
        if n < 1 or not answer or not answer.strip():
            return []
        parsed, _ = await self._call(
            "reverse_questions", {"answer": answer, "n": n}, {"answer": answer, "n": n},
            lambda text: parse_lines(text, n), json_mode=False,
        )
        return list(parsed.value)

    async def judge_context(self, question: str, passage: Passage) -> ContextVerdict:
        """Is one retrieved passage useful for the question? One call (passage first, question last;
        never the answer). Score = P("true") of ``relevant`` with logprobs, else 1.0 / 0.0."""
        fields = {"passage": passage.text, "question": question}
        key_input = {"question": question, "passage": [passage.id, passage.text]}
        relevant, meta = await self._call("context_relevance", fields, key_input, parse_context_relevance,
                                          json_mode=True, logprobs=self.logprobs, logprob_key="relevant")
        p_true = meta.get("p_true")
        score = float(p_true) if isinstance(p_true, (int, float)) else (1.0 if relevant else 0.0)
        return ContextVerdict(passage.id, bool(relevant), min(1.0, max(0.0, score)))

    async def is_refusal(self, answer: str) -> bool:
        """True when the answer declines to answer. An empty answer counts as a refusal (no call)."""
        if not answer or not answer.strip():
            return True
        parsed, _ = await self._call("refusal", {"answer": answer}, {"answer": answer}, parse_refusal, json_mode=True)
        return bool(parsed)


class OpenAICompatEmbedder:
    """Embeddings endpoint (satisfies ``Embedder``), cached per text, batches of up to 256 texts.

    Model: ``config.embedding_model`` or ``WORKBENCH_EMBEDDING_MODEL`` (default
    text-embedding-3-small). Vectors are returned as the endpoint gives them (not re-normalised).
    Pass the judge's ``client``, ``cache`` and ``limiter`` to share one connection pool, one cache
    and one in-flight budget against the same endpoint (``judges.factory.build_judge`` does).
    """

    backend = "openai"
    coalescable = True  # the pipeline may merge concurrent embed() calls (workbench.scoring.embed_batch)
    client: _LazyClient = _LazyClient()

    def __init__(
        self,
        config: JudgeConfig | None = None,
        client: ClientSource = None,
        *,
        cache: JudgeCache | None = None,
        batch_size: int = EMBED_BATCH,
        retry_base_delay: float = 0.5,
        limiter: AdaptiveLimiter | None = None,
    ) -> None:
        self.config = config or JudgeConfig(backend="openai")
        self.model = self.config.embedding_model or os.environ.get("WORKBENCH_EMBEDDING_MODEL") or DEFAULT_EMBEDDING_MODEL
        self.host = endpoint_host(_endpoint_url(client, self.config))
        self.client = client
        self.cache = _open_cache(self.config, cache)
        self.limiter = limiter if limiter is not None else AdaptiveLimiter(fixed=self.config.concurrency,
                                                                           timeout=self.config.timeout)
        self.batch_size = max(1, min(batch_size, EMBED_BATCH))
        self.retry_base_delay = retry_base_delay
        self.missing: EmbeddingsUnavailable | None = None  # the endpoint has no embeddings (asked once)
        self._gate = FirstCallGate()
        #: the judge's gate when both talk to one endpoint: the judge's first call goes first
        self.after_gate: FirstCallGate | None = None
        self._ledger = _Ledger()
        self.fingerprint = fingerprint({"backend": "openai-embedding", "model": self.model, "host": self.host})

    def usage(self) -> JudgeUsage:
        return self._ledger.usage()

    def _key(self, text: str) -> str:
        return cache_key({"backend": self.backend, "kind": "embedding", "model": self.model, "host": self.host, "input": text})

    async def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        async def attempt() -> list[list[float]]:
            self._ledger.calls += 1
            try:
                response = await post_json(self.client, "/embeddings", {"model": self.model, "input": batch},
                                           self.config.timeout)
            except openai.APIStatusError as exc:
                message = str(exc).lower()
                if exc.status_code in (404, 405, 501) or (exc.status_code in (400, 422, 500) and "embedding" in message):
                    base_url = str(self.client.base_url).rstrip("/")
                    self.missing = self.missing or EmbeddingsUnavailable(
                        f"{base_url} has no /v1/embeddings for model {self.model!r} (HTTP {exc.status_code}: "
                        f"{' '.join(str(exc).split())[:120]}); answer relevance needs embeddings: use "
                        "--embedder offline (the bundled ones), or serve an embedding model there")
                    self._gate.closed_with = self.missing
                    raise self.missing from exc
                raise
            self._gate.open = True
            rows = [d for d in (response.get("data") or []) if isinstance(d, dict)]
            data = sorted(rows, key=lambda d: d.get("index", 0))
            if len(data) != len(batch):
                raise JudgeError(f"embeddings: sent {len(batch)} texts, got {len(data)} vectors")
            self._ledger.prompt_tokens += int(_field(response.get("usage") or {}, "prompt_tokens", 0) or 0)
            return [list(map(float, d.get("embedding") or ())) for d in data]

        try:
            if self.after_gate is not None and not self.after_gate.open:
                await self.after_gate.wait_answered(self.config.timeout or 60.0)
            first = await self._gate.enter()  # the first request goes alone: a missing endpoint is asked once
            try:
                return await with_retries(
                    attempt, what=f"embeddings ({self.model} @ {self.host})", max_retries=self.config.max_retries,
                    limiter=self.limiter, base_delay=self.retry_base_delay,
                )
            finally:
                if first:
                    self._gate.leave()
        except JudgeError:
            self._ledger.failures += 1
            raise

    def _cached_rows(self, texts: Sequence[str]) -> tuple[dict[str, list[float]], list[str]]:
        """The distinct ``texts`` split into cached rows (counted as cache hits) and those missing, in order."""
        rows: dict[str, list[float]] = {}
        missing: list[str] = []
        for text in dict.fromkeys(texts):
            value = self.cache.get(self._key(text)) if self.cache is not None else None
            if value is not None:
                rows[text] = json_loads_vector(value)
                self._ledger.cache_hits += 1
            else:
                missing.append(text)
        return rows, missing

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, shape ``(len(texts), dim)``; ``(0, 0)`` for no texts."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, 0))
        vectors, missing = self._cached_rows(texts)
        batches = [missing[i : i + self.batch_size] for i in range(0, len(missing), self.batch_size)]
        results = await asyncio.gather(*(self._embed_batch(b) for b in batches))
        for batch, rows in zip(batches, results):
            for text, row in zip(batch, rows):
                vectors[text] = row
                if self.cache is not None:
                    self.cache.put(self._key(text), json_dumps_vector(row))
        return np.asarray([vectors[t] for t in texts], dtype=float)


def json_dumps_vector(row: Sequence[float]) -> str:
    return json.dumps([float(x) for x in row], separators=(",", ":"))


def json_loads_vector(value: str) -> list[float]:
    return [float(x) for x in json.loads(value)]
