"""Request helpers shared by the routes: the caller's organization, the runtime, JSON replies.

The request being served lives in a context variable, set by the auth middleware. Route
modules are shared by every copy of the app in a process (the local stack serves requests
on threads), so reading the request through a module-level router would mix them up.
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from cairn.errors import UnauthorizedError
from cairn.orchestration.runtime import Runtime, runtime

_request: ContextVar[tuple[APIGatewayProxyEventV2, str | None]] = ContextVar("cairn_request")


def bind(event: APIGatewayProxyEventV2, organization_id: str | None) -> None:
    _request.set((event, organization_id))


def current() -> APIGatewayProxyEventV2:
    return _request.get()[0]


def org_id() -> str:
    org = _request.get()[1]
    if org is None:
        raise UnauthorizedError("Unauthorized")
    return org


def rt() -> Runtime:
    return runtime()


# Letta's statuses for a provider failure (contract §0): auth 401, rate limit 429, timeout 504,
# anything else 502; the body is {"error": {...}}, not {"detail": ...}.
LLM_ERROR_STATUS = {"auth": 401, "rate_limit": 429, "timeout": 504}


def llm_error_reply(kind: str, message: str, **extra: Any) -> Response[Any]:
    body = {"error": {"type": kind, "message": message, "detail": message, **extra}}
    return json_reply(LLM_ERROR_STATUS.get(kind, 502), body)


def json_reply(status: int, payload: Any) -> Response[Any]:
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=json.dumps(payload)
    )


def sse_reply(result: dict[str, Any]) -> Response[Any]:
    """A LettaResponse as one SSE body (its messages, stop reason, usage, then [DONE]):
    API Gateway HTTP APIs do not stream responses."""
    return sse_events([*result["messages"], result["stop_reason"], result["usage"]], done=True)


def sse_events(events: list[dict[str, Any]], *, done: bool) -> Response[Any]:
    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
    if done:
        text += "data: [DONE]\n\n"
    return Response(status_code=200, content_type="text/event-stream; charset=utf-8", body=text)


def sdk_1x() -> bool:
    """The 1.x SDKs announce themselves; Letta then leaves relationships out unless asked."""
    headers = current().headers or {}
    lowered = {k.lower(): v for k, v in headers.items()}
    return "x-stainless-package-version" in lowered or lowered.get("user-agent", "").startswith(
        "letta-client/"
    )
