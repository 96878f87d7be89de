"""Groups: the sleeptime groups Cairn builds, to read and to tune (contract §10)."""

from __future__ import annotations

from cairn.domain.groups import Group
from cairn.errors import NotFoundError, UnprocessableError
from cairn.orchestration.parts import Runtime
from cairn.services import agents as agent_service
from cairn.services.requests import GroupUpdate
from cairn.store import groups
from cairn.store.db import Connection
from cairn.store.rows import Order


def _fetch(conn: Connection, org: str, group_id: str) -> Group:
    group = groups.get(conn, org, group_id)
    if group is None:
        raise NotFoundError(f"Group with id '{group_id}' not found")
    return group


def retrieve(rt: Runtime, org: str, group_id: str) -> Group:
    with rt.db.connection() as conn:
        return _fetch(conn, org, group_id)


def modify(rt: Runtime, org: str, group_id: str, req: GroupUpdate) -> Group:
    with rt.db.transaction() as conn:
        group = _fetch(conn, org, group_id)
        config = req.manager_config
        if config is not None and config.manager_type != group.manager_type:
            raise UnprocessableError(f"manager_config: this group is {group.manager_type}")
        if config is not None and config.sleeptime_agent_frequency is not None:
            group = group.model_copy(
                update={"sleeptime_agent_frequency": config.sleeptime_agent_frequency}
            )
        groups.save_progress(conn, group)
        return _fetch(conn, org, group_id)


def list_groups(
    rt: Runtime,
    org: str,
    *,
    manager_type: str | None,
    agent_id: str | None = None,
    after: str | None,
    before: str | None,
    limit: int,
    order: Order,
) -> list[Group]:
    with rt.db.connection() as conn:
        if agent_id is not None:
            agent_service.fetch(conn, org, agent_id)
        return groups.list_groups(
            conn,
            org,
            manager_type=manager_type,
            agent_id=agent_id,
            after=after,
            before=before,
            limit=limit,
            order=order,
        )


def count(rt: Runtime, org: str) -> int:
    with rt.db.connection() as conn:
        return groups.count(conn, org)
