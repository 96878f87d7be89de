"""The HTTP API: a Powertools resolver for API Gateway HTTP APIs (payload v2).

Letta's error bodies are `{"detail": ...}` (its OpenAPI document, `api/letta-0.16.1-openapi.json`).
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import psycopg
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError as RouteNotFound
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from cairn import tracing
from cairn.api import cors, http
from cairn.api.lazy_routes import LazyRoutesResolver
from cairn.api.openapi import with_letta_responses
from cairn.api.routes import SERVED, console
from cairn.domain.constants import MAX_REQUEST_BYTES, too_large
from cairn.errors import CairnError, LimitExceededError, PendingApprovalError, UnavailableError
from cairn.llm.types import LLMError
from cairn.run.edge import Edge
from cairn.services import tenants

logger = logging.getLogger(__name__)
PUBLIC_PATHS = frozenset({"/v1/health/", "/v1/health", "/openapi.json"})
CONSOLE = r"^/console(/[\w.-]*)?$"  # the console's own static files
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# Routes that take a form (an uploaded file) instead of JSON.
FORM_PATHS = frozenset({"/v1/agents/import"})
FORM_BODIES = ("multipart/form-data", "application/x-www-form-urlencoded")
UPLOAD_PATH = re.compile(r"^/v1/(folders|sources)/[^/]+/upload$")  # a file to a folder


# Deeper than any body Letta's API takes; far short of the interpreter's recursion limit.
MAX_JSON_DEPTH = 256


def nests_deeper(body: str, limit: int) -> bool:
    """Whether the JSON text opens more than `limit` arrays or objects inside each other
    (strings skipped); a body with fewer openers than that is not read through."""
    if body.count("[") + body.count("{") <= limit:
        return False
    depth, in_string, escaped = 0, False, False
    for ch in body:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


# What PostgreSQL rolls back whole to let a concurrent transaction through (SQLSTATE class 40
# but 40003, whose commit is unknown): psycopg makes each an OperationalError.
_ROLLED_BACK: list[type[Exception]] = [
    psycopg.errors.DeadlockDetected,
    psycopg.errors.SerializationFailure,
    psycopg.errors.TransactionRollback,
]


def _detail(status: int, detail: object, headers: dict[str, str] | None = None) -> Response[Any]:
    if status == 422 and isinstance(detail, str):
        # Letta's 422 is FastAPI's: a list of errors, each naming where (the schema served
        # at /openapi.json says so too); a rule the body breaks is an error of the body.
        detail = [{"type": "value_error", "loc": ["body"], "msg": detail}]
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body={"detail": detail},
        headers=headers,
    )


def _limited(exc: LimitExceededError) -> Response[Any]:
    http.rt().engine.meter.throttled(exc.organization_id, exc.limit)
    return _detail(429, str(exc), headers={"Retry-After": str(exc.retry_after_seconds)})


def route_modules(edges: tuple[Edge, ...] = ()) -> dict[str, tuple[str, ...]]:
    """Every route module served under /v1, Letta's and each edge's, with its rules."""
    modules = {f"cairn.api.routes.{name}": rules for name, rules in SERVED.items()}
    for edge in edges:
        modules |= edge.routes
    return modules


# Complexity: each branch is one of the app's nested middleware or error handlers, registered
# on this one app; they read in one place as the request's path through it.
def build_app(edges: tuple[Edge, ...] = ()) -> LazyRoutesResolver:  # noqa: C901
    """Letta's routes and the console, and each edge's routes (assembly/app.py passes them):
    each route module is imported when a request first reaches it (`app.load()` loads all)."""
    app = LazyRoutesResolver(route_modules(edges), prefix="/v1")
    keyless = re.compile("|".join([CONSOLE, *(p for e in edges for p in e.keyless)]))
    app.include_router(console.router)

    def traced(app: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
        # The request's span (HTTP server conventions), continuing a caller's `traceparent`.
        event = app.current_event
        route = app.context.get("_route")
        template = route.openapi_path if route is not None else event.path
        headers = {k.lower(): v for k, v in (event.headers or {}).items()}
        method = event.http_method.upper()
        with tracing.span(
            f"{method} {template}",
            kind=tracing.SERVER,
            parent=headers.get("traceparent"),
            attributes={"http.request.method": method, "http.route": template},
            errors=False,  # a 4xx is the caller's: only a 5xx marks the span
        ) as span:
            try:
                response = next_middleware(app)
            except Exception as exc:  # answered by the handlers below
                span.set_attribute("error.type", type(exc).__name__)
                client = isinstance(exc, RequestValidationError) or (
                    isinstance(exc, CairnError) and exc.status_code < 500
                )
                if not client:
                    tracing.failed(span, type(exc).__name__)
                raise
            span.set_attribute("http.response.status_code", response.status_code)
            if org := http.bound_org():
                span.set_attribute("cairn.organization_id", org)
            if response.status_code >= 500:
                tracing.failed(span, str(response.status_code))
            return response

    def limit_body(app: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
        # Before anything parses it: Lambda refuses larger synchronous payloads anyway.
        body = app.current_event.get("body") or ""
        size = len(body) * 3 // 4 if app.current_event.get("isBase64Encoded") else len(body)
        if size > MAX_REQUEST_BYTES:
            return _detail(413, too_large(size))
        if not app.current_event.get("isBase64Encoded") and nests_deeper(body, MAX_JSON_DEPTH):
            # Refused before the JSON decoder recurses that deep: a garbage collection at
            # the bottom of such a recursion runs other objects' finalisers with the
            # interpreter's recursion budget spent.
            return _detail(422, "The JSON body nests too deeply")
        return next_middleware(app)

    def authenticate(app: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
        path = app.current_event.path
        # The console's own files (static: the page asks for a key and sends it with its
        # calls), and an edge's keyless paths (each proves its caller itself: a webhook's
        # secret token, an OAuth sign-in's unguessable id). Whole-path shapes, so no other
        # route is reached by a path that starts like these.
        if path in PUBLIC_PATHS or keyless.match(path):
            http.bind(app.current_event, None)
            return next_middleware(app)
        headers = {k.lower(): v for k, v in (app.current_event.headers or {}).items()}
        scheme, _, token = headers.get("authorization", "").partition(" ")
        try:
            org = _organization_of(token.strip()) if scheme.lower() == "bearer" and token else None
        except LimitExceededError as exc:
            return _limited(exc)
        if org is None:
            return _detail(401, "Unauthorized")
        http.bind(app.current_event, org)
        return next_middleware(app)

    app.use([traced, limit_body, authenticate])

    described: list[str] = []  # built on the first request, then kept

    @app.get("/openapi.json")
    def openapi() -> Response[Any]:
        if not described:
            generated = json.loads(app.get_openapi_json_schema(title="Cairn", version="0.1.0"))
            described.append(json.dumps(with_letta_responses(generated)))
        return Response(
            status_code=200, content_type=content_types.APPLICATION_JSON, body=described[0]
        )

    @app.not_found
    def not_found(_: RouteNotFound) -> Response[Any]:
        event = app.current_event
        path = event.path
        if not path.endswith("/") and _is_route(app, event.http_method, path + "/"):
            # FastAPI's redirect, which the SDKs expect for collection routes.
            query = event.raw_query_string
            location = path + "/" + (f"?{query}" if query else "")
            return Response(status_code=307, headers={"Location": location}, body="")
        allowed = [m for m in METHODS if _is_route(app, m, path)]
        if allowed:  # the path exists, the method does not: FastAPI's 405
            return _detail(405, "Method Not Allowed", headers={"Allow": ", ".join(allowed)})
        return _detail(404, "Not Found")

    @app.exception_handler(PendingApprovalError)
    def pending(exc: PendingApprovalError) -> Response[Any]:
        return _detail(409, exc.detail())

    @app.exception_handler(UnavailableError)
    def unavailable(exc: UnavailableError) -> Response[Any]:
        return _detail(503, str(exc), headers={"Retry-After": str(exc.retry_after_seconds)})

    @app.exception_handler(LimitExceededError)
    def limited(exc: LimitExceededError) -> Response[Any]:
        return _limited(exc)

    @app.exception_handler(CairnError)
    def cairn_error(exc: CairnError) -> Response[Any]:
        return _detail(exc.status_code, str(exc))

    @app.exception_handler(RequestValidationError)
    def invalid(exc: RequestValidationError) -> Response[Any]:
        # FastAPI's shape, as Letta answers: each error names its field in `loc`. A
        # validator's own exception in `ctx` becomes its message.
        errors = [
            {k: v for k, v in e.items() if k in ("type", "loc", "msg")}
            # The offending value, unless large: an over-long message is not sent back.
            | ({"input": e.get("input")} if len(str(e.get("input"))) <= 1000 else {})
            | ({"ctx": {k: str(v) for k, v in e["ctx"].items()}} if e.get("ctx") else {})
            for e in exc.errors()
        ]
        return _detail(422, json.loads(json.dumps(errors, default=str)))

    @app.exception_handler(psycopg.OperationalError)
    def database_lost(exc: psycopg.OperationalError) -> Response[Any]:
        # The database went away under the request (a restart, an Aurora failover or
        # reboot; the pool's own errors are OperationalErrors too): the request's fault no
        # more than an unknown error's. What it had committed stays committed: a send's run
        # goes on once the database is back (run/driving/sending.py), and GET /v1/runs/ shows it.
        logger.warning("the database was lost during a request: %s", type(exc).__name__)
        return _detail(
            503,
            "The database connection was lost during this request; try again in a few "
            "seconds (a message sent may have started its run: list the agent's runs)",
            headers={"Retry-After": str(UnavailableError.retry_after_seconds)},
        )

    @app.exception_handler(_ROLLED_BACK)
    def rolled_back(exc: psycopg.OperationalError) -> Response[Any]:
        # A deadlock or a serialization failure: PostgreSQL rolled the request's transaction
        # back to let a concurrent one through. Nothing of it was written and the database is
        # there: the same request again goes through (Letta's clients retry a 409 on their
        # own). Before, it read as a lost connection.
        logger.warning("a request's transaction was rolled back: %s", type(exc).__name__)
        return _detail(
            409,
            "CONFLICT: the request met a concurrent change of the same data and was rolled "
            "back, nothing of it written; send it again",
            headers={"Retry-After": "1"},
        )

    @app.exception_handler(psycopg.errors.IntegrityError)
    def integrity(exc: psycopg.errors.IntegrityError) -> Response[Any]:
        return _detail(409, f"CONFLICT: {exc.diag.message_primary or exc}")

    @app.exception_handler(psycopg.errors.DataError)
    def unstorable(exc: psycopg.errors.DataError) -> Response[Any]:
        # Text PostgreSQL cannot hold (NUL characters), numbers out of range: the request's
        # fault, and its transaction rolled back with nothing written.
        return _detail(422, f"Invalid value: {exc.diag.message_primary or exc}")

    @app.exception_handler(UnicodeDecodeError)
    def undecodable(exc: UnicodeDecodeError) -> Response[Any]:
        return _detail(400, f"The request body is not valid UTF-8 (byte {exc.start})")

    @app.exception_handler(UnicodeEncodeError)
    def unencodable(exc: UnicodeEncodeError) -> Response[Any]:
        # A lone surrogate (`\ud800` in JSON) parses to a str that UTF-8 cannot encode.
        return _detail(422, "Invalid value: text must be valid Unicode (no lone surrogates)")

    # Powertools' validation parses the body before any middleware of ours runs: what
    # Python's JSON parser cannot take is the request's fault, answered here.
    @app.exception_handler(RecursionError)
    def too_deep(exc: RecursionError) -> Response[Any]:
        return _detail(422, "The JSON body nests too deeply")

    @app.exception_handler(ValueError)
    def unparsable(exc: ValueError) -> Response[Any]:
        if "integer string conversion" in str(exc):
            return _detail(422, "A number in the JSON body has too many digits")
        return _unknown(exc)

    @app.exception_handler(LLMError)
    def llm_error(exc: LLMError) -> Response[Any]:
        return http.llm_error_reply(exc.kind, str(exc))

    app.exception_handler(Exception)(_unknown)

    return app


def _unknown(exc: Exception) -> Response[Any]:
    logger.exception("unhandled error", exc_info=exc)
    return _detail(500, "An unknown error occurred")


class Streaming(NamedTuple):
    """A response as a streaming function sends it: the head (status, headers, cookies)
    first, then the body piece by piece; `streamed` when the route streams its body."""

    head: dict[str, Any]
    body: Iterator[bytes]
    streamed: bool


def _resolved(
    app: APIGatewayHttpResolver, event: dict[str, Any], context: Any
) -> tuple[dict[str, Any], Iterator[bytes] | None]:
    """The resolver's result, and the streamed body a route left (if any)."""
    http.take_stream()  # nothing left from an earlier request served on this thread
    # Only a browser's request (it names its Origin) reads the allowed origins.
    has_origin = any(k.lower() == "origin" for k in event.get("headers") or {})
    allowed = http.settings().cors_origins if has_origin else ""
    if (answer := cors.preflight(event, allowed)) is not None:
        return answer, None  # before the key: a browser's preflight carries none
    if (unreadable := _unreadable_body(event)) is not None:
        cors.add_headers(unreadable, event, allowed)
        return unreadable, None
    result = app.resolve(event, context)
    cors.add_headers(result, event, allowed)
    return result, http.take_stream()


