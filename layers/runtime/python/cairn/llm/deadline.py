"""A time by which a model call must have answered, set by whoever waits on it.

A sync send waits inside API Gateway's 30 s; a queued step inside its function's timeout.
Without a deadline a model call may take `CAIRN_LLM_TIMEOUT_SECONDS` on each of the SDK's
retries, far past both. Under a deadline each call gets the time left as its timeout and no
SDK retries (their backoff would not fit), and running out raises `DeadlineReached`: the
caller hands the step to the queue instead of failing the run.
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


class DeadlineReached(LLMError):
    """The caller's time ran out before the model answered: not the provider's fault."""

    def __init__(self, message: str = "the time for this step's model call ran out") -> None:
        super().__init__("timeout", message)


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
    """The SDK's per-request options under the current deadline (none without one)."""
    at = _deadline.get()
    if at is None:
        return {}
    left = at - time.monotonic()
    if left < MIN_CALL_SECONDS:
        raise DeadlineReached()
    return {"timeout": left, "max_retries": 0}


def seconds_left() -> float | None:
    """Time left before the current deadline (None without one)."""
    at = _deadline.get()
    return None if at is None else at - time.monotonic()


def passed() -> bool:
    at = _deadline.get()
    return at is not None and time.monotonic() >= at - MIN_CALL_SECONDS


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
        except DeadlineReached:
            raise
        except LLMError as err:
            left = seconds_left()
            if left is None or not err.transient or attempt >= retries:
                raise
            pause = min(8.0, 0.5 * 2**attempt) * random.uniform(0.75, 1.25)
            if left - pause < MIN_CALL_SECONDS:
                raise DeadlineReached(f"no time left to retry the model's error: {err}") from err
            time.sleep(pause)
            attempt += 1
