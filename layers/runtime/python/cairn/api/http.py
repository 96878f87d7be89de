"""Request helpers shared by the routes: the caller's organization, queries, JSON replies.

The request being served lives in a context variable, set by the auth middleware. Route
modules are shared by every copy of the app in a process (the local stack serves requests
on threads), so reading the request through a module-level router would mix them up.
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from typing import Any
from urllib.parse import parse_qs

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from pydantic import BaseModel, ValidationError

from cairn.domain.ids import is_id
from cairn.errors import (
    InvalidArgumentError,
    NotFoundError,
    UnauthorizedError,
    UnprocessableError,
)
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


def queries() -> dict[str, list[str]]:
    # The raw query keeps repeated keys (`include=a&include=b`); API Gateway's map joins them.
    return parse_qs(current().raw_query_string or "", keep_blank_values=True)


def query(name: str, default: str | None = None) -> str | None:
    q = queries()
    values = q.get(name) or q.get(f"{name}[]")
    return values[-1] if values else default


def query_list(name: str) -> list[str]:
    q = queries()
    return [v for key in (name, f"{name}[]") for v in q.get(key, []) for v in v.split(",") if v]


def query_int(name: str, default: int, *, low: int = 1, high: int = 1000) -> int:
    raw = query(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise UnprocessableError(f"{name}: must be an integer, not {raw!r}") from None
    if not low <= value <= high:
        raise UnprocessableError(f"{name}: must be between {low} and {high}")
    return value


def query_bool(name: str, default: bool) -> bool:
    raw = query(name)
    return default if raw is None else raw.lower() in ("true", "1", "yes")


def body(model: type[BaseModel]) -> Any:
    raw = current().body
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        raise UnprocessableError("body: not valid JSON") from None
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise UnprocessableError(_errors(err)) from None


def _errors(err: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
        for e in err.errors(include_url=False)
    )


def check_id(prefix: str, value: str, *, what: str) -> str:
    """A path id of the wrong shape is 422 in Letta; runs use 400 (contract §0)."""
    if not is_id(value, prefix):
        if prefix == "run":
            raise InvalidArgumentError(f"INVALID_ARGUMENT: Invalid run ID format: {value}")
        raise UnprocessableError(
            f"{what}: expected an id like {prefix}-123e4567-e89b-42d3-8456-426614174000"
        )
    return value


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


def sdk_1x() -> bool:
    """The 1.x SDKs announce themselves; Letta then leaves relationships out unless asked."""
    headers = current().headers or {}
    lowered = {k.lower(): v for k, v in headers.items()}
    return "x-stainless-package-version" in lowered or lowered.get("user-agent", "").startswith(
        "letta-client/"
    )


def not_found(what: str) -> NotFoundError:
    return NotFoundError(what)