def _unreadable_body(event: dict[str, Any]) -> dict[str, Any] | None:
    """415 for a body of a type the route does not take (a text/plain body reached the
    routes as a string and failed inside them with a 500). Checked before the resolver:
    Powertools validates a request before any middleware runs. No Content-Type is read as
    JSON, as FastAPI (Letta) reads it; Letta answers 422 where this says 415."""
    method = (event.get("requestContext") or {}).get("http", {}).get("method", "")
    if method not in ("POST", "PUT", "PATCH") or not event.get("body"):
        return None
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    media = headers.get("content-type", "").split(";")[0].strip().lower()
    if event.get("rawPath") in FORM_PATHS or UPLOAD_PATH.match(event.get("rawPath") or ""):
        if media in FORM_BODIES:
            return None
        wanted = "multipart/form-data"
    elif not media or media == "application/json" or media.endswith("+json"):
        return None
    else:
        wanted = "application/json"
    body = json.dumps({"detail": f"Content-Type `{media}`: this route takes {wanted}"})
    return {
        "statusCode": 415,
        "headers": {"Content-Type": "application/json"},
        "body": body,
        "isBase64Encoded": False,
    }


def respond(app: APIGatewayHttpResolver, event: dict[str, Any], context: Any) -> Streaming:
    """Resolve the request; a streaming route's body is read as it is sent."""
    result, frames = _resolved(app, event, context)
    head = {k: v for k, v in result.items() if k not in ("body", "isBase64Encoded")}
    if frames is not None:
        return Streaming(head, frames, True)
    payload = result.get("body") or ""
    data = base64.b64decode(payload) if result.get("isBase64Encoded") else payload.encode()
    return Streaming(head, iter((data,)), False)


def buffered(app: APIGatewayHttpResolver, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Resolve the request whole, as API Gateway's HTTP API takes responses: a streaming
    route's events are all read before the response leaves."""
    result, frames = _resolved(app, event, context)
    if frames is not None:
        result["body"], result["isBase64Encoded"] = b"".join(frames).decode(), False
    return result


def _organization_of(token: str) -> str | None:
    # Asked on every request, never cached: a revoked or rotated key must answer 401 on the
    # very next request in every process (one indexed read; bench/auth.py measures it).
    return tenants.organization_of(http.rt().db, token)


def _is_route(app: APIGatewayHttpResolver, method: str, path: str) -> bool:
    # Powertools keeps its compiled routes on private lists; read-only use, checked in tests.
    routes = [*getattr(app, "_static_routes", []), *getattr(app, "_dynamic_routes", [])]
    return any(r.method == method.upper() and r.rule.match(path) for r in routes)
