"""OpenAICompatJudge with the REAL openai client against tests/fake_openai.py (loopback)."""
from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx2
import numpy as np
import openai
import pytest
from fake_openai import CHAT_PATH, EMBEDDINGS_PATH, FakeOpenAI, Fault

from workbench.config import JudgeConfig
from workbench.judges.base import Embedder, Judge, JudgeError, run_sync
from workbench.judges.cache import JudgeCache
from workbench.judges.client import MissingCredentialsError, endpoint_host, make_client
from workbench.judges.concurrency import AdaptiveLimiter, retry_after_seconds, with_retries
from workbench.judges.openai_compat import OpenAICompatEmbedder, OpenAICompatJudge
from workbench.judges.prompts import PROMPT_NAMES, Prompt, load_prompt
from workbench.types import Passage

REPO = Path(__file__).resolve().parents[1]
SECRET = "sk-test-SECRET-7f3a9c2e1d"
PASSAGES = (
    Passage("p-1", "Annual plans renew automatically on the anniversary. Refunds are possible within 30 days."),
    Passage("p-2", "Monthly plans can be cancelled at any time."),
)


def make_judge(fake: FakeOpenAI, cache_path: Path | None = None, *, logprobs: bool = True, **overrides) -> OpenAICompatJudge:
    config = JudgeConfig(
        backend="openai", model=overrides.pop("model", "fake-model"), base_url=fake.base_url,
        use_cache=cache_path is not None, cache_path=cache_path, timeout=overrides.pop("timeout", 5.0), **overrides,
    )
    client = openai.AsyncOpenAI(base_url=fake.base_url, api_key=SECRET, max_retries=0)
    return OpenAICompatJudge(config, client=client, logprobs=logprobs, retry_base_delay=0.01, rng=random.Random(0))


def verify(judge: OpenAICompatJudge, claim: str = "Annual plans renew automatically on the anniversary."):
    return run_sync(judge.verify(claim, PASSAGES))


# -- prompts ---------------------------------------------------------------------------------------
def test_prompts_load_with_hash_and_render_once():
    for name in PROMPT_NAMES:
        prompt = load_prompt(name)
        assert prompt.name == f"{name}_v1" and len(prompt.sha256) == 64
        assert load_prompt(name) is prompt  # cached
    verify_prompt = load_prompt("verify")
    assert verify_prompt.fields == {"passages", "claim"}
    assert "question" not in verify_prompt.text.lower()  # the verify prompt never sees the question
    text = verify_prompt.render(passages="P {{claim}}", claim="C")
    assert text.index("P {{claim}}") < text.index("C\n</claim>")  # passages first, claim last, no re-expansion
    with pytest.raises(KeyError):
        verify_prompt.render(claim="C")
    with pytest.raises(FileNotFoundError):
        load_prompt("nonexistent")


# -- the four tasks --------------------------------------------------------------------------------
def test_all_four_tasks_parse_and_send_the_right_requests(fake_openai):
    judge = make_judge(fake_openai)
    assert isinstance(judge, Judge)
    claims = run_sync(judge.decompose("Annual plans renew automatically [p-1]. Refunds take 30 days [p-1]."))
    assert claims == ["Annual plans renew automatically.", "Refunds take 30 days."]
    yes = verify(judge)
    assert (yes.supported, yes.score, yes.passage_id, yes.quote_found) == (True, 1.0, "p-1", None)
    assert yes.quote == "Annual plans renew automatically on the anniversary."
    no = verify(judge, "Lifetime plans include free hardware.")
    assert (no.supported, no.score, no.quote, no.passage_id) == (False, 0.0, None, None)
    questions = run_sync(judge.reverse_questions("Annual plans renew automatically.", 2))
    assert questions == ["What about annual plans renew?", "What about automatically?"]
    assert run_sync(judge.is_refusal("I don't know, the documents do not say.")) is True
    assert run_sync(judge.is_refusal("Annual plans renew yearly.")) is False

    bodies = fake_openai.bodies()
    assert len(bodies) == 6 and all(b["model"] == "fake-model" and b["temperature"] == 0.0 for b in bodies)
    decompose_body, verify_body, _, reverse_body, refusal_body, _ = bodies
    assert decompose_body["response_format"]["type"] == "json_schema" and "logprobs" not in decompose_body
    assert decompose_body["response_format"]["json_schema"]["schema"]["required"] == ["claims"]
    assert verify_body["response_format"]["json_schema"]["name"] == "verify"
    assert verify_body["logprobs"] is True and verify_body["top_logprobs"] == 5
    assert "response_format" not in reverse_body and "logprobs" not in reverse_body
    assert refusal_body["response_format"]["json_schema"]["schema"]["properties"] == {"refusal": {"type": "boolean"}}
    # every call is bounded, with the budget of its task
    assert [b["max_tokens"] for b in bodies] == [512, 256, 256, 160, 48, 48]
    assert judge.response_format == "json_schema"
    prompt = verify_body["messages"][-1]["content"]
    assert prompt.index('<passage id="p-1">') < prompt.index('<passage id="p-2">') < prompt.index("<claim>")
    assert prompt.rstrip().endswith("</claim>")
    usage = judge.usage()
    assert usage.calls == 6 and usage.cache_hits == 0 and usage.failures == 0
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0


