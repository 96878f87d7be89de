"""Agents. Every write names the version it read: a stale writer gets VersionConflictError."""

from __future__ import annotations

from typing import Any

from psycopg import sql

from cairn.domain.agents import Agent, AgentFilter
from cairn.errors import VersionConflictError
from cairn.store import context, history
from cairn.store.db import Connection
from cairn.store.rows import Order, contained, delete_with_rows, filtered_page, from_row, to_params

AGENT_JSON = ("llm_config", "embedding_config", "compaction_settings", "tool_rules", "metadata")

INSERT_AGENT = """
INSERT INTO agents (id, organization_id, name, description, agent_type, system, llm_config,
                    embedding_config, compaction_settings, tool_rules, tags, metadata, timezone,
                    max_files_open, per_file_view_window_char_limit, enable_sleeptime,
                    message_buffer_autoclear, hidden, project_id, created_by_id,
                    last_updated_by_id, version, created_at, updated_at)
VALUES (%(id)s, %(organization_id)s, %(name)s, %(description)s, %(agent_type)s, %(system)s,
        %(llm_config)s, %(embedding_config)s, %(compaction_settings)s,
        %(tool_rules)s, %(tags)s, %(metadata)s, %(timezone)s, %(max_files_open)s,
        %(per_file_view_window_char_limit)s, %(enable_sleeptime)s, %(message_buffer_autoclear)s,
        %(hidden)s, %(project_id)s, %(created_by_id)s, %(last_updated_by_id)s, 1,
        %(created_at)s, %(updated_at)s)
RETURNING *
"""

UPDATE_AGENT = """
UPDATE agents SET
    name = %(name)s, description = %(description)s, agent_type = %(agent_type)s,
    system = %(system)s, llm_config = %(llm_config)s,
    embedding_config = %(embedding_config)s, compaction_settings = %(compaction_settings)s,
    tool_rules = %(tool_rules)s, tags = %(tags)s, metadata = %(metadata)s,
    timezone = %(timezone)s, max_files_open = %(max_files_open)s,
    per_file_view_window_char_limit = %(per_file_view_window_char_limit)s,
    enable_sleeptime = %(enable_sleeptime)s,
    message_buffer_autoclear = %(message_buffer_autoclear)s, hidden = %(hidden)s,
    last_run_completion = %(last_run_completion)s,
    last_run_duration_ms = %(last_run_duration_ms)s, last_stop_reason = %(last_stop_reason)s,
    context_tokens = %(context_tokens)s, context_tokens_upto = %(context_tokens_upto)s,
    last_updated_by_id = %(last_updated_by_id)s, version = version + 1, updated_at = now()
WHERE organization_id = %(organization_id)s AND id = %(id)s AND version = %(expected_version)s
RETURNING *
"""

SELECT_AGENT = f"""
SELECT a.*, {context.MESSAGE_IDS} FROM agents a
WHERE a.organization_id = %(org)s AND a.id = %(id)s
"""
# Serialises writers of one agent inside a transaction (history capture, checkpoints).
LOCK_AGENT = SELECT_AGENT + " FOR UPDATE OF a"
# The agent's row of a run, held as a checkpoint holds it (an update of other than its key):
# what ends a run from outside takes it before the run's row, in the checkpoint's order.
LOCK_AGENT_OF_RUN = """
SELECT a.id FROM agents a JOIN runs r ON r.agent_id = a.id
WHERE r.organization_id = %(org)s AND r.id = %(run)s AND a.organization_id = %(org)s
FOR NO KEY UPDATE OF a
"""
RELEASE_LEASE = """
UPDATE agents SET lease_run_id = NULL, lease_expires_at = NULL
WHERE organization_id = %(org)s AND id = %(id)s AND lease_run_id = %(run)s
"""
DELETE_AGENT = "DELETE FROM agents WHERE organization_id = %(org)s AND id = %(id)s"
# What no key removes with the agent (migration 0042): each after the agent's row, in its own
# statement, so that it sees the rows of any writer that held the agent until it committed.
# An agent's rows in these tables are every row they hold (tests/integration/test_migrations.py).
KEYLESS = ("outbox", "steps", "context_entries", "context_changes", "agent_versions", "messages")
DELETE_AGENT_ROWS = (
    "DELETE FROM outbox WHERE organization_id = %(org)s AND agent_id = %(id)s",
    "DELETE FROM steps WHERE agent_id = %(id)s",
    "DELETE FROM context_entries WHERE agent_id = %(id)s",
    "DELETE FROM context_changes WHERE agent_id = %(id)s",
    "DELETE FROM agent_versions WHERE agent_id = %(id)s",
    "DELETE FROM messages WHERE organization_id = %(org)s AND agent_id = %(id)s",
)

