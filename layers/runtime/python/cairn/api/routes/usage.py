"""What an organization used (Cairn's own route: Letta 0.16.1 has none; docs/operations.md)."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http
from cairn.services import limits, usage

router = APIGatewayHttpRouter()


@router.get("/usage")
def get_usage(
    start_date: Annotated[date | None, Query(description="The first day (UTC), included")] = None,
    end_date: Annotated[date | None, Query(description="The last day (UTC), included")] = None,
    agent_id: Annotated[str | None, Query(max_length=100)] = None,
) -> Response[Any]:
    """Per day, agent and model: steps, model calls, tokens, tool calls, estimated cost (the
    last 30 days by default, at most 366)."""
    rt = http.rt()
    found = usage.report(
        rt.db,
        http.org_id(),
        start=start_date,
        end=end_date,
        agent_id=agent_id,
        overrides=rt.settings.prices,
    )
    return http.json_reply(200, found)


@router.get("/usage/limits")
def get_limits() -> Response[Any]:
    """The organization's budgets and limits (set by the operator) and this month's use."""
    return http.json_reply(200, limits.show(http.rt().db, http.org_id()))
