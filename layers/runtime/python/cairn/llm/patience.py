"""How long a model call may keep its worker waiting: for the first byte, for each next
byte, and for the whole answer.

httpx's timeouts apply to each read on its own, so a server that sends a byte every few
seconds is never timed out, and one that sends nothing holds its worker for the whole
timeout of every attempt: a few tenants' hung models once held every step worker
(docs/tenancy.md). Every model call's HTTP goes through this transport:

- the answer's first byte within `first_byte` seconds (CAIRN_LLM_FIRST_BYTE_SECONDS); for
  an answer that is not streamed that is the time the model takes to write all of it;
- each next byte within `idle` seconds (CAIRN_LLM_IDLE_SECONDS);
- the last byte by the call's end (`llm.deadline.ends_at`: the call's own bound,
  CAIRN_LLM_TIMEOUT_SECONDS for all its attempts, or the caller's time if that ends first);
  a read started before the end waits at most the shorter of `idle` and the time left then.

Each ends the call with the stack's ReadTimeout, which the SDKs and `llm.errors` turn into
a timeout. Bedrock's calls go through botocore, which takes no transport: its read timeout
is the time left, per read (a known gap for a Bedrock answer that crawls).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator
from typing import Any

from cairn import outbound
from cairn.errors import noted
from cairn.llm import deadline


def transport(inner: Any, stack: str, first_byte: float, idle: float) -> Any:
    """`inner` (an httpx or httpx2 transport) with the waits above."""
    http = importlib.import_module(stack)

    class Paced(http.BaseTransport):  # type: ignore[misc,name-defined]
        def handle_request(self, request: Any) -> Any:
            ends = deadline.ends_at()
            waited = _wait_per_read(request, first_byte, ends)
            try:
                response = inner.handle_request(request)
            except http.ReadTimeout as err:
                raise _timeout(
                    http,
                    f"no answer from the model within {waited:g} s (CAIRN_LLM_FIRST_BYTE_SECONDS)",
                ) from err
            # The body's reads wait as long as this (httpcore reads the request's timeout
            # when the body starts to be read, after the headers came back).
            waited = _wait_per_read(request, idle, ends)
            response.stream = Ended(response.stream, ends, waited)
            return response

        def close(self) -> None:
            inner.close()

    class Ended(http.SyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, stream: Any, ends: float | None, idle: float) -> None:
            self._stream, self._ends, self._idle = stream, ends, idle

        def __iter__(self) -> Iterator[bytes]:
            chunks = iter(self._stream)
            while True:
                try:
                    chunk = next(chunks)
                except StopIteration:
                    return
                except http.ReadTimeout as err:
                    raise _timeout(
                        http,
                        f"the model's answer stopped for {self._idle:g} s (CAIRN_LLM_IDLE_SECONDS)",
                    ) from err
                if self._ends is not None and time.monotonic() > self._ends:
                    raise _timeout(
                        http,
                        "the model's answer had not ended by the call's end "
                        "(CAIRN_LLM_TIMEOUT_SECONDS)",
                    )
                yield chunk

        def close(self) -> None:
            self._stream.close()

    return Paced()


def _wait_per_read(request: Any, seconds: float, ends: float | None) -> float:
    """Each read of `request` waits at most `seconds`, never past `ends`, and never longer
    than the SDK's own timeout for it; how long that is."""
    timeouts = request.extensions.get("timeout", {})
    waits = [seconds, *([timeouts["read"]] if timeouts.get("read") is not None else [])]
    if ends is not None:
        waits.append(max(0.01, ends - time.monotonic()))
    request.extensions["timeout"] = {**timeouts, "read": min(waits)}
    return float(min(waits))


def _timeout(http: Any, why: str) -> Exception:
    """The stack's ReadTimeout, saying which wait ran out (`waited`: llm.errors reads it
    through the SDK's own timeout error, which keeps only "Request timed out.")."""
    err: Exception = http.ReadTimeout(why)
    err.waited = why  # type: ignore[attr-defined]
    return err


def waited(err: BaseException) -> str | None:
    """Which of these waits ended a call that failed with `err`, if one did."""
    return noted(err, "waited")


def http_client(
    stack: str, timeout: float, first_byte: float, idle: float, inner: Any | None = None
) -> Any:
    """A client of `stack` for an SDK: redirects followed as the SDKs' own clients do,
    every request through `transport` over `inner` (a guarded one, or the stack's own)."""
    http = importlib.import_module(stack)
    base = inner if inner is not None else outbound.pooled(stack)
    return http.Client(
        transport=transport(base, stack, first_byte, idle), timeout=timeout, follow_redirects=True
    )
