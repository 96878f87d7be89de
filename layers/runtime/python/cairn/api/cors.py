"""CORS for browser clients: the operator's allowed origins (CAIRN_CORS_ORIGINS, none by
default). A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is
answered here, before any key is asked for: the browser sends none with it. Other answers to
an allowed origin carry `Access-Control-Allow-Origin` for it."""

from __future__ import annotations

from typing import Any

ALLOWED_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
# What browser clients of Letta send besides the key (the SDKs' own headers included).
ALLOWED_HEADERS = (
    "authorization, content-type, x-project-id, user-id, x-letta-source, "
    "x-stainless-package-version, x-experimental-message-async"
)
EXPOSED = "x-upload-result, retry-after"
MAX_AGE_SECONDS = "600"


def origins(spec: str) -> frozenset[str]:
    return frozenset(o.strip().rstrip("/") for o in spec.split(",") if o.strip())


def allowed(origin: str | None, spec: str) -> bool:
    return bool(origin) and origin.rstrip("/") in origins(spec)  # type: ignore[union-attr]


def preflight(event: dict[str, Any], spec: str) -> dict[str, Any] | None:
    """The answer to a CORS preflight (204 for an allowed origin, 403 otherwise), or None
    when the request is not one."""
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    method = (event.get("requestContext") or {}).get("http", {}).get("method", "")
    if (
        method != "OPTIONS"
        or "origin" not in headers
        or ("access-control-request-method" not in headers)
    ):
        return None
    origin = headers["origin"]
    if not allowed(origin, spec):
        return {
            "statusCode": 403,
            "headers": {"Content-Type": "application/json"},
            "body": '{"detail":"CORS: this origin is not allowed (CAIRN_CORS_ORIGINS)"}',
            "isBase64Encoded": False,
        }
    return {
        "statusCode": 204,
        "body": "",
        "isBase64Encoded": False,
        "headers": {
            "Access-Control-Allow-Origin": origin,
            "Vary": "Origin",
            "Access-Control-Allow-Methods": ALLOWED_METHODS,
            "Access-Control-Allow-Headers": ALLOWED_HEADERS,
            "Access-Control-Max-Age": MAX_AGE_SECONDS,
        },
    }


def add_headers(result: dict[str, Any], event: dict[str, Any], spec: str) -> None:
    """An allowed origin's answer says so (and that it varies by origin)."""
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    origin = headers.get("origin")
    if origin and allowed(origin, spec):
        out = result.setdefault("headers", {})
        out["Access-Control-Allow-Origin"] = origin
        out["Access-Control-Expose-Headers"] = EXPOSED
        out["Vary"] = "Origin"
