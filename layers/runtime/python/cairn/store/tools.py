"""Tools and which agents they are attached to."""

from __future__ import annotations

from psycopg import sql

from cairn.domain.tools import Tool, ToolFilter
from cairn.store.db import Connection
from cairn.store.rows import Order, contained, filtered_page, from_row, per_agent, to_params

_TOOL_JSON = ("json_schema", "args_json_schema", "pip_requirements", "npm_requirements", "metadata")

# Upsert by (organization, name), as Letta's POST and PUT both do: same name, same id.
UPSERT_TOOL = """
INSERT INTO tools (id, organization_id, name, description, tool_type, source_type, source_code,
                   json_schema, args_json_schema, return_char_limit, tags, pip_requirements,
                   npm_requirements, default_requires_approval, enable_parallel_execution,
                   metadata, project_id, created_by_id, last_updated_by_id, created_at,
                   updated_at)
VALUES (%(id)s, %(organization_id)s, %(name)s, %(description)s, %(tool_type)s, %(source_type)s,
        %(source_code)s, %(json_schema)s, %(args_json_schema)s, %(return_char_limit)s, %(tags)s,
        %(pip_requirements)s, %(npm_requirements)s, %(default_requires_approval)s,
        %(enable_parallel_execution)s, %(metadata)s, %(project_id)s, %(created_by_id)s,
        %(last_updated_by_id)s, %(created_at)s, %(updated_at)s)
ON CONFLICT (organization_id, name) DO UPDATE SET
    description = EXCLUDED.description, tool_type = EXCLUDED.tool_type,
    source_type = EXCLUDED.source_type, source_code = EXCLUDED.source_code,
    json_schema = EXCLUDED.json_schema, args_json_schema = EXCLUDED.args_json_schema,
    return_char_limit = EXCLUDED.return_char_limit, tags = EXCLUDED.tags,
    pip_requirements = EXCLUDED.pip_requirements, npm_requirements = EXCLUDED.npm_requirements,
    default_requires_approval = EXCLUDED.default_requires_approval,
    enable_parallel_execution = EXCLUDED.enable_parallel_execution,
    metadata = EXCLUDED.metadata, last_updated_by_id = EXCLUDED.last_updated_by_id,
    updated_at = now()
RETURNING *
"""
# A change by id, the name included (a rename: the upsert above goes by name).
UPDATE_TOOL = """
UPDATE tools SET
    name = %(name)s, description = %(description)s, source_type = %(source_type)s,
    source_code = %(source_code)s, json_schema = %(json_schema)s,
    args_json_schema = %(args_json_schema)s, return_char_limit = %(return_char_limit)s,
    tags = %(tags)s, pip_requirements = %(pip_requirements)s,
    npm_requirements = %(npm_requirements)s,
    default_requires_approval = %(default_requires_approval)s,
    enable_parallel_execution = %(enable_parallel_execution)s, metadata = %(metadata)s,
    last_updated_by_id = %(last_updated_by_id)s, updated_at = now()
WHERE organization_id = %(organization_id)s AND id = %(id)s
RETURNING *
"""
SELECT_TOOL = "SELECT * FROM tools WHERE organization_id = %(org)s AND id = %(id)s"
SELECT_TOOL_BY_NAME = "SELECT * FROM tools WHERE organization_id = %(org)s AND name = %(name)s"
DELETE_TOOL = "DELETE FROM tools WHERE organization_id = %(org)s AND id = %(id)s"
ATTACH_TOOL = """
WITH pair AS (
    SELECT a.id AS agent_id, t.id AS tool_id, a.organization_id
    FROM agents a JOIN tools t ON t.organization_id = a.organization_id
    WHERE a.organization_id = %(org)s AND a.id = %(agent_id)s AND t.id = %(tool_id)s
), attached AS (
    INSERT INTO agents_tools (agent_id, tool_id, organization_id)
    SELECT agent_id, tool_id, organization_id FROM pair
    ON CONFLICT (agent_id, tool_id) DO NOTHING
)
SELECT count(*) AS found FROM pair
"""
DETACH_TOOL = """
DELETE FROM agents_tools
WHERE organization_id = %(org)s AND agent_id = %(agent_id)s AND tool_id = %(tool_id)s
"""


def upsert(conn: Connection, tool: Tool) -> Tool:
    row = conn.execute(UPSERT_TOOL, to_params(tool, json_fields=_TOOL_JSON)).fetchone()
    return Tool.model_validate(row)


def update(conn: Connection, tool: Tool) -> Tool | None:
    """The stored tool of `tool.id` changed to `tool`, renamed if its name changed; None if
    there is none. A name another tool holds fails on the unique (organization, name)."""
    row = conn.execute(UPDATE_TOOL, to_params(tool, json_fields=_TOOL_JSON)).fetchone()
    return None if row is None else Tool.model_validate(row)


def get(conn: Connection, org_id: str, tool_id: str) -> Tool | None:
    return from_row(Tool, conn.execute(SELECT_TOOL, {"org": org_id, "id": tool_id}).fetchone())


def get_by_name(conn: Connection, org_id: str, name: str) -> Tool | None:
    row = conn.execute(SELECT_TOOL_BY_NAME, {"org": org_id, "name": name}).fetchone()
    return from_row(Tool, row)


def delete(conn: Connection, org_id: str, tool_id: str) -> bool:
    return conn.execute(DELETE_TOOL, {"org": org_id, "id": tool_id}).rowcount == 1