def test_degenerate_inputs_make_no_call(fake_openai):
    judge = make_judge(fake_openai)
    assert run_sync(judge.decompose("   ")) == []
    assert run_sync(judge.reverse_questions("An answer.", 0)) == []
    assert run_sync(judge.is_refusal("")) is True
    verdict = run_sync(judge.verify("A claim.", []))
    assert (verdict.supported, verdict.score) == (False, 0.0)
    assert fake_openai.count() == 0


def test_logprob_score_is_p_true_of_the_supported_token(fake_openai):
    fake_openai.logprob_confidence = 0.9
    judge = make_judge(fake_openai)
    assert verify(judge).score == pytest.approx(0.9)
    assert verify(judge, "Lifetime plans include free hardware.").score == pytest.approx(0.1)
    no_logprobs = make_judge(fake_openai, logprobs=False)
    assert verify(no_logprobs).score == 1.0 and "logprobs" not in fake_openai.bodies()[-1]
    assert no_logprobs.fingerprint != judge.fingerprint


def test_code_fenced_and_sloppy_json_is_parsed(fake_openai):
    fake_openai.responder = lambda request: (
        "Here is my verdict:\n```json\n{'quote': 'Monthly plans can be cancelled', 'passage_id': 'p-2', "
        "'supported': True, 'reason': 'stated',}\n```"
    )
    verdict = verify(make_judge(fake_openai), "Monthly plans can be cancelled.")
    assert (verdict.supported, verdict.quote, verdict.passage_id, verdict.reason) == (True, "Monthly plans can be cancelled", "p-2", "stated")


def test_rejected_response_format_and_logprobs_fall_back(fake_openai):
    fake_openai.reject_response_format = True
    fake_openai.reject_logprobs = True
    judge = make_judge(fake_openai)
    assert verify(judge).supported is True
    assert verify(judge, "Monthly plans can be cancelled at any time.").supported is True
    bodies = fake_openai.bodies()
    assert len(bodies) == 5  # three 400s on the first call (schema, object, logprobs), none after
    assert [b.get("response_format", {}).get("type") for b in bodies] == ["json_schema", "json_object", None, None, None]
    assert "response_format" not in bodies[-1] and "logprobs" not in bodies[-1]
    assert judge.response_format == "plain"


# -- retries ---------------------------------------------------------------------------------------
def test_429_then_success_honours_retry_after_and_halves_limit(fake_openai):
    fake_openai.push_fault(Fault.rate_limit(retry_after=0.4))
    judge = make_judge(fake_openai)
    judge.limiter = AdaptiveLimiter(initial=64)
    assert verify(judge).supported is True
    first, second = fake_openai.requests
    assert first.fault == "delay" or first.fault == "status"
    assert second.time - first.time >= 0.39  # Retry-After 0.4 s beat the 0.01 s backoff
    assert judge.limiter.history == [("throttled", 32)]
    assert judge.usage().calls == 2 and judge.usage().failures == 0


def test_timeout_then_success(fake_openai):
    fake_openai.push_fault(Fault.delay(2.0))
    judge = make_judge(fake_openai, timeout=0.4)
    started = time.monotonic()
    assert verify(judge).supported is True
    assert fake_openai.count() == 2 and time.monotonic() - started < 1.9


