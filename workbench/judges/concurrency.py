"""One async concurrency core for remote judges: an adaptive limiter and the single retry helper.

``AdaptiveLimiter`` bounds calls in flight. The server's capacity is unknown at the start, so it
starts at ONE call in flight (or stays at a fixed cap). That first call measures the latency of a
call that did not queue (the baseline); on its success the limit jumps to an initial window of
``DEFAULT_INITIAL_WINDOW`` (16; TCP's initial window is 10), fewer when that many calls served one
after another would pass half the timeout. Then it grows: it doubles per window of
successes while latency stays flat ("slow start": a window is ``limit`` successes, one round
trip), and after the first congestion signal it adds one per flat window (at least 4 successes). Congestion signals halve it (once per epoch): a 429, a call that timed
out, and latency that grows with the number in flight (a window's median latency above
``spike_factor`` x the baseline, the lowest recent window median). Between ``flat_factor`` and
``spike_factor`` it holds. Knowing the call timeout, it also keeps headroom: it does not grow
when the slowest call, scaled by the growth, would pass half the timeout, and halves when a
call took more than 60% of it. A server that processes one request at a time answers 2 calls in
flight with twice the latency of 1, so the limit settles at 1-2 and no call waits in the
server's queue for long: it cannot time out because of the workbench's own queueing. The
limit never goes below ``min_limit`` (1).

``with_retries`` is the only place that retries: exponential backoff with jitter on 429, 5xx,
timeouts, connection errors and unparseable output, honouring ``Retry-After``. Anything else
(401, 404, a 400 the caller did not handle, a reply cut off at ``max_tokens``) fails at once.
After the last attempt it raises ``JudgeError``.
"""
from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import statistics
import time
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, TypeVar

from workbench.judges.base import JudgeError

if TYPE_CHECKING:
    import openai
else:
    from workbench.judges.lazy_openai import openai  # imported on first use (a cached run never needs it)
from workbench.judges.parsing import ParseError, TruncatedReply

T = TypeVar("T")
log = logging.getLogger(__name__)

DEFAULT_INITIAL_LIMIT = 1  # capacity unknown: start low, grow while latency stays flat
DEFAULT_INITIAL_WINDOW = 16  # the limit after the first window of successes (like TCP's initial window), headroom permitting
NEAR_TIMEOUT = 0.6  # a success slower than this share of the timeout is a congestion signal
GROW_HEADROOM = 0.5  # grow only if the slowest call, scaled by the growth, stays under this share
BASELINE_DRIFT = 1.1  # the baseline (lowest window median) may rise 10% per window, so one lucky window cannot pin it