# What GET /v1/tools/ and /v1/tools/count filter by, in the statement, so a page holds
# matches only (a filter after the page would leave pages short or empty).
TOOL_FILTERS = """organization_id = {org}
  AND ({name}::text IS NULL OR name = {name})
  AND ({names}::text[] IS NULL OR name = ANY({names}))
  AND ({ids}::text[] IS NULL OR id = ANY({ids}))
  AND ({search}::text IS NULL OR name ILIKE '%' || {search} || '%')
  AND ({types}::text[] IS NULL OR tool_type = ANY({types}))
  AND ({not_types}::text[] IS NULL OR NOT tool_type = ANY({not_types}))
  AND (NOT {only_letta} OR tool_type LIKE 'letta\\_%')
  AND (NOT {no_letta} OR tool_type NOT LIKE 'letta\\_%')"""
LIST_TOOLS = f"""
SELECT * FROM tools WHERE {TOOL_FILTERS} AND {{cursor}} ORDER BY {{order_by}} LIMIT {{limit}}
"""
COUNT_MATCHING = f"SELECT count(*) AS n FROM tools WHERE {TOOL_FILTERS}"


def _literals(where: ToolFilter, org_id: str) -> dict[str, sql.Composable]:
    return {
        "org": sql.Literal(org_id),
        "name": sql.Literal(where.name),
        "names": sql.Literal(where.names or None),
        "ids": sql.Literal(where.tool_ids or None),
        "search": sql.Literal(contained(where.search)),
        "types": sql.Literal(where.tool_types or None),
        "not_types": sql.Literal(where.exclude_tool_types or None),
        "only_letta": sql.Literal(where.only_letta),
        "no_letta": sql.Literal(where.no_letta),
    }


def list_tools(
    conn: Connection,
    org_id: str,
    where: ToolFilter | None = None,
    *,
    after: str | None = None,
    before: str | None = None,
    limit: int = 50,
    order: Order = "desc",
) -> list[Tool]:
    return filtered_page(
        conn,
        LIST_TOOLS,
        Tool,
        "tools",
        _literals(where or ToolFilter(), org_id),
        after=after,
        before=before,
        limit=limit,
        order=order,
    )


SELECT_AGENTS_TOOLS = """
SELECT at.agent_id AS of_agent, t.* FROM agents_tools at JOIN tools t ON t.id = at.tool_id
WHERE at.organization_id = %(org)s AND at.agent_id = ANY(%(agents)s)
ORDER BY at.attached_at, t.name
"""


def for_agents(conn: Connection, org_id: str, agent_ids: list[str]) -> dict[str, list[Tool]]:
    return per_agent(conn, SELECT_AGENTS_TOOLS, Tool, org_id, agent_ids)


def for_agent(conn: Connection, org_id: str, agent_id: str) -> list[Tool]:
    return for_agents(conn, org_id, [agent_id])[agent_id]


def attach(conn: Connection, org_id: str, agent_id: str, tool_id: str) -> bool:
    """Attach a tool to an agent. False when either is unknown in this organization."""
    row = conn.execute(
        ATTACH_TOOL, {"org": org_id, "agent_id": agent_id, "tool_id": tool_id}
    ).fetchone()
    return bool(row and row["found"])


def detach(conn: Connection, org_id: str, agent_id: str, tool_id: str) -> bool:
    params = {"org": org_id, "agent_id": agent_id, "tool_id": tool_id}
    return conn.execute(DETACH_TOOL, params).rowcount == 1


def count(conn: Connection, org_id: str, where: ToolFilter | None = None) -> int:
    query = sql.SQL(COUNT_MATCHING).format(**_literals(where or ToolFilter(), org_id))
    row = conn.execute(query).fetchone()
    return int(row["n"]) if row else 0


# Full text over a tool's name (underscores read as spaces) and description; an organisation
# holds tens of tools, so no index is needed and none is kept.
SEARCH_TOOLS = """
WITH q AS (SELECT websearch_to_tsquery('english', %(text)s) AS t),
docs AS (
    SELECT tools.*, to_tsvector('english', replace(name, '_', ' ') || ' ' ||
                                coalesce(description, '')) AS doc
    FROM tools
    WHERE organization_id = %(org)s
      AND (%(types)s::text[] IS NULL OR tool_type = ANY(%(types)s))
      AND (%(tags)s::text[] IS NULL OR tags && %(tags)s)
)
SELECT docs.*, row_number() OVER (ORDER BY ts_rank(doc, q.t) DESC, id) AS fts_rank,
       ts_rank(doc, q.t) AS score
FROM docs, q WHERE doc @@ q.t
ORDER BY ts_rank(doc, q.t) DESC, id LIMIT %(limit)s
"""


def search(
    conn: Connection,
    org_id: str,
    text: str,
    *,
    tool_types: list[str] | None = None,
    tags: list[str] | None = None,
    limit: int = 50,
) -> list[tuple[Tool, int, float]]:
    """(tool, rank, score) of the tools whose name or description match, best first."""
    params = {"org": org_id, "text": text, "types": tool_types, "tags": tags, "limit": limit}
    rows = conn.execute(SEARCH_TOOLS, params).fetchall()
    return [(Tool.model_validate(r), int(r["fts_rank"]), float(r["score"])) for r in rows]
