"""The HTTP API: a Powertools resolver for API Gateway HTTP APIs (payload v2).

Letta's contract: every error body is `{"detail": ...}`; see `shared/api/letta-api.md` §0.
"""

from __future__ import annotations

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError as RouteNotFound

from cairn.api.routes import health
from cairn.errors import CairnError


def _detail(status: int, detail: object) -> Response[dict]:
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body={"detail": detail}
    )


def build_app() -> APIGatewayHttpResolver:
    app = APIGatewayHttpResolver(enable_validation=True)
    app.include_router(health.router, prefix="/v1")

    @app.not_found
    def not_found(_: RouteNotFound) -> Response[dict]:
        return _detail(404, "Not Found")

    @app.exception_handler(CairnError)
    def cairn_error(exc: CairnError) -> Response[dict]:
        return _detail(exc.status_code, str(exc))

    return app
