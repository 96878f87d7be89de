"""Groups: a manager agent (sleeptime, supervisor, dynamic) or none, and member agents."""

from __future__ import annotations

from psycopg import sql

from cairn.domain.groups import Group
from cairn.store.db import Connection
from cairn.store.rows import Order, filtered_page, from_row, to_params

_GROUP_COLUMNS = """g.*, COALESCE(
    (SELECT array_agg(ga.agent_id ORDER BY ga.position, ga.agent_id)
     FROM groups_agents ga WHERE ga.group_id = g.id), '{}') AS agent_ids"""

INSERT_GROUP = """
INSERT INTO groups (id, organization_id, manager_type, manager_agent_id, description,
                    sleeptime_agent_frequency, turns_counter, last_processed_message_id,
                    max_turns, termination_token, shared_block_ids, max_message_buffer_length,
                    min_message_buffer_length, hidden, created_at, updated_at)
VALUES (%(id)s, %(organization_id)s, %(manager_type)s, %(manager_agent_id)s, %(description)s,
        %(sleeptime_agent_frequency)s, %(turns_counter)s, %(last_processed_message_id)s,
        %(max_turns)s, %(termination_token)s, %(shared_block_ids)s,
        %(max_message_buffer_length)s, %(min_message_buffer_length)s, %(hidden)s,
        %(created_at)s, %(updated_at)s)
"""
INSERT_MEMBERS = """
INSERT INTO groups_agents (group_id, agent_id, organization_id, position)
SELECT %(group_id)s, a.id, a.organization_id, m.position - 1
FROM unnest(%(agent_ids)s::text[]) WITH ORDINALITY AS m (agent_id, position)
JOIN agents a ON a.id = m.agent_id AND a.organization_id = %(org)s
ON CONFLICT (group_id, agent_id) DO NOTHING
"""
SELECT_GROUP = (
    f"SELECT {_GROUP_COLUMNS} FROM groups g WHERE g.organization_id = %(org)s AND g.id = %(id)s"
)
SELECT_MANAGED_GROUP = f"""
SELECT {_GROUP_COLUMNS} FROM groups g
WHERE g.organization_id = %(org)s AND g.manager_agent_id = %(agent_id)s
ORDER BY g.created_at LIMIT 1
"""
UPDATE_PROGRESS = """
UPDATE groups SET turns_counter = %(turns_counter)s,
    last_processed_message_id = %(last_processed_message_id)s,
    sleeptime_agent_frequency = %(sleeptime_agent_frequency)s, updated_at = now()
WHERE organization_id = %(organization_id)s AND id = %(id)s
"""
# Only the progress mark (the turn counter moves in foreground checkpoints meanwhile), and
# only forward: fan-outs may finish out of order.
MARK_PROCESSED = """
UPDATE groups g SET last_processed_message_id = %(message_id)s, updated_at = now()
WHERE g.organization_id = %(org)s AND g.id = %(id)s
  AND coalesce((SELECT sequence_id FROM messages WHERE id = g.last_processed_message_id), -1)
      < (SELECT sequence_id FROM messages WHERE id = %(message_id)s)
"""
DELETE_GROUP = "DELETE FROM groups WHERE organization_id = %(org)s AND id = %(id)s"
UPDATE_GROUP = """
UPDATE groups SET description = %(description)s, manager_agent_id = %(manager_agent_id)s,
    max_turns = %(max_turns)s, termination_token = %(termination_token)s,
    sleeptime_agent_frequency = %(sleeptime_agent_frequency)s,
    max_message_buffer_length = %(max_message_buffer_length)s,
    min_message_buffer_length = %(min_message_buffer_length)s,
    shared_block_ids = %(shared_block_ids)s, updated_at = now()
WHERE organization_id = %(organization_id)s AND id = %(id)s
"""
DROP_MEMBERS = "DELETE FROM groups_agents WHERE group_id = %(group_id)s"
# The group's messages leave the history and, with them, the context windows of its agents;
# each agent's version moves, so a step that read the old window cannot write it back.
DELETE_GROUP_MESSAGES = """
WITH gone AS (
    DELETE FROM messages WHERE organization_id = %(org)s AND group_id = %(id)s
    RETURNING agent_id
)
UPDATE agents a SET version = a.version + 1, updated_at = now()
WHERE a.organization_id = %(org)s AND a.id IN (SELECT agent_id FROM gone)
RETURNING a.id
"""
# Their places in the windows (no key removes them: migration 0042). A statement of its own,
# after the agents' rows are held: it sees what a step that held one committed meanwhile.
DELETE_GONE_ENTRIES = """
DELETE FROM context_entries e WHERE e.agent_id = ANY(%(agents)s)
  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = e.message_id)
"""


