"""GET /v1/health/ — unauthenticated, as in Letta."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn import __version__

router = APIGatewayHttpRouter()


@router.get("/health/")
def health() -> dict[str, str]:
    return {"version": __version__, "status": "ok"}