def test_server_error_and_dropped_connection_are_retried(fake_openai):
    fake_openai.push_fault(Fault.server_error(503), Fault.drop())
    judge = make_judge(fake_openai)
    assert verify(judge).supported is True
    assert [r.fault for r in fake_openai.requests] == ["status", "drop", None]


def test_garbage_output_raises_judge_error_after_retries_and_is_not_cached(fake_openai, tmp_path):
    fake_openai.push_fault(*[Fault.malformed("I think it is probably fine.")] * 3)
    judge = make_judge(fake_openai, tmp_path / "cache.db", max_retries=2)
    with pytest.raises(JudgeError) as info:
        verify(judge)
    assert "after 3 attempt(s)" in str(info.value) and "I think it is probably fine." in str(info.value)
    assert fake_openai.count() == 3 and judge.usage().failures == 1
    assert len(judge.cache) == 1  # errors are never cached (the one entry: the endpoint's response format)
    assert judge.cache.get(judge._format_key()) == "json_schema"
    assert verify(judge).supported is True  # the next call goes through and is cached
    assert len(judge.cache) == 2 and fake_openai.count() == 4


def test_non_retryable_error_fails_at_once(fake_openai):
    fake_openai.api_key = "sk-some-other-key"
    judge = make_judge(fake_openai, max_retries=4)
    with pytest.raises(JudgeError, match="401"):
        verify(judge)
    assert fake_openai.count() == 1


# -- cache -----------------------------------------------------------------------------------------
def test_second_identical_call_makes_no_request(fake_openai, tmp_path):
    fake_openai.logprob_confidence = 0.75
    judge = make_judge(fake_openai, tmp_path / "cache.db")
    first = verify(judge)
    assert fake_openai.count() == 1
    again = make_judge(fake_openai, tmp_path / "cache.db")  # a new process would look the same
    second = verify(again)
    assert second == first and second.score == pytest.approx(0.75)  # logprob score comes from the cache too
    assert fake_openai.count() == 1
    assert again.usage().calls == 0 and again.usage().cache_hits == 1 and again.usage().prompt_tokens == 0
    assert run_sync(again.decompose("One. Two.")) == run_sync(again.decompose("One. Two."))
    assert fake_openai.count() == 2


def test_identical_calls_in_flight_at_once_make_one_request_answered_like_a_cache_hit(fake_openai, tmp_path):
    fake_openai.logprob_confidence = 0.75
    fake_openai.latency = 0.2
    judge = make_judge(fake_openai, tmp_path / "cache.db")
    judge.limiter = AdaptiveLimiter(initial=8)

    async def both(claim: str):
        return await asyncio.gather(judge.verify(claim, PASSAGES), judge.verify(claim, PASSAGES))

    first, second = run_sync(both("Annual plans renew automatically on the anniversary."))
    assert first == second and second.score == pytest.approx(0.75)  # the same verdict and logprob score
    assert fake_openai.count() == 1 and judge.usage().calls == 1 and judge.usage().cache_hits == 1
    fake_openai.push_fault(Fault.server_error(400))  # the first of two fails for good: the other calls itself
    results = run_sync(_both_settled(judge))
    assert isinstance(results[0], JudgeError) and results[1].supported is True
    assert fake_openai.count() == 3 and judge.usage().failures == 1


async def _both_settled(judge):
    return await asyncio.gather(*(judge.verify("Monthly plans can be cancelled.", PASSAGES) for _ in range(2)),
                                return_exceptions=True)


def test_use_cache_false_bypasses_the_cache(fake_openai, tmp_path):
    judge = make_judge(fake_openai, None)
    assert judge.cache is None
    verify(judge), verify(judge)
    assert fake_openai.count() == 2


@pytest.mark.parametrize(
    "change,new_request",
    [
        ({"model": "other-model"}, True),
        ({"temperature": 0.7}, True),
        ({"seed": 7}, True),
        ({"concurrency": 3}, False),
        ({"timeout": 9.0}, False),
        ({"max_retries": 1}, False),
    ],
    ids=lambda v: str(v),
)
def test_cache_key_and_fingerprint_follow_what_changes_verdicts(fake_openai, tmp_path, change, new_request):
    base = make_judge(fake_openai, tmp_path / "cache.db")
    verify(base)
    other = make_judge(fake_openai, tmp_path / "cache.db", **change)
    verify(other)
    assert fake_openai.count() == (2 if new_request else 1)
    assert (other.fingerprint != base.fingerprint) is new_request


