"""Request helpers shared by the routes: the caller's organization, the runtime, JSON replies.

The request being served lives in a context variable, set by the auth middleware. Route
modules are shared by every copy of the app in a process (the local stack serves requests
on threads), so reading the request through a module-level router would mix them up.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from cairn.config import Settings
from cairn.domain.runs import Run
from cairn.errors import UnauthorizedError
from cairn.run.runtime import Runtime

_request: ContextVar[tuple[APIGatewayProxyEventV2, str | None]] = ContextVar("cairn_request")
# A route's streamed body, handed from the route to whoever sends the response (app.respond):
# the resolver only carries whole bodies.
_stream: ContextVar[Iterator[bytes] | None] = ContextVar("cairn_stream", default=None)
SSE = "text/event-stream; charset=utf-8"


def bind(event: APIGatewayProxyEventV2, organization_id: str | None) -> None:
    _request.set((event, organization_id))


def current() -> APIGatewayProxyEventV2:
    return _request.get()[0]


def bound_org() -> str | None:
    """The request's organization once its key was checked (None before, or keyless)."""
    found = _request.get(None)
    return found[1] if found else None


def org_id() -> str:
    org = _request.get()[1]
    if org is None:
        raise UnauthorizedError("Unauthorized")
    return org


# The process's runtime and settings, as assembly makes them (assembly/app.py provides
# them when it builds the app: the routes, below assembly, never build one).
class _Provided:
    runtime: Callable[[], Runtime]
    settings: Callable[[], Settings]


def provide(runtime: Callable[[], Runtime], settings: Callable[[], Settings]) -> None:
    _Provided.runtime, _Provided.settings = runtime, settings


def rt() -> Runtime:
    return _Provided.runtime()


def settings() -> Settings:
    """The runtime's settings, or the environment's when none is built yet (a request that
    needs no database, such as a browser's preflight, builds none)."""
    return _Provided.settings()


# Letta's statuses for a provider failure: auth 401, rate limit 429, timeout 504,
# anything else 502; the body is {"error": {...}}, not {"detail": ...}.
LLM_ERROR_STATUS = {"auth": 401, "rate_limit": 429, "timeout": 504}


def llm_error_reply(kind: str, message: str, **extra: Any) -> Response[Any]:
    body = {"error": {"type": kind, "message": message, "detail": message, **extra}}
    return json_reply(LLM_ERROR_STATUS.get(kind, 502), body)


def run_error_reply(run: Run) -> Response[Any]:
    """A run the model's call failed (stop reason `llm_api_error`): its error, by kind."""
    error = run.error or {}
    kind = str(error.get("type") or "llm_error")
    message = str(error.get("message") or "the model provider failed")
    return llm_error_reply(kind, message, run_id=run.id)


# What a page of messages holds at most, serialised: Lambda answers at most 6 MB (API
# Gateway's 502 past it), and images make messages large. A longer page is cut short (at
# least one item); the client's next cursor goes on from where it stopped.
PAGE_BYTES = 5_000_000


def page_reply(items: list[dict[str, Any]], *, keep_end: bool = False) -> Response[Any]:
    """A 200 with the longest run of `items` from their start (or, `keep_end`, their end: a
    newest-first page shown oldest first) whose JSON stays within PAGE_BYTES. Each item is
    serialised once: its text both measures it and is the body (the page was serialised
    twice, once to measure and once to send)."""
    ordered = list(reversed(items)) if keep_end else items
    kept: list[str] = []
    size = 2
    for item in ordered:
        text = json.dumps(item)
        size += len(text) + 2
        if kept and size > PAGE_BYTES:
            break
        kept.append(text)
    if keep_end:
        kept.reverse()
    body = "[" + ", ".join(kept) + "]"  # as json.dumps writes a list
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=body)


def json_reply(status: int, payload: Any) -> Response[Any]:
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=json.dumps(payload)
    )


def stream_reply(frames: Iterable[bytes]) -> Response[Any]:
    """A 200 SSE response whose body is sent frame by frame as `frames` makes them, where
    the function streams (functions/stream), and whole where it cannot (API Gateway's
    HTTP API in front of functions/api)."""
    _stream.set(iter(frames))
    headers = {"Cache-Control": "no-cache"}
    return Response(status_code=200, content_type=SSE, body="", headers=headers)


def take_stream() -> Iterator[bytes] | None:
    """The streamed body the route just left, if any (once)."""
    frames = _stream.get()
    _stream.set(None)
    return frames


def header(name: str) -> str | None:
    """A request header, by its name in any case."""
    wanted = name.lower()
    return next((v for k, v in (current().headers or {}).items() if k.lower() == wanted), None)


def base_url() -> str:
    """Where clients reach this API: CAIRN_PUBLIC_URL when the operator set it, else the
    host the request came to (API Gateway's or the function URL's domain, set by AWS; the
    local stack's address)."""
    if configured := rt().settings.public_url:
        return configured.rstrip("/")
    host = header("host") or current().request_context.domain_name
    local = host.split(":")[0] in ("127.0.0.1", "localhost", "[::1]")
    scheme = header("x-forwarded-proto") or ("http" if local else "https")
    return f"{scheme}://{host}"


def sdk_1x() -> bool:
    """The 1.x SDKs announce themselves; Letta then leaves relationships out unless asked."""
    headers = current().headers or {}
    lowered = {k.lower(): v for k, v in headers.items()}
    return "x-stainless-package-version" in lowered or lowered.get("user-agent", "").startswith(
        "letta-client/"
    )
