"""Folders and the agents they are attached to."""

from __future__ import annotations

from psycopg import sql

from cairn.domain.folders import Folder
from cairn.store.db import Connection
from cairn.store.rows import Order, filtered_page, keyset, page, to_params

INSERT = """
INSERT INTO folders (id, organization_id, name, description, instructions, metadata,
                     embedding_config, created_by_id, last_updated_by_id, created_at,
                     updated_at)
VALUES (%(id)s, %(organization_id)s, %(name)s, %(description)s, %(instructions)s,
        %(metadata)s, %(embedding_config)s, %(created_by_id)s, %(last_updated_by_id)s,
        %(created_at)s, %(updated_at)s)
ON CONFLICT (organization_id, name) DO NOTHING
RETURNING *
"""
UPDATE = """
UPDATE folders SET name = %(name)s, description = %(description)s,
    instructions = %(instructions)s, metadata = %(metadata)s,
    embedding_config = %(embedding_config)s, last_updated_by_id = %(last_updated_by_id)s,
    updated_at = %(updated_at)s
WHERE organization_id = %(organization_id)s AND id = %(id)s
  AND NOT EXISTS (SELECT 1 FROM folders o WHERE o.organization_id = %(organization_id)s
                  AND o.name = %(name)s AND o.id <> %(id)s)
RETURNING *
"""
SELECT = "SELECT * FROM folders WHERE organization_id = %(org)s AND id = %(id)s"
SELECT_BY_NAME = "SELECT * FROM folders WHERE organization_id = %(org)s AND name = %(name)s"
DELETE = "DELETE FROM folders WHERE organization_id = %(org)s AND id = %(id)s"
COUNT = "SELECT count(*) AS n FROM folders WHERE organization_id = %(org)s"
ATTACH = """
INSERT INTO folders_agents (folder_id, agent_id, organization_id)
SELECT f.id, a.id, f.organization_id FROM folders f JOIN agents a
  ON a.organization_id = f.organization_id
WHERE f.organization_id = %(org)s AND f.id = %(folder_id)s AND a.id = %(agent_id)s
ON CONFLICT DO NOTHING
"""
DETACH = """
DELETE FROM folders_agents
WHERE organization_id = %(org)s AND folder_id = %(folder_id)s AND agent_id = %(agent_id)s
"""
AGENT_IDS = """
SELECT id FROM agents WHERE organization_id = {org}
  AND id IN (SELECT agent_id FROM folders_agents WHERE folder_id = {folder_id})
  AND {cursor} ORDER BY {order_by} LIMIT {limit}
"""
OF_AGENT = """
SELECT * FROM folders WHERE organization_id = {org}
  AND id IN (SELECT folder_id FROM folders_agents WHERE agent_id = {agent_id})
  AND {cursor} ORDER BY {order_by} LIMIT {limit}
"""
_JSON = ("metadata", "embedding_config")


def create(conn: Connection, folder: Folder) -> Folder | None:
    """The folder stored; None if its organization has one of that name already."""
    row = conn.execute(INSERT, to_params(folder, json_fields=_JSON)).fetchone()
    return Folder.model_validate(row) if row else None


def update(conn: Connection, folder: Folder) -> Folder | None:
    """The folder rewritten; None if another folder of its organization has its new name."""
    row = conn.execute(UPDATE, to_params(folder, json_fields=_JSON)).fetchone()
    return Folder.model_validate(row) if row else None


def get(conn: Connection, org_id: str, folder_id: str) -> Folder | None:
    row = conn.execute(SELECT, {"org": org_id, "id": folder_id}).fetchone()
    return Folder.model_validate(row) if row else None


def by_name(conn: Connection, org_id: str, name: str) -> Folder | None:
    row = conn.execute(SELECT_BY_NAME, {"org": org_id, "name": name}).fetchone()
    return Folder.model_validate(row) if row else None


def delete(conn: Connection, org_id: str, folder_id: str) -> bool:
    return conn.execute(DELETE, {"org": org_id, "id": folder_id}).rowcount == 1


def count(conn: Connection, org_id: str) -> int:
    row = conn.execute(COUNT, {"org": org_id}).fetchone()
    return int(row["n"]) if row else 0


def list_folders(
    conn: Connection,
    org_id: str,
    *,
    name: str | None,
    after: str | None,
    before: str | None,
    limit: int,
    order: Order,
) -> list[Folder]:
    return page(
        conn,
        "folders",
        Folder,
        org_id,
        equals={"name": name},
        after=after,
        before=before,
        limit=limit,
        order=order,
    )


def attach(conn: Connection, org_id: str, folder_id: str, agent_id: str) -> None:
    conn.execute(ATTACH, {"org": org_id, "folder_id": folder_id, "agent_id": agent_id})


def detach(conn: Connection, org_id: str, folder_id: str, agent_id: str) -> None:
    conn.execute(DETACH, {"org": org_id, "folder_id": folder_id, "agent_id": agent_id})


def agent_ids(
    conn: Connection,
    org_id: str,
    folder_id: str,
    *,
    after: str | None,
    before: str | None,
    limit: int,
    order: Order,
) -> list[str]:
    """The ids of the agents the folder is attached to, by their creation (cursors: agents)."""
    cursor, order_by = keyset("agents", order=order, after=after, before=before)
    query = sql.SQL(AGENT_IDS).format(
        org=sql.Literal(org_id),
        folder_id=sql.Literal(folder_id),
        cursor=cursor,
        order_by=order_by,
        limit=sql.Literal(limit),
    )
    return [r["id"] for r in conn.execute(query).fetchall()]


def of_agent(
    conn: Connection,
    org_id: str,
    agent_id: str,
    *,
    after: str | None,
    before: str | None,
    limit: int,
    order: Order,
) -> list[Folder]:
    fields = {"org": sql.Literal(org_id), "agent_id": sql.Literal(agent_id)}
    return filtered_page(
        conn,
        OF_AGENT,
        Folder,
        "folders",
        fields,
        after=after,
        before=before,
        limit=limit,
        order=order,
    )