def test_template_change_changes_key_and_fingerprint(fake_openai, tmp_path):
    base = make_judge(fake_openai, tmp_path / "cache.db")
    verify(base)
    edited = make_judge(fake_openai, tmp_path / "cache.db")
    old = edited.prompts["verify"]
    text = old.text + "\nBe strict.\n"
    import hashlib

    edited.prompts["verify"] = Prompt("verify_v2", text, hashlib.sha256(text.encode()).hexdigest())
    verify(edited)
    assert fake_openai.count() == 2
    assert "Be strict." in fake_openai.bodies()[-1]["messages"][-1]["content"]


def test_fingerprint_names_host_not_port_or_key(fake_openai):
    judge = make_judge(fake_openai)
    assert judge.fingerprint.startswith("openai:fake-model@")
    parts = judge.fingerprint_parts()
    assert parts["host"] == "127.0.0.1" and SECRET not in repr(parts)
    assert endpoint_host("https://user:pw@llm.internal:8443/v1") == "llm.internal" and endpoint_host(None) == "api.openai.com"


def test_api_key_never_reaches_the_cache_file(fake_openai, tmp_path):
    judge = make_judge(fake_openai, tmp_path / "cache.db")
    verify(judge)
    run_sync(judge.decompose("One fact. Another fact."))
    embedder = OpenAICompatEmbedder(judge.config, client=judge.client)
    run_sync(embedder.embed(["one", "two"]))
    judge.cache.close()
    embedder.cache.close()
    blobs = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert b"Annual plans renew automatically on the anniversary." in blobs  # the cache really holds replies...
    assert SECRET.encode() not in blobs  # ...but never the key
    assert all("authorization" not in r.headers for r in fake_openai.requests)


# -- credentials and client construction -------------------------------------------------------------
def test_client_from_env_placeholder_key_and_missing_credentials(monkeypatch, fake_openai):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("WORKBENCH_MODEL", raising=False)
    with pytest.raises(MissingCredentialsError, match="OPENAI_API_KEY"):
        make_client(JudgeConfig(backend="openai"))
    with pytest.raises(MissingCredentialsError):
        make_client(JudgeConfig(backend="openai", base_url="https://api.openai.com/v1"))
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    judge = OpenAICompatJudge(JudgeConfig(backend="openai", use_cache=False))
    assert judge.client.api_key == "sk-no-key" and judge.client.max_retries == 0
    assert judge.model == "gpt-4o-mini"
    assert verify(judge).supported is True
    monkeypatch.setenv("WORKBENCH_MODEL", "env-model")
    assert OpenAICompatJudge(JudgeConfig(backend="openai", use_cache=False)).model == "env-model"


def test_factory_builds_judge_and_embedder_sharing_the_client(monkeypatch, fake_openai, tmp_path):
    from workbench.judges.factory import build_judge

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    judge, embedder = build_judge(JudgeConfig(backend="openai", base_url=fake_openai.base_url, cache_path=tmp_path / "c.db"))
    assert isinstance(judge, OpenAICompatJudge) and isinstance(embedder, Embedder)
    assert embedder.client is judge.client and embedder.model == "text-embedding-3-small"


# -- embeddings ------------------------------------------------------------------------------------
def test_embedder_batches_caches_and_is_deterministic(fake_openai, tmp_path):
    config = JudgeConfig(backend="openai", base_url=fake_openai.base_url, cache_path=tmp_path / "c.db", embedding_model="emb")
    client = openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key=SECRET, max_retries=0)
    embedder = OpenAICompatEmbedder(config, client=client)
    texts = [f"text number {i}" for i in range(600)] + ["text number 0"]
    vectors = run_sync(embedder.embed(texts))
    assert vectors.shape == (601, 32)
    np.testing.assert_allclose(vectors[0], vectors[600])
    sizes = sorted(len(body["input"]) for body in fake_openai.bodies(EMBEDDINGS_PATH))
    assert sizes == [88, 256, 256]  # 600 distinct texts in batches of at most 256
    again = run_sync(OpenAICompatEmbedder(config, client=client).embed(texts[:10]))
    np.testing.assert_allclose(again, vectors[:10])
    assert fake_openai.count(EMBEDDINGS_PATH) == 3
    assert run_sync(embedder.embed([])).shape == (0, 0)


