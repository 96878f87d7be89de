"""Groups: the sleeptime groups Cairn builds, to read and to tune (contract §10)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ConfigDict, Field

from cairn.api import http, letta
from cairn.domain.groups import Group
from cairn.errors import NotFoundError, UnprocessableError
from cairn.store import groups
from cairn.store.db import Connection

router = APIGatewayHttpRouter()


class SleeptimeConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")
    manager_type: str = "sleeptime"
    sleeptime_agent_frequency: int | None = Field(default=None, ge=1)


class GroupUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")
    manager_config: SleeptimeConfig | None = None
    description: str | None = None


def _get(conn: Connection, group_id: str) -> Group:
    http.check_id("group", group_id, what="group_id")
    group = groups.get(conn, http.org_id(), group_id)
    if group is None:
        raise NotFoundError(f"Group with id '{group_id}' not found")
    return group


@router.get("/groups/<group_id>")
def get_group(group_id: str) -> Response[Any]:
    with http.rt().db.connection() as conn:
        return http.json_reply(200, letta.group_json(_get(conn, group_id)))


@router.patch("/groups/<group_id>")
def update_group(group_id: str) -> Response[Any]:
    req: GroupUpdate = http.body(GroupUpdate)
    with http.rt().db.transaction() as conn:
        group = _get(conn, group_id)
        config = req.manager_config
        if config is not None and config.manager_type != group.manager_type:
            raise UnprocessableError(f"manager_config: this group is {group.manager_type}")
        if config is not None and config.sleeptime_agent_frequency is not None:
            group = group.model_copy(
                update={"sleeptime_agent_frequency": config.sleeptime_agent_frequency}
            )
        groups.save_progress(conn, group)
        return http.json_reply(200, letta.group_json(_get(conn, group_id)))
