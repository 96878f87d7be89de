"""A time by which a model call must have answered, set by whoever waits on it.

A sync send waits inside API Gateway's 30 s; a queued step inside its function's timeout.
Without a deadline a model call may take `CAIRN_LLM_TIMEOUT_SECONDS` on each of the SDK's
retries, far past both. Under a deadline each call gets the time left as its timeout and no
SDK retries (their backoff would not fit), and running out raises `DeadlineReached`: the
caller hands the step to the queue instead of failing the run.

A model call also has a bound of its own (`bounded`: CAIRN_LLM_TIMEOUT_SECONDS for all the
attempts of one step's call): running out of that is the model's failure, `CallTimedOut`,
and fails the run wherever it runs, since another delivery would only wait as long again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from cairn.llm.types import LLMError

# Below this much time left a call is not worth starting (connect + first byte).
MIN_CALL_SECONDS = 0.2

_deadline: ContextVar[float | None] = ContextVar("cairn_llm_deadline", default=None)
# The model call's own bound: (when it ends, its length in seconds).
_bound: ContextVar[tuple[float, float] | None] = ContextVar("cairn_llm_bound", default=None)


class DeadlineReached(LLMError):
    """The caller's time ran out before the model answered: not the provider's fault."""

    def __init__(self, message: str = "the time for this step's model call ran out") -> None:
        super().__init__("timeout", message)


class CallTimedOut(LLMError):
    """The model took the call's whole bound (every attempt included): it has failed."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            "timeout",
            f"The model did not answer within {seconds:g} s (CAIRN_LLM_TIMEOUT_SECONDS, "
            "every attempt included)",
        )

    @property
    def transient(self) -> bool:
        return False  # the bound already held every retry it had room for


@contextmanager
def bounded(seconds: float) -> Iterator[None]:
    """The model calls made inside (with their retries) must answer within `seconds`."""
    token = _bound.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _bound.reset(token)


def ends_at() -> float | None:
    """When the current call must have answered (monotonic): the earlier of the caller's
    deadline and the call's own bound; None without either."""
    at, bound = _deadline.get(), _bound.get()
    ends = [t for t in (at, bound and bound[0]) if t is not None]
    return min(ends) if ends else None


def timed_out() -> LLMError | None:
    """The error for a call that ran out of its time: DeadlineReached when the caller's
    deadline is what ends it (the step can go to the queue), CallTimedOut when the call's
    own bound is; None when neither is set."""
    at, bound = _deadline.get(), _bound.get()
    if bound is not None and (at is None or bound[0] < at):
        return CallTimedOut(bound[1])
    return DeadlineReached() if at is not None else None


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Model calls made inside must answer within `seconds` from now, and never after a
    deadline already set around this one (the invocation's own end)."""
    at, outer = time.monotonic() + seconds, _deadline.get()
    token = _deadline.set(at if outer is None else min(at, outer))
    try:
        yield
    finally:
        _deadline.reset(token)


def request_options() -> dict[str, Any]:
    """The SDK's per-request options under the current deadline or bound (none without)."""
    left = seconds_left()
    if left is None:
        return {}
    if left < MIN_CALL_SECONDS:
        raise timed_out() or DeadlineReached()
    return {"timeout": left, "max_retries": 0}


def seconds_left() -> float | None:
    """Time left before the current deadline or bound, the earlier (None without one)."""
    ends = ends_at()
    return None if ends is None else ends - time.monotonic()


def passed() -> bool:
    """The caller's deadline passed (not the call's own bound)."""
    at = _deadline.get()
    return at is not None and time.monotonic() >= at - MIN_CALL_SECONDS


def expired() -> LLMError | None:
    """The error for a timeout seen now, if the deadline or the bound has passed."""
    ends = ends_at()
    if ends is None or time.monotonic() < ends - MIN_CALL_SECONDS:
        return None
    return timed_out()


T = TypeVar("T")


def retried(call: Callable[[], T], retries: int) -> T:
    """`call()`, with the retries the SDKs leave out under a deadline: a transient error
    (429, 5xx, timeout, lost connection) is tried again up to `retries` times
    (CAIRN_LLM_MAX_RETRIES) after an exponential, jittered pause, while the deadline leaves
    time for one; when it does not, DeadlineReached hands the step to the queue, which has
    the time. Without a deadline the SDKs retry themselves and this adds nothing."""
    attempt = 0
    while True:
        try:
            return call()
        except (DeadlineReached, CallTimedOut):
            raise
        except LLMError as err:
            left = seconds_left()
            if left is None or not err.transient or attempt >= retries:
                raise
            pause = min(8.0, 0.5 * 2**attempt) * random.uniform(0.75, 1.25)
            if left - pause < MIN_CALL_SECONDS:
                if isinstance(timed_out(), CallTimedOut):
                    raise  # the model's own error, with no time left in its bound to retry
                raise DeadlineReached(f"no time left to retry the model's error: {err}") from err
            time.sleep(pause)
            attempt += 1