# -- concurrency -----------------------------------------------------------------------------------
def test_300_concurrent_verify_calls_all_succeed(fake_openai):
    fake_openai.latency = 0.02
    judge = make_judge(fake_openai)

    async def run_all():
        tags = ["".join(chr(97 + int(d)) for d in str(i)) for i in range(300)]  # short, not content words
        claims = [f"Annual plans renew automatically, {tag}." for tag in tags]
        return await asyncio.gather(*(judge.verify(c, PASSAGES) for c in claims))

    verdicts = run_sync(run_all())
    assert len(verdicts) == 300 and all(v.supported for v in verdicts)
    assert fake_openai.count(CHAT_PATH) == 300 and judge.usage().failures == 0
    assert judge.limiter.peak_in_flight >= 4  # started at 1 and grew: really concurrent
    assert judge.limiter.history[0] == ("flat", 16)  # after the first call: the initial window
    assert judge.limiter.in_flight == 0


def test_a_429_storm_right_after_the_first_call_backs_off_from_the_initial_window(fake_openai):
    fake_openai.latency = 0.02
    judge = make_judge(fake_openai, max_retries=10)
    assert verify(judge).supported is True  # the first call goes alone, then the initial window opens
    assert judge.limiter.limit == 16 and judge.limiter.history == [("flat", 16)]
    fake_openai.push_fault(*[Fault.rate_limit()] * 40)  # the next 40 requests are throttled

    async def run_all():
        return await asyncio.gather(*(judge.verify(f"Monthly plans can be cancelled, case {i}.", PASSAGES)
                                      for i in range(30)))

    verdicts = run_sync(run_all())
    assert len(verdicts) == 30 and judge.usage().failures == 0
    assert fake_openai.count(CHAT_PATH) == 1 + 30 + 40  # every 429 was retried once more
    # the first wave of 16 was throttled: halved once per wave (stale 429s of a wave are ignored) down to 1
    assert judge.limiter.history[:5] == [("flat", 16), ("throttled", 8), ("throttled", 4), ("throttled", 2),
                                         ("throttled", 1)]
    assert judge.limiter.peak_in_flight == 16 and judge.limiter.in_flight == 0


def test_fixed_concurrency_is_a_hard_cap(fake_openai):
    fake_openai.latency = 0.01
    judge = make_judge(fake_openai, concurrency=4)

    async def run_all():
        return await asyncio.gather(*(judge.verify(f"Claim {i}.", PASSAGES) for i in range(40)))

    run_sync(run_all())
    assert judge.limiter.peak_in_flight == 4 and judge.limiter.limit == 4 and judge.limiter.history == []


def test_limiter_halves_on_throttle_once_per_epoch_and_never_below_one():
    limiter = AdaptiveLimiter(initial=64)
    epoch = limiter.epoch
    limiter.on_throttle(epoch)
    assert limiter.limit == 32
    limiter.on_throttle(epoch)  # a second 429 from a call admitted before the decrease: ignored
    assert limiter.limit == 32
    for _ in range(10):
        limiter.on_throttle()
    assert limiter.limit == 1
    assert limiter.history[:2] == [("throttled", 32), ("throttled", 16)]


