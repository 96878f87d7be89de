"""The SDKs' exceptions turned into one `LLMError`, after the SDKs have done their retries."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cairn import outbound
from cairn.llm import deadline, patience
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
        if kind == "timeout" and (ran_out := deadline.expired()) is not None:
            raise ran_out from err
        status = getattr(err, "status_code", None)
        detail = f"{type(err).__name__}: {err}"
        if kind == "timeout" and (why := patience.waited(err)) is not None:
            detail = f"{detail} ({why})"
        if kind == "connection" and (why := outbound.cut(err)) is not None:
            detail = f"{detail} ({why})"
        raise LLMError(kind, detail, status=status) from err


def _kind(err: Exception) -> ErrorKind | None:
    names = {cls.__name__ for cls in type(err).__mro__}
    if "JSONDecodeError" in names:  # a JSON content type over a body that is not
        return "server"
    # httpx's own errors reach us from a stream being read (the SDKs wrap them only
    # until the response starts).
    if names & {"APITimeoutError", "TimeoutException"}:
        return "timeout"
    if names & {"APIConnectionError", "TransportError"}:
        return "connection"
    if names & {"AuthenticationError", "PermissionDeniedError"}:
        return "auth"
    if "RateLimitError" in names:
        return "rate_limit"
    if "APIStatusError" in names:
        status = getattr(err, "status_code", 500) or 500
        return "server" if status >= 500 or status in (408, 409) else "bad_request"
    return None


def json_object(answer: object) -> dict[str, Any]:
    """What a client's `post(..., cast_to=object)` returned, checked to be a JSON object.

    Both clients take the SDK's answer as plain JSON (`parse` reads dicts): building the
    SDK's models only to dump them again cost ~0.5 ms a call. A server that answers with
    something else (a proxy's HTML page) gets the SDK's text back here."""
    if not isinstance(answer, dict):
        raise LLMError("server", "The model server's answer is not a JSON object")
    return answer