# What GET /v1/agents/ and /v1/agents/count filter by (a null filter keeps every agent).
AGENT_FILTERS = """organization_id = {org} AND NOT hidden
  AND ({name}::text IS NULL OR name = {name})
  AND ({query_text}::text IS NULL OR name ILIKE '%' || {query_text} || '%')
  AND ({tags}::text[] IS NULL
       OR (CASE WHEN {match_all} THEN tags @> {tags} ELSE tags && {tags} END))
  AND ({identity}::text IS NULL OR EXISTS (SELECT 1 FROM identities_agents ia
       WHERE ia.agent_id = a.id AND ia.identity_id = {identity}))
  AND ({keys}::text[] IS NULL OR EXISTS (
       SELECT 1 FROM identities_agents ia JOIN identities i ON i.id = ia.identity_id
       WHERE ia.agent_id = a.id AND i.identifier_key = ANY({keys})))
  AND ({stop}::text IS NULL OR last_stop_reason = {stop})"""
LIST_AGENTS = f"""
SELECT a.*, {context.MESSAGE_IDS} FROM agents a
WHERE {AGENT_FILTERS} AND {{cursor}}
ORDER BY {{order_by}} LIMIT {{limit}}
"""
COUNT_AGENTS = f"SELECT count(*) AS n FROM agents a WHERE {AGENT_FILTERS}"


def _literals(where: AgentFilter, org_id: str) -> dict[str, sql.Composable]:
    return {
        "org": sql.Literal(org_id),
        "name": sql.Literal(where.name),
        "query_text": sql.Literal(contained(where.query_text)),
        "tags": sql.Literal(where.tags or None),
        "match_all": sql.Literal(where.match_all_tags),
        "identity": sql.Literal(where.identity_id),
        "keys": sql.Literal(where.identifier_keys or None),
        "stop": sql.Literal(where.last_stop_reason),
    }


def create(conn: Connection, agent: Agent) -> Agent:
    row = conn.execute(INSERT_AGENT, _params(agent)).fetchone()
    assert row is not None
    if agent.message_ids:
        context.replace(conn, agent.organization_id, agent.id, agent.message_ids, version=1)
    return Agent.model_validate({**row, "message_ids": agent.message_ids})


def _params(agent: Agent) -> dict[str, object]:
    params = to_params(agent, json_fields=AGENT_JSON)
    del params["message_ids"]  # context_entries hold the window (store/context.py)
    return params


def get(conn: Connection, org_id: str, agent_id: str, *, for_update: bool = False) -> Agent | None:
    query = LOCK_AGENT if for_update else SELECT_AGENT
    return from_row(Agent, conn.execute(query, {"org": org_id, "id": agent_id}).fetchone())


def update(
    conn: Connection,
    agent: Agent,
    *,
    expected_version: int,
    kind: str = "update",
    detail: dict[str, Any] | None = None,
) -> Agent:
    """Write every mutable field of `agent` if the stored version is still `expected_version`,
    kept in its history as a version of that `kind` (store/history.py)."""
    params = {**_params(agent), "expected_version": expected_version}
    row = conn.execute(UPDATE_AGENT, params).fetchone()
    if row is None:
        raise VersionConflictError(
            f"Agent {agent.id} changed since version {expected_version} was read"
        )
    org, version = agent.organization_id, row["version"]
    context.replace(conn, org, agent.id, agent.message_ids, version=version)
    history.record(
        conn,
        org,
        agent.id,
        version,
        kind,
        with_config=True,
        system_id=agent.message_ids[0] if agent.message_ids else None,
        detail=detail,
    )
    return Agent.model_validate({**row, "message_ids": agent.message_ids})


LEASE_FREE = """
SELECT lease_run_id IS NULL OR lease_expires_at < now() AS free FROM agents
WHERE organization_id = %(org)s AND id = %(id)s
"""