def test_limiter_starts_at_one_jumps_to_the_initial_window_doubles_while_flat_then_grows_by_one_and_halves_on_a_spike():
    limiter = AdaptiveLimiter(window=4)
    assert limiter.limit == 1  # capacity unknown: start low
    for _ in range(4):
        limiter.on_success(0.10)
    assert limiter.limit == 16 and limiter.baseline == pytest.approx(0.10)  # the initial window
    for _ in range(4):
        limiter.on_success(0.12)  # within 1.3x of baseline: flat, still slow start (doubling)
    assert limiter.limit == 32
    for _ in range(4):
        limiter.on_success(0.50)  # > 1.8x baseline: latency grew with the number in flight, halve
    assert limiter.limit == 16 and limiter.history[-1] == ("latency", 16) and not limiter.slow_start
    for _ in range(4):
        limiter.on_success(0.11)  # flat again: now one at a time
    assert limiter.limit == 17
    for _ in range(4):
        limiter.on_success(0.16)  # 1.3x..1.8x: hold
    assert limiter.limit == 17
    stale = limiter.epoch - 1
    for _ in range(8):
        limiter.on_success(5.0, stale)  # measured before the decrease: ignored
    assert limiter.limit == 17
    limiter.on_throttle(limiter.epoch, "timeout")  # a timeout is a congestion signal like a 429
    assert limiter.history[-1] == ("timeout", 8)
    assert [limit for _, limit in limiter.history] == [16, 32, 16, 17, 8]


def test_limiter_initial_window_only_once_and_within_the_timeout_headroom():
    plain = AdaptiveLimiter(initial_window=2)  # plain doubling from one, as before the initial window
    plain.on_success(0.2)
    plain.on_success(0.2)
    plain.on_success(0.2)
    assert plain.history == [("flat", 2), ("flat", 4)]
    # timeout 10 s, first call 1 s: 16 calls served one after another would take 16 s > 5 s; 5 fit
    roomy = AdaptiveLimiter(timeout=10.0)
    roomy.on_success(1.0)
    assert roomy.limit == 5 and roomy.history == [("flat", 5)]
    # first call 0.25 s, timeout 1 s: only 2 fit, which is plain doubling
    tight = AdaptiveLimiter(timeout=1.0)
    tight.on_success(0.25)
    assert tight.limit == 2
    # first call 0.6 s, timeout 1 s: not even 2 fit, so no growth at all (as before)
    slow = AdaptiveLimiter(timeout=1.0)
    slow.on_success(0.6)
    assert slow.limit == 1 and slow.history == []
    # a limiter that starts higher doubles when that beats the initial window
    high = AdaptiveLimiter(initial=8)
    for _ in range(8):
        high.on_success(0.1)
    assert high.limit == 16


def test_limiter_baseline_is_the_lowest_window_median_drifting_up_slowly():
    limiter = AdaptiveLimiter(window=4)
    for latency in (0.1, 0.1, 0.1, 0.1, 0.25, 0.25, 0.25, 0.25):
        limiter.on_success(latency)
    # a one-slot server: 16 in flight (the initial window) took 2.5x as long -> halved; the slow
    # window did not raise the baseline to its own level (an EWMA would have), only by the 10% drift
    assert limiter.limit == 8 and limiter.baseline == pytest.approx(0.11)


def test_limiter_fixed_never_changes_and_bounds_admission():
    limiter = AdaptiveLimiter(fixed=2)
    limiter.on_throttle()
    for _ in range(100):
        limiter.on_success(0.01)
    assert limiter.limit == 2 and limiter.history == []

    async def scenario():
        order = []

        async def worker(i):
            async with limiter.slot():
                order.append(("in", i, limiter.in_flight))
                await asyncio.sleep(0.01)

        await asyncio.gather(*(worker(i) for i in range(6)))
        return order

    order = asyncio.run(scenario())
    assert len(order) == 6 and max(n for _, _, n in order) == 2 and limiter.in_flight == 0


def _rate_limit_error(headers: dict[str, str]) -> openai.RateLimitError:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx2.Response(429, headers=headers, request=request)
    return openai.RateLimitError("slow down", response=response, body=None)


