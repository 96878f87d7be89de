"""Scheduled messages to an agent (Cairn's own routes: Letta 0.16.1 has none)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http
from cairn.api.letta.times import iso
from cairn.api.params import After, AgentId, Limit
from cairn.domain.schedules import Schedule
from cairn.services import schedules
from cairn.services.requests import ScheduleCreate

router = APIGatewayHttpRouter()


def schedule_json(s: Schedule) -> dict[str, Any]:
    when = (
        {"type": "one-time", "run_at": iso(s.run_at)}
        if s.kind == "once"
        else {"type": "recurring", "cron": s.cron}
    )
    return {
        "id": s.id,
        "agent_id": s.agent_id,
        "messages": s.messages,
        "schedule": {**when, "timezone": s.timezone},
        "next_run_at": iso(s.next_run_at) if s.next_run_at else None,
        "last_run_at": iso(s.last_run_at) if s.last_run_at else None,
        "created_at": iso(s.created_at),
    }


@router.post("/agents/<agent_id>/schedules")
def create_schedule(agent_id: AgentId, req: Annotated[ScheduleCreate, Body()]) -> Response[Any]:
    made = schedules.create(http.rt(), http.org_id(), agent_id, req)
    return http.json_reply(200, schedule_json(made))


@router.get("/agents/<agent_id>/schedules")
def list_schedules(agent_id: AgentId, after: After = None, limit: Limit = 50) -> Response[Any]:
    found = schedules.list_of(http.rt(), http.org_id(), agent_id, after=after, limit=limit)
    return http.json_reply(200, [schedule_json(s) for s in found])


@router.get("/agents/<agent_id>/schedules/<schedule_id>")
def retrieve_schedule(agent_id: AgentId, schedule_id: str) -> Response[Any]:
    found = schedules.retrieve(http.rt(), http.org_id(), agent_id, schedule_id)
    return http.json_reply(200, schedule_json(found))


@router.delete("/agents/<agent_id>/schedules/<schedule_id>")
def delete_schedule(agent_id: AgentId, schedule_id: str) -> Response[Any]:
    schedules.delete(http.rt(), http.org_id(), agent_id, schedule_id)
    return Response(status_code=204, body="")