class AdaptiveLimiter:
    """Async limit on calls in flight that adapts to throttling and latency.

    Args:
        initial: starting limit (1: the capacity is unknown).
        initial_window: the limit after the first window of successes (the first call, when
            ``initial`` is 1), when larger than the doubled limit; capped so that this many calls,
            were the server to serve them one after another at the first window's slowest
            latency, stay within ``GROW_HEADROOM`` x timeout. ``2`` (or less) is plain doubling.
        fixed: a fixed cap; when given the limit never changes.
        min_limit / max_limit: bounds of the adaptive limit.
        window: successes per adjustment window; ``None`` = the current limit (one adjustment
            per round trip; at least 4 successes once slow start has ended).
        spike_factor: window median above ``spike_factor * baseline`` halves the limit.
        flat_factor: window median at or below ``flat_factor * baseline`` grows the limit
            (doubling until the first decrease, then by one).
        baseline_alpha: unused; kept so old callers still construct.
        timeout: the per-call timeout, when known. Headroom rules keep calls well inside it: a
            success slower than ``NEAR_TIMEOUT`` x timeout halves the limit (the next one might
            time out), and the limit grows only while the window's slowest call, scaled by the
            growth, stays under ``GROW_HEADROOM`` x timeout (on a server that queues, latency
            grows in proportion to the calls in flight).

    The baseline is the lowest window median seen, allowed to rise by ``BASELINE_DRIFT`` per
    window (so it follows a server that got slower for good). ``history`` records every change as
    ``(reason, new_limit)``; reasons are ``flat``, ``latency``, ``near timeout``, ``throttled`` and
    ``timeout``.
    """

    def __init__(
        self,
        initial: int = DEFAULT_INITIAL_LIMIT,
        *,
        initial_window: int = DEFAULT_INITIAL_WINDOW,
        fixed: int | None = None,
        min_limit: int = 1,
        max_limit: int = 1024,
        window: int | None = None,
        spike_factor: float = 1.8,
        flat_factor: float = 1.3,
        baseline_alpha: float = 0.2,
        timeout: float | None = None,
    ) -> None:
        if fixed is not None and fixed < 1:
            raise ValueError(f"fixed concurrency must be >= 1, got {fixed}")
        self.fixed = fixed is not None
        self.min_limit = max(1, min_limit)
        self.max_limit = max(self.min_limit, max_limit)
        self.limit = fixed if fixed is not None else min(max(initial, self.min_limit), self.max_limit)
        self.initial_window = initial_window
        self.window = window
        self.spike_factor = spike_factor
        self.flat_factor = flat_factor
        self.baseline_alpha = baseline_alpha
        self.timeout = timeout
        self.baseline: float | None = None
        self.slow_start = True  # doubling until the first congestion signal
        self.in_flight = 0
        self.peak_in_flight = 0
        self.epoch = 0  # bumped on every decrease; stale throttles from older epochs are ignored
        self.history: list[tuple[str, int]] = []
        self._samples: list[float] = []
        self._waiters: deque[asyncio.Future] = deque()

    # -- admission ---------------------------------------------------------------------------
    async def acquire(self) -> int:
        """Wait for a free slot; returns the epoch at admission (pass it to ``on_*``)."""
        while self.in_flight >= self.limit:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut in self._waiters:
                    self._waiters.remove(fut)
                elif fut.done() and not fut.cancelled():
                    self._wake()  # pass the wake-up on
                raise
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        return self.epoch

    def release(self) -> None:
        """Free a slot taken by ``acquire``."""
        self.in_flight = max(0, self.in_flight - 1)
        self._wake()

    def _wake(self) -> None:
        free = self.limit - self.in_flight
        while free > 0 and self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                free -= 1

    @asynccontextmanager
    async def slot(self):
        """``async with limiter.slot() as epoch:`` around one call."""
        epoch = await self.acquire()
        try:
            yield epoch
        finally:
            self.release()

    # -- feedback ----------------------------------------------------------------------------
    def _set(self, limit: int, reason: str) -> None:
        limit = min(max(limit, self.min_limit), self.max_limit)
        if limit != self.limit:
            if limit < self.limit:
                self.epoch += 1
                self.slow_start = False
            self.limit = limit
            self.history.append((reason, limit))
            self._wake()

    def on_throttle(self, epoch: int | None = None, reason: str = "throttled") -> None:
        """A congestion signal (429, or ``reason="timeout"``): halve the limit, once per epoch.

        Calls admitted before the last decrease are ignored (their signal is already acted on).
        """
        if self.fixed or (epoch is not None and epoch < self.epoch):
            return
        self._samples.clear()
        self.slow_start = False
        self._set(self.limit // 2, reason)

    def on_success(self, latency: float, epoch: int | None = None) -> None:
        """Record one successful call's latency (seconds); may adjust the limit at a window's end."""
        if self.fixed or latency < 0:
            return
        if epoch is not None and epoch < self.epoch:
            return  # measured under the old, higher limit
        if self.timeout and latency > NEAR_TIMEOUT * self.timeout and self.limit > self.min_limit:
            self._samples.clear()
            self._set(self.limit // 2, "near timeout")
            return
        self._samples.append(latency)
        # slow start: one window per round trip (``limit`` calls), so the limit doubles every round
        # trip; afterwards at least 4 samples per window
        window = self.window or (self.limit if self.slow_start else max(4, self.limit))
        if len(self._samples) < window:
            return
        median = statistics.median(self._samples)
        slowest = max(self._samples)
        self._samples.clear()
        if self.baseline is None:
            self.baseline = median
            self._grow(slowest, first=True)
            return
        if median > self.spike_factor * self.baseline:
            self._set(self.limit // 2, "latency")
        elif median <= self.flat_factor * self.baseline:
            self._grow(slowest)
        self.baseline = min(median, self.baseline * BASELINE_DRIFT)

    def _grow(self, slowest: float, first: bool = False) -> None:
        target = self.limit * 2 if self.slow_start else self.limit + 1
        if first and self.slow_start and self.initial_window > target:
            target = self.initial_window
            if self.timeout and slowest > 0:  # as many as fit the headroom, if that is more than doubling
                target = max(self.limit * 2, min(target, int(GROW_HEADROOM * self.timeout * self.limit / slowest)))
        if self.timeout and slowest * target / self.limit > GROW_HEADROOM * self.timeout:
            return  # no headroom: if the server queues, the slowest call would come near the timeout
        self._set(target, "flat")


class FirstCallGate:
    """Lets the first call to an endpoint go alone; the rest wait until it has an answer.

    ``open`` is set by the caller once the endpoint answered (anything that proves it is there
    and usable). If the first call ends without opening the gate (a timeout, say), the next
    waiter goes alone in its turn. ``closed_with`` set to an exception makes every waiter (and
    every later call) raise it. Safe across event loops (``run_sync`` starts one per call).
    """

    def __init__(self) -> None:
        self.open = False
        self.closed_with: BaseException | None = None
        self._probe: tuple[asyncio.AbstractEventLoop, asyncio.Future] | None = None

    async def enter(self) -> bool:
        """Wait for the gate; True when this call is the one that goes first (call ``leave`` after)."""
        loop = asyncio.get_running_loop()
        while True:
            if self.closed_with is not None:
                raise self.closed_with
            if self.open:
                return False
            if self._probe is None or self._probe[0] is not loop or self._probe[1].done():
                self._probe = (loop, loop.create_future())
                return True
            await asyncio.shield(self._probe[1])

    async def wait_answered(self, max_wait: float, *, poll: float = 0.02) -> None:
        """Wait (at most ``max_wait`` s) until the endpoint answered or was found unusable.

        For a second client of the same endpoint (the embedder beside the judge): its first
        request waits for the judge's, so a wrong URL or key is reported once, by the judge.
        Raises ``closed_with`` when the endpoint was found unusable.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait
        while not self.open and loop.time() < deadline:
            if self.closed_with is not None:
                raise self.closed_with
            probe = self._probe
            if probe is not None and probe[0] is loop and not probe[1].done():
                try:
                    await asyncio.wait_for(asyncio.shield(probe[1]), max(0.0, deadline - loop.time()))
                except TimeoutError:
                    return
            else:
                await asyncio.sleep(poll)
        if self.closed_with is not None:
            raise self.closed_with

    def leave(self) -> None:
        """The first call finished (answered or not): wake the waiters."""
        probe, self._probe = self._probe, None
        if probe is not None and not probe[1].done():
            probe[1].set_result(None)


# -- retries -----------------------------------------------------------------------------------
def retry_after_seconds(exc: BaseException) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` (number or HTTP date) on an API error."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(raw) if raw else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def is_timeout(exc: BaseException) -> bool:
    """A call that did not answer within its timeout."""
    return isinstance(exc, (openai.APITimeoutError, asyncio.TimeoutError))


def classify(exc: BaseException) -> tuple[bool, bool]:
    """``(retryable, throttled)`` for an exception from one attempt.

    ``throttled`` is a congestion signal: a 429 or a timeout. A reply cut off at ``max_tokens``
    (``TruncatedReply``) is not retried: the same request would be cut off again.
    """
    if isinstance(exc, openai.RateLimitError):
        return True, True
    if is_timeout(exc):
        return True, True
    if isinstance(exc, TruncatedReply):
        return False, False
    if isinstance(exc, (openai.APIConnectionError, ParseError)):
        return True, False
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return status == 408 or status == 409 or status >= 500, status == 429
    return False, False


def describe(exc: BaseException) -> str:
    """Short one-line description of an attempt's failure (no request body, no headers)."""
    status = getattr(exc, "status_code", None)
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}{f' {status}' if status else ''}: {text}"


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    what: str,
    max_retries: int,
    limiter: AdaptiveLimiter | None = None,
    base_delay: float = 0.5,
    max_delay: float = 20.0,
    max_retry_after: float = 120.0,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    on_failure: Callable[[BaseException], None] | None = None,
) -> T:
    """Run ``attempt()`` up to ``max_retries + 1`` times inside a limiter slot.

    Backoff before retry ``i`` (0-based) is ``d/2 + U(0, d/2)`` with ``d = min(max_delay,
    base_delay * 2**i)``; a ``Retry-After`` header replaces it (capped at ``max_retry_after``).
    A 429 or a timeout also halves the limiter. Non-retryable API errors, a truncated reply and
    the last failure raise ``JudgeError`` naming ``what`` and the cause; other exceptions (bugs,
    and ``JudgeError`` raised by ``attempt`` itself) propagate unchanged. ``on_failure(exc)`` is
    called for every failed attempt that is a judge failure (counting timeouts, for instance).
    """
    rng = rng or random.Random()
    last: BaseException | None = None
    for i in range(max_retries + 1):
        epoch = await limiter.acquire() if limiter else None
        started = time.monotonic()
        try:
            try:
                result = await attempt()
            finally:
                if limiter:
                    limiter.release()
        except Exception as exc:  # noqa: BLE001 - classified below
            retryable, throttled = classify(exc)
            if not retryable and not isinstance(exc, (openai.APIError, ParseError)):
                raise
            if on_failure is not None:
                on_failure(exc)
            if limiter and throttled:
                limiter.on_throttle(epoch, "timeout" if is_timeout(exc) else "throttled")
            elif limiter and isinstance(exc, ParseError):
                limiter.on_success(time.monotonic() - started, epoch)
            last = exc
            if not retryable:
                raise JudgeError(f"{what}: {describe(exc)}") from exc
            if i == max_retries:
                break
            delay = retry_after_seconds(exc)
            if delay is not None:
                delay = min(delay, max_retry_after)
            else:
                cap = min(max_delay, base_delay * 2**i)
                delay = cap / 2 + rng.uniform(0, cap / 2)
            log.debug("%s: attempt %d failed (%s); retrying in %.2fs", what, i + 1, describe(exc), delay)
            await sleep(delay)
            continue
        if limiter:
            limiter.on_success(time.monotonic() - started, epoch)
        return result
    raise JudgeError(f"{what}: failed after {max_retries + 1} attempt(s); last error "
                     f"{describe(last) if last is not None else 'none'}") from last