def test_retry_helper_backoff_retry_after_and_give_up():
    assert retry_after_seconds(_rate_limit_error({"retry-after": "3"})) == 3.0
    assert retry_after_seconds(_rate_limit_error({"retry-after-ms": "250"})) == 0.25
    assert retry_after_seconds(_rate_limit_error({})) is None
    sleeps: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    errors = [_rate_limit_error({"retry-after": "2"}), openai.APITimeoutError(httpx2.Request("POST", "http://x")), None]

    async def attempt():
        error = errors.pop(0)
        if error is not None:
            raise error
        return "ok"

    limiter = AdaptiveLimiter(initial=8)
    result = asyncio.run(with_retries(attempt, what="t", max_retries=3, limiter=limiter, base_delay=1.0, sleep=fake_sleep, rng=random.Random(1)))
    assert result == "ok" and limiter.limit == 2 and limiter.in_flight == 0  # the 429 and the timeout each halve
    assert limiter.history == [("throttled", 4), ("timeout", 2)]
    assert sleeps[0] == 2.0 and 1.0 <= sleeps[1] <= 2.0  # Retry-After, then backoff d=2: d/2 + U(0, d/2)

    async def always_fails():
        raise openai.APITimeoutError(httpx2.Request("POST", "http://x"))

    sleeps.clear()
    with pytest.raises(JudgeError, match="after 3 attempt"):
        asyncio.run(with_retries(always_fails, what="t", max_retries=2, base_delay=1.0, sleep=fake_sleep, rng=random.Random(1)))
    assert len(sleeps) == 2 and 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0

    async def bug():
        raise KeyError("programming error")

    with pytest.raises(KeyError):  # bugs are not disguised as judge errors
        asyncio.run(with_retries(bug, what="t", max_retries=2, sleep=fake_sleep))


