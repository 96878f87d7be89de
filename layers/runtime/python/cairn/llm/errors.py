"""The SDKs' exceptions turned into one `LLMError`, after the SDKs have done their retries."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cairn.llm.types import ErrorKind, LLMError


@contextmanager
def translate_errors() -> Iterator[None]:
    # Both SDKs share the same error class names; matching by name keeps either import lazy.
    try:
        yield
    except LLMError:
        raise
    except Exception as err:
        kind = _kind(err)
        if kind is None:
            raise
        status = getattr(err, "status_code", None)
        raise LLMError(kind, f"{type(err).__name__}: {err}", status=status) from err


def _kind(err: Exception) -> ErrorKind | None:
    names = {cls.__name__ for cls in type(err).__mro__}
    if "APITimeoutError" in names:
        return "timeout"
    if "APIConnectionError" in names:
        return "connection"
    if names & {"AuthenticationError", "PermissionDeniedError"}:
        return "auth"
    if "RateLimitError" in names:
        return "rate_limit"
    if "APIStatusError" in names:
        status = getattr(err, "status_code", 500) or 500
        return "server" if status >= 500 or status in (408, 409) else "bad_request"
    return None