def lease_free(conn: Connection, org_id: str, agent_id: str, *, settled: bool = False) -> bool:
    """Whether no run holds the agent. `settled` waits for a checkpoint writing the agent
    row to end, so the answer is the lease it left: a step deferred while that checkpoint
    read what waits for the agent then sees the release and wakes itself."""
    query = LEASE_FREE + " FOR SHARE" if settled else LEASE_FREE
    row = conn.execute(query, {"org": org_id, "id": agent_id}).fetchone()
    return bool(row and row["free"])


def lock_agent_of_run(conn: Connection, org_id: str, run_id: str) -> None:
    conn.execute(LOCK_AGENT_OF_RUN, {"org": org_id, "run": run_id})


def release_lease(conn: Connection, org_id: str, agent_id: str, run_id: str) -> None:
    conn.execute(RELEASE_LEASE, {"org": org_id, "id": agent_id, "run": run_id})


SELECT_NAMES = """
SELECT id, name FROM agents WHERE organization_id = %(org)s AND id = ANY(%(ids)s)
"""


def names(conn: Connection, org_id: str, agent_ids: list[str]) -> dict[str, str]:
    """The names of these agents (those that exist), by id."""
    rows = conn.execute(SELECT_NAMES, {"org": org_id, "ids": agent_ids}).fetchall()
    return {r["id"]: r["name"] for r in rows}


SELECT_MATCHING_TAGS = """
SELECT id FROM agents
WHERE organization_id = %(org)s AND tags @> %(all)s::text[]
  AND (cardinality(%(some)s::text[]) = 0 OR tags && %(some)s::text[])
ORDER BY id LIMIT %(limit)s
"""


def matching_tags(
    conn: Connection, org_id: str, match_all: list[str], match_some: list[str], limit: int
) -> list[str]:
    """The ids of the agents with every tag of `match_all` and one of `match_some` (any,
    when it is empty), in id order, as Letta's list_agents_matching_tags_async."""
    params = {"org": org_id, "all": match_all, "some": match_some, "limit": limit}
    return [r["id"] for r in conn.execute(SELECT_MATCHING_TAGS, params).fetchall()]


def delete(conn: Connection, org_id: str, agent_id: str) -> bool:
    """The agent and everything of it (in the caller's transaction); False if it was not."""
    return delete_with_rows(conn, DELETE_AGENT, DELETE_AGENT_ROWS, {"org": org_id, "id": agent_id})


def list_agents(
    conn: Connection,
    org_id: str,
    where: AgentFilter | None = None,
    *,
    after: str | None = None,
    before: str | None = None,
    limit: int = 50,
    order: Order = "desc",
) -> list[Agent]:
    fields = _literals(where or AgentFilter(), org_id)
    return filtered_page(
        conn,
        LIST_AGENTS,
        Agent,
        "agents",
        fields,
        after=after,
        before=before,
        limit=limit,
        order=order,
    )


def count(conn: Connection, org_id: str, where: AgentFilter | None = None) -> int:
    query = sql.SQL(COUNT_AGENTS).format(**_literals(where or AgentFilter(), org_id))
    row = conn.execute(query).fetchone()
    return int(row["n"]) if row else 0


LIST_TAGS = """
SELECT DISTINCT tag FROM agents, unnest(tags) AS tag
WHERE organization_id = {org} AND NOT hidden
  AND ({query}::text IS NULL OR tag ILIKE '%' || {query} || '%')
  AND ({after}::text IS NULL OR tag {later} {after})
  AND ({before}::text IS NULL OR tag {earlier} {before})
ORDER BY tag {direction} LIMIT {limit}
"""


def tags(
    conn: Connection,
    org_id: str,
    *,
    query_text: str | None,
    after: str | None,
    before: str | None = None,
    limit: int,
    order: Order = "asc",
) -> list[str]:
    """The organisation's agent tags, alphabetical (or reversed with `desc`); `after` and
    `before` are tags, later and earlier in that order."""
    ascending = order == "asc"
    query = sql.SQL(LIST_TAGS).format(
        org=sql.Literal(org_id),
        query=sql.Literal(contained(query_text)),
        after=sql.Literal(after),
        before=sql.Literal(before),
        later=sql.SQL(">" if ascending else "<"),
        earlier=sql.SQL("<" if ascending else ">"),
        direction=sql.SQL("ASC" if ascending else "DESC"),
        limit=sql.Literal(limit),
    )
    return [r["tag"] for r in conn.execute(query).fetchall()]