def create(conn: Connection, group: Group) -> Group:
    conn.execute(INSERT_GROUP, to_params(group))
    return _with_members(conn, group)


def _with_members(conn: Connection, group: Group) -> Group:
    """Write the group's agent list (in its order) and read the group back."""
    conn.execute(
        INSERT_MEMBERS,
        {"group_id": group.id, "agent_ids": group.agent_ids, "org": group.organization_id},
    )
    stored = get(conn, group.organization_id, group.id)
    assert stored is not None
    return stored


def get(conn: Connection, org_id: str, group_id: str) -> Group | None:
    return from_row(Group, conn.execute(SELECT_GROUP, {"org": org_id, "id": group_id}).fetchone())


def managed_by(conn: Connection, org_id: str, agent_id: str) -> Group | None:
    row = conn.execute(SELECT_MANAGED_GROUP, {"org": org_id, "agent_id": agent_id}).fetchone()
    return from_row(Group, row)


def update(conn: Connection, group: Group, *, members: bool = False) -> Group:
    """Write the group's settings; with `members`, its agent list too."""
    conn.execute(UPDATE_GROUP, to_params(group))
    if members:
        conn.execute(DROP_MEMBERS, {"group_id": group.id})
    return _with_members(conn, group)


def delete_messages(conn: Connection, org_id: str, group_id: str) -> None:
    held = conn.execute(DELETE_GROUP_MESSAGES, {"org": org_id, "id": group_id}).fetchall()
    if held:
        conn.execute(DELETE_GONE_ENTRIES, {"agents": [r["id"] for r in held]})


def save_progress(conn: Connection, group: Group) -> None:
    conn.execute(UPDATE_PROGRESS, to_params(group))


def mark_processed(conn: Connection, org_id: str, group_id: str, message_id: str) -> None:
    conn.execute(MARK_PROCESSED, {"org": org_id, "id": group_id, "message_id": message_id})


def delete(conn: Connection, org_id: str, group_id: str) -> bool:
    return conn.execute(DELETE_GROUP, {"org": org_id, "id": group_id}).rowcount == 1


_ESCAPED_COLUMNS = _GROUP_COLUMNS.replace("{", "{{").replace("}", "}}")  # for sql.SQL.format
LIST_GROUPS = f"""
SELECT {_ESCAPED_COLUMNS} FROM groups g
WHERE g.organization_id = {{org}}
  AND ({{manager_type}}::text IS NULL OR g.manager_type = {{manager_type}})
  AND ({{agent_id}}::text IS NULL OR g.manager_agent_id = {{agent_id}}
       OR EXISTS (SELECT 1 FROM groups_agents ga WHERE ga.group_id = g.id
                  AND ga.agent_id = {{agent_id}}))
  AND {{cursor}}
ORDER BY {{order_by}} LIMIT {{limit}}
"""
COUNT_GROUPS = "SELECT count(*) AS n FROM groups WHERE organization_id = %(org)s"


def list_groups(
    conn: Connection,
    org_id: str,
    *,
    manager_type: str | None = None,
    agent_id: str | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: int = 50,
    order: Order = "asc",
) -> list[Group]:
    """The organisation's groups; with `agent_id`, those it manages or belongs to."""
    fields = {
        "org": sql.Literal(org_id),
        "manager_type": sql.Literal(manager_type),
        "agent_id": sql.Literal(agent_id),
    }
    return filtered_page(
        conn,
        LIST_GROUPS,
        Group,
        "groups",
        fields,
        after=after,
        before=before,
        limit=limit,
        order=order,
    )


def count(conn: Connection, org_id: str) -> int:
    row = conn.execute(COUNT_GROUPS, {"org": org_id}).fetchone()
    return int(row["n"]) if row else 0
