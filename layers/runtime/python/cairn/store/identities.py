"""Identities and their links to agents and blocks (domain/identities)."""

from __future__ import annotations

from psycopg import sql

from cairn.domain.identities import Identity
from cairn.store.db import Connection
from cairn.store.rows import Order, contained, filtered_page, from_row, per_agent, to_params

JSON = ("properties",)
INSERT = """
INSERT INTO identities (id, organization_id, identifier_key, name, identity_type, project_id,
                        properties, created_by_id, created_at, updated_at)
VALUES (%(id)s, %(organization_id)s, %(identifier_key)s, %(name)s, %(identity_type)s,
        %(project_id)s, %(properties)s, %(created_by_id)s, %(created_at)s, %(updated_at)s)
RETURNING *
"""
UPDATE = """
UPDATE identities SET identifier_key = %(identifier_key)s, name = %(name)s,
    identity_type = %(identity_type)s, properties = %(properties)s, updated_at = now()
WHERE organization_id = %(organization_id)s AND id = %(id)s
RETURNING *
"""
# An identity with the ids of what it is linked to (Letta's Identity shows both).
WITH_LINKS = """
SELECT i.*,
  array(SELECT agent_id FROM identities_agents WHERE identity_id = i.id ORDER BY 1) AS agent_ids,
  array(SELECT block_id FROM identities_blocks WHERE identity_id = i.id ORDER BY 1) AS block_ids
FROM identities i"""
SELECT = WITH_LINKS + " WHERE organization_id = %(org)s AND id = %(id)s"
SELECT_BY_KEY = (
    WITH_LINKS + " WHERE organization_id = %(org)s AND identifier_key = %(key)s"
    " AND coalesce(project_id, '') = coalesce(%(project)s::text, '')"
)
LIST = (
    WITH_LINKS
    + """
WHERE organization_id = {org}
  AND ({name}::text IS NULL OR name ILIKE '%' || {name} || '%')
  AND ({key}::text IS NULL OR identifier_key = {key})
  AND ({kind}::text IS NULL OR identity_type = {kind})
  AND ({project}::text IS NULL OR project_id = {project})
  AND {cursor}
ORDER BY {order_by} LIMIT {limit}
"""
)
# Links, with both ends checked to be the organization's: an id of another organization
# links nothing (and reads as not found). {links}: identities_agents or identities_blocks.
LINK = """
INSERT INTO {links} (identity_id, {column})
SELECT i.id, x.id FROM identities i, {others} x
WHERE i.organization_id = %(org)s AND i.id = %(identity)s
  AND x.organization_id = %(org)s AND x.id = ANY(%(ids)s)
ON CONFLICT DO NOTHING
"""
UNLINK = """
DELETE FROM {links} l USING identities i
WHERE l.identity_id = i.id AND i.organization_id = %(org)s AND i.id = %(identity)s
  AND l.{column} = ANY(%(ids)s)
"""
LINKED = """
SELECT l.{column} AS id FROM {links} l JOIN identities i ON i.id = l.identity_id
WHERE i.organization_id = %(org)s AND i.id = %(identity)s ORDER BY l.{column}
"""
OF_AGENTS = """
SELECT ia.agent_id AS of_agent, i.* FROM identities_agents ia
JOIN identities i ON i.id = ia.identity_id
WHERE i.organization_id = %(org)s AND ia.agent_id = ANY(%(agents)s)
ORDER BY i.created_at, i.id
"""


def create(conn: Connection, identity: Identity) -> Identity:
    return Identity.model_validate(conn.execute(INSERT, to_params(identity, JSON)).fetchone())


def update(conn: Connection, identity: Identity) -> Identity:
    return Identity.model_validate(conn.execute(UPDATE, to_params(identity, JSON)).fetchone())


def get(conn: Connection, org_id: str, identity_id: str) -> Identity | None:
    return from_row(Identity, conn.execute(SELECT, {"org": org_id, "id": identity_id}).fetchone())


def by_key(conn: Connection, org_id: str, key: str, project_id: str | None) -> Identity | None:
    row = conn.execute(SELECT_BY_KEY, {"org": org_id, "key": key, "project": project_id})
    return from_row(Identity, row.fetchone())


def delete(conn: Connection, org_id: str, identity_id: str) -> bool:
    gone = conn.execute(
        "DELETE FROM identities WHERE organization_id = %(org)s AND id = %(id)s",
        {"org": org_id, "id": identity_id},
    )
    return gone.rowcount == 1


def count(conn: Connection, org_id: str) -> int:
    row = conn.execute(
        "SELECT count(*) AS n FROM identities WHERE organization_id = %(org)s", {"org": org_id}
    ).fetchone()
    return int(row["n"]) if row else 0


def list_identities(
    conn: Connection,
    org_id: str,
    *,
    name: str | None = None,
    identifier_key: str | None = None,
    identity_type: str | None = None,
    project_id: str | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: int = 50,
    order: Order = "desc",
) -> list[Identity]:
    fields = {
        "org": sql.Literal(org_id),
        "name": sql.Literal(contained(name)),
        "key": sql.Literal(identifier_key),
        "kind": sql.Literal(identity_type),
        "project": sql.Literal(project_id),
    }
    return filtered_page(
        conn,
        LIST,
        Identity,
        "identities",
        fields,
        after=after,
        before=before,
        limit=limit,
        order=order,
    )


def link(conn: Connection, org_id: str, identity_id: str, kind: str, ids: list[str]) -> None:
    """Link agents (`kind` "agent") or blocks ("block") to the identity; linked ones stay."""
    params = {"org": org_id, "identity": identity_id, "ids": ids}
    conn.execute(_links(LINK, kind), params)


def unlink(conn: Connection, org_id: str, identity_id: str, kind: str, ids: list[str]) -> None:
    params = {"org": org_id, "identity": identity_id, "ids": ids}
    conn.execute(_links(UNLINK, kind), params)


def linked(conn: Connection, org_id: str, identity_id: str, kind: str) -> list[str]:
    params = {"org": org_id, "identity": identity_id}
    return [r["id"] for r in conn.execute(_links(LINKED, kind), params).fetchall()]


def of_agents(conn: Connection, org_id: str, agent_ids: list[str]) -> dict[str, list[Identity]]:
    return per_agent(conn, OF_AGENTS, Identity, org_id, agent_ids)


def _links(statement: str, kind: str) -> sql.Composed:
    if kind not in ("agent", "block"):
        raise ValueError(f"identities link agents or blocks, not {kind!r}")
    return sql.SQL(statement).format(
        links=sql.Identifier(f"identities_{kind}s"),
        column=sql.Identifier(f"{kind}_id"),
        others=sql.Identifier(f"{kind}s"),
    )