# -- kill and resume -------------------------------------------------------------------------------
WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from workbench.config import JudgeConfig
    from workbench.judges.openai_compat import OpenAICompatJudge
    from workbench.types import Passage

    base_url, cache_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    judge = OpenAICompatJudge(JudgeConfig(backend="openai", model="fake-model", base_url=base_url,
                                          cache_path=cache_path, concurrency=2))
    passages = [Passage("p-1", "The sky is blue. Grass is green.")]

    async def one(i):
        await judge.verify(f"The sky is blue, observation {i}.", passages)
        print("done", i, flush=True)

    async def main():
        await asyncio.gather(*(one(i) for i in range(n)))
        usage = judge.usage()
        print("usage", usage.calls, usage.cache_hits, flush=True)

    asyncio.run(main())
    """
)


def _run_worker(script: Path, fake: FakeOpenAI, cache_path: Path, n: int, kill_after: int | None = None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "WORKBENCH_"))}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.Popen(
        [sys.executable, str(script), fake.base_url, str(cache_path), str(n)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.strip())
        if kill_after is not None and sum(l.startswith("done") for l in lines) >= kill_after:
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait(30)
    if kill_after is None:
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    else:
        assert proc.returncode == -signal.SIGKILL
    proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()
    return lines


def test_killed_run_resumes_with_only_the_missing_calls(fake_openai, tmp_path):
    n = 40
    fake_openai.latency = 0.05
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    cache_path = tmp_path / "cache.db"

    _run_worker(script, fake_openai, cache_path, n, kill_after=10)
    with JudgeCache(cache_path) as cache:
        cached = len(cache) - 1  # one entry is the endpoint's response format, not a reply
    assert 10 <= cached < n
    assert fake_openai.count() >= cached  # in-flight calls at the kill were sent but not cached

    fake_openai.reset()
    lines = _run_worker(script, fake_openai, cache_path, n)
    assert fake_openai.count() == n - cached
    assert lines[-1] == f"usage {n - cached} {cached}"
    requested = {b["messages"][-1]["content"].split("<claim>\n")[1].split("\n</claim>")[0] for b in fake_openai.bodies()}
    assert len(requested) == n - cached  # each missing claim asked once, no cached claim asked again

    fake_openai.reset()
    lines = _run_worker(script, fake_openai, cache_path, n)
    assert fake_openai.count() == 0 and lines[-1] == f"usage 0 {n}"


# -- real-endpoint behaviour: bounded replies, response formats, first-call gate, one-slot servers -------
def test_reply_cut_off_at_max_tokens_is_a_named_failure_not_retried_not_cached(fake_openai, tmp_path):
    fake_openai.responder = lambda request: "word " * 1000  # a model that does not stop
    judge = make_judge(fake_openai, tmp_path / "cache.db", max_retries=3)
    with pytest.raises(JudgeError) as info:
        verify(judge)
    message = str(info.value)
    assert "TruncatedReply" in message and "cut off at the 256-token limit (finish_reason: length)" in message
    assert fake_openai.count() == 1 and fake_openai.finish_reasons == ["length"]  # the same request would be cut again
    assert judge.truncated == 1 and judge.usage().failures == 1
    assert judge.usage().completion_tokens == 256
    assert len(judge.cache) == 1  # only the endpoint's response format, never the cut reply


def test_max_tokens_is_in_the_fingerprint_and_cache_key(fake_openai, tmp_path, monkeypatch):
    from workbench.judges import openai_compat

    base = make_judge(fake_openai, tmp_path / "cache.db")
    verify(base)
    monkeypatch.setitem(openai_compat.MAX_TOKENS, "verify", 300)
    bigger = make_judge(fake_openai, tmp_path / "cache.db")
    verify(bigger)
    assert bigger.fingerprint != base.fingerprint and fake_openai.count() == 2
    assert fake_openai.bodies()[-1]["max_tokens"] == 300


def test_json_schema_falls_back_to_json_object_once_and_is_remembered_in_the_cache(fake_openai, tmp_path):
    fake_openai.response_formats = {"json_object"}  # e.g. an older server
    judge = make_judge(fake_openai, tmp_path / "cache.db")
    assert judge.response_format is None  # not known yet
    assert verify(judge).supported is True
    assert run_sync(judge.is_refusal("I don't know.")) is True
    types = [b["response_format"]["type"] for b in fake_openai.bodies()]
    assert types == ["json_schema", "json_object", "json_object"]  # detected once
    assert judge.response_format == "json_object"
    fake_openai.reset()
    again = make_judge(fake_openai, tmp_path / "cache.db")  # a later run on the same endpoint and model
    assert again.response_format == "json_object"
    assert verify(again).supported is True and fake_openai.count() == 0  # and its replies come from the cache
    run_sync(again.decompose("Something new. Another thing."))
    assert [b["response_format"]["type"] for b in fake_openai.bodies()] == ["json_object"]  # no 400 again


def test_the_first_call_goes_alone_and_a_401_stops_every_other_call(fake_openai):
    from workbench.judges.openai_compat import EndpointError

    fake_openai.api_key = "sk-another"
    judge = make_judge(fake_openai)

    async def run_all():
        return await asyncio.gather(*(judge.verify(f"Claim {i}.", PASSAGES) for i in range(30)),
                                    return_exceptions=True)

    results = run_sync(run_all())
    assert all(isinstance(r, EndpointError) for r in results) and fake_openai.count() == 1
    assert judge.fatal is results[0] and judge.fatal.status == 401
    assert fake_openai.base_url in str(judge.fatal) and "'fake-model'" in str(judge.fatal)


def test_a_503_first_proves_the_endpoint_is_there_and_later_calls_are_not_fatal(fake_openai):
    fake_openai.push_fault(Fault.server_error(503), Fault.drop())
    judge = make_judge(fake_openai)
    assert verify(judge).supported is True and judge.fatal is None


def test_one_slot_server_no_call_times_out_from_our_own_queueing(tmp_path):
    # service time 0.25 s, one request at a time, timeout 1.0 s: 4 queued requests would time out
    with FakeOpenAI(slots=1, latency=0.25) as fake:
        judge = make_judge(fake, timeout=1.0)

        async def run_all():
            return await asyncio.gather(*(judge.verify(f"Annual plans renew, case {i}.", PASSAGES) for i in range(24)))

        started = time.monotonic()
        verdicts = run_sync(run_all())
        elapsed = time.monotonic() - started
    assert len(verdicts) == 24 and judge.usage().failures == 0
    assert judge.timeouts == 0 and judge.usage().calls == 24  # no timeout, so no retry
    assert judge.limiter.peak_in_flight <= 3 and fake.max_active == 1
    assert elapsed < 24 * 0.25 * 1.6  # and the server was kept busy


def test_limiter_keeps_headroom_under_the_timeout():
    limiter = AdaptiveLimiter(window=4, timeout=10.0)
    for _ in range(4):
        limiter.on_success(2.0)
    assert limiter.limit == 2  # slowest 2 s x 2 = 4 s <= half the timeout: grow
    for _ in range(4):
        limiter.on_success(2.6)  # flat (<= 1.3 x 2.0), but doubling to 4 would make it ~5.2 s > 5 s
    assert limiter.limit == 2
    limiter.on_success(7.0)  # one call took 70% of the timeout: back off before one times out
    assert limiter.limit == 1 and limiter.history[-1] == ("near timeout", 1)
