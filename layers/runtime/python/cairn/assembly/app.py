"""The HTTP API of this process: Letta's routes and every edge's, served with the runtime
assembly builds (functions/api and functions/stream use it)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from cairn.api import app, http
from cairn.assembly.build import current_settings, runtime
from cairn.assembly.edges import EDGES


def build_app() -> APIGatewayHttpResolver:
    http.provide(runtime, current_settings)
    return app.build_app(EDGES)
