"""Core-memory blocks, their history, and which agents they are attached to."""

from __future__ import annotations

from typing import Literal

from psycopg import sql
from psycopg.types.json import Jsonb

from cairn.domain.blocks import Block, BlockHistoryEntry, BlockSearch
from cairn.errors import VersionConflictError
from cairn.store.db import Connection
from cairn.store.rows import Order, contained, filtered_page, from_row, per_agent, to_params

_HISTORY_COLUMNS = """block_id, version, organization_id, label, value, "limit", description,
    read_only, metadata, actor_type, actor_id, created_at"""

# Writing a block and its history entry is one statement: no version exists without its entry.
INSERT_BLOCK = f"""
WITH created AS (
    INSERT INTO blocks (id, organization_id, label, value, "limit", description, read_only,
                        hidden, metadata, project_id, is_template, template_name, created_by_id,
                        last_updated_by_id, version, created_at, updated_at)
    VALUES (%(id)s, %(organization_id)s, %(label)s, %(value)s, %(limit)s, %(description)s,
            %(read_only)s, %(hidden)s, %(metadata)s, %(project_id)s, %(is_template)s,
            %(template_name)s, %(created_by_id)s, %(last_updated_by_id)s, 1, %(created_at)s,
            %(updated_at)s)
    RETURNING *
), history AS (
    INSERT INTO block_history ({_HISTORY_COLUMNS})
    SELECT id, version, organization_id, label, value, "limit", description, read_only,
           metadata, %(actor_type)s, %(actor_id)s, updated_at
    FROM created
)
SELECT * FROM created
"""

UPDATE_BLOCK = f"""
WITH updated AS (
    UPDATE blocks
    SET label = %(label)s, value = %(value)s, "limit" = %(limit)s, description = %(description)s,
        read_only = %(read_only)s, hidden = %(hidden)s, metadata = %(metadata)s,
        last_updated_by_id = %(last_updated_by_id)s, version = version + 1, updated_at = now()
    WHERE organization_id = %(organization_id)s AND id = %(id)s AND version = %(expected_version)s
    RETURNING *
), history AS (
    INSERT INTO block_history ({_HISTORY_COLUMNS})
    SELECT id, version, organization_id, label, value, "limit", description, read_only,
           metadata, %(actor_type)s, %(actor_id)s, updated_at
    FROM updated
)
SELECT * FROM updated
"""

# Earlier versions from elsewhere (a Letta import), put before a new block's own: its entries
# and version move up by their number first (one statement each: a unique index is checked
# row by row, and in one statement the insert would meet the rows not moved yet).
SHIFT_HISTORY = """
UPDATE block_history SET version = version + %(n)s
WHERE organization_id = %(org)s AND block_id = %(id)s
"""
SHIFT_VERSION = """
UPDATE blocks SET version = version + %(n)s WHERE organization_id = %(org)s AND id = %(id)s
"""
INSERT_HISTORY = f"""
INSERT INTO block_history ({_HISTORY_COLUMNS})
SELECT %(id)s, e.version, %(org)s, e.label, e.value, e."limit", e.description, e.read_only,
       coalesce(e.metadata, '{{}}'), e.actor_type, e.actor_id, e.created_at
FROM jsonb_to_recordset(%(entries)s) AS e (version bigint, label text, value text,
     "limit" integer, description text, read_only boolean, metadata jsonb, actor_type text,
     actor_id text, created_at timestamptz)
"""
SELECT_BLOCK = "SELECT * FROM blocks WHERE organization_id = %(org)s AND id = %(id)s"
DELETE_BLOCK = "DELETE FROM blocks WHERE organization_id = %(org)s AND id = %(id)s"
SELECT_HISTORY = """
SELECT * FROM block_history WHERE organization_id = %(org)s AND block_id = %(id)s
ORDER BY version
"""

SELECT_AGENT_BLOCK_BY_LABEL = """
SELECT b.* FROM agents_blocks ab JOIN blocks b ON b.id = ab.block_id
WHERE ab.organization_id = %(org)s AND ab.agent_id = %(agent_id)s AND ab.block_label = %(label)s
"""
# The label is copied from the block so the (agent, label) uniqueness holds in the database.
# Counts the pair, so "already attached" and "attached now" both answer 1, unknown ids 0.
ATTACH_BLOCK = """
WITH pair AS (
    SELECT a.id AS agent_id, b.id AS block_id, b.label, a.organization_id
    FROM agents a JOIN blocks b ON b.organization_id = a.organization_id
    WHERE a.organization_id = %(org)s AND a.id = %(agent_id)s AND b.id = %(block_id)s
), attached AS (
    INSERT INTO agents_blocks (agent_id, block_id, block_label, organization_id)
    SELECT agent_id, block_id, label, organization_id FROM pair
    ON CONFLICT (agent_id, block_id) DO NOTHING
)
SELECT count(*) AS found FROM pair
"""
# A block attached to a primary reaches its sleeptime agents too, as in Letta; one whose
# label an agent already has (its own memory_persona) is left off that agent.
ATTACH_TO_SLEEPTIME_AGENTS = """
INSERT INTO agents_blocks (agent_id, block_id, block_label, organization_id)
SELECT a.id, b.id, b.label, a.organization_id
FROM agents a JOIN blocks b ON b.organization_id = a.organization_id
WHERE a.organization_id = %(org)s AND a.id = ANY(%(agent_ids)s) AND b.id = %(block_id)s
  AND a.agent_type = 'sleeptime_agent'
ON CONFLICT DO NOTHING
"""
DETACH_BLOCK = """
DELETE FROM agents_blocks
WHERE organization_id = %(org)s AND agent_id = %(agent_id)s AND block_id = %(block_id)s
"""
SELECT_BLOCK_AGENT_IDS = """
SELECT agent_id FROM agents_blocks WHERE organization_id = %(org)s AND block_id = %(block_id)s
ORDER BY attached_at, agent_id
"""

Actor = Literal["user", "agent", "system"]


def create(
    conn: Connection, block: Block, *, actor_type: Actor = "user", actor_id: str | None = None
) -> Block:
    params = to_params(block, json_fields=("metadata",))
    row = conn.execute(
        INSERT_BLOCK, {**params, "actor_type": actor_type, "actor_id": actor_id}
    ).fetchone()
    return Block.model_validate(row)


def get(conn: Connection, org_id: str, block_id: str) -> Block | None:
    return from_row(Block, conn.execute(SELECT_BLOCK, {"org": org_id, "id": block_id}).fetchone())


def update(
    conn: Connection,
    block: Block,
    *,
    expected_version: int,
    actor_type: Actor = "user",
    actor_id: str | None = None,
) -> Block:
    """Write `block` if its stored version is still `expected_version`; bump it, keep history."""
    params = to_params(block, json_fields=("metadata",))
    row = conn.execute(
        UPDATE_BLOCK,
        {
            **params,
            "expected_version": expected_version,
            "actor_type": actor_type,
            "actor_id": actor_id,
        },
    ).fetchone()
    if row is None:
        raise VersionConflictError(
            f"Block {block.id} changed since version {expected_version} was read"
        )
    return Block.model_validate(row)


def delete(conn: Connection, org_id: str, block_id: str) -> bool:
    return conn.execute(DELETE_BLOCK, {"org": org_id, "id": block_id}).rowcount == 1


def prepend_history(conn: Connection, block: Block, earlier: list[BlockHistoryEntry]) -> None:
    """Give a block just created the versions it had before (oldest first)."""
    if not earlier:
        return
    entries = [e.model_dump(mode="json") | {"version": n} for n, e in enumerate(earlier, 1)]
    params = {"org": block.organization_id, "id": block.id, "n": len(earlier)}
    conn.execute(SHIFT_HISTORY, params)
    conn.execute(SHIFT_VERSION, params)
    conn.execute(INSERT_HISTORY, {**params, "entries": Jsonb(entries)})


def history(conn: Connection, org_id: str, block_id: str) -> list[BlockHistoryEntry]:
    rows = conn.execute(SELECT_HISTORY, {"org": org_id, "id": block_id}).fetchall()
    return [BlockHistoryEntry.model_validate(r) for r in rows]


def list_blocks(
    conn: Connection,
    org_id: str,
    *,
    label: str | None = None,
    search: BlockSearch | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: int = 50,
    order: Order = "desc",
) -> list[Block]:
    """A page of the organization's blocks; `search` as Letta's list filters (parts of
    label, value or description, any case; template name; how many agents a block is
    attached to; the identities it is linked to)."""
    where = search or BlockSearch()
    fields = {
        "org": sql.Literal(org_id),
        "label": sql.Literal(label),
        "identity": sql.Literal(where.identity_id),
        "keys": sql.Literal(where.identifier_keys or None),
        "label_part": sql.Literal(contained(where.label_search)),
        "value_part": sql.Literal(contained(where.value_search)),
        "about_part": sql.Literal(contained(where.description_search)),
        "name": sql.Literal(where.name),
        "gt": sql.Literal(where.agents_gt),
        "lt": sql.Literal(where.agents_lt),
        "eq": sql.Literal(where.agents_eq or None),
    }
    return filtered_page(
        conn,
        LIST_BLOCKS,
        Block,
        "blocks",
        fields,
        after=after,
        before=before,
        limit=limit,
        order=order,
    )


LIST_BLOCKS = """
SELECT * FROM blocks b WHERE organization_id = {org}
  AND ({label}::text IS NULL OR label = {label})
  AND ({identity}::text IS NULL OR EXISTS (SELECT 1 FROM identities_blocks ib
       WHERE ib.block_id = b.id AND ib.identity_id = {identity}))
  AND ({keys}::text[] IS NULL OR EXISTS (
       SELECT 1 FROM identities_blocks ib JOIN identities i ON i.id = ib.identity_id
       WHERE ib.block_id = b.id AND i.identifier_key = ANY({keys})))
  AND ({label_part}::text IS NULL OR {label}::text IS NOT NULL
       OR label ILIKE '%' || {label_part} || '%')
  AND ({value_part}::text IS NULL OR value ILIKE '%' || {value_part} || '%')
  AND ({about_part}::text IS NULL OR description ILIKE '%' || {about_part} || '%')
  AND ({name}::text IS NULL OR template_name = {name})
  AND ({gt}::int IS NULL
       OR (SELECT count(*) FROM agents_blocks ab WHERE ab.block_id = b.id) > {gt})
  AND ({lt}::int IS NULL
       OR (SELECT count(*) FROM agents_blocks ab WHERE ab.block_id = b.id) < {lt})
  AND ({eq}::int[] IS NULL
       OR (SELECT count(*) FROM agents_blocks ab WHERE ab.block_id = b.id) = ANY({eq}))
  AND {cursor}
ORDER BY {order_by} LIMIT {limit}
"""


SELECT_AGENTS_BLOCKS = """
SELECT ab.agent_id AS of_agent, b.* FROM agents_blocks ab JOIN blocks b ON b.id = ab.block_id
WHERE ab.organization_id = %(org)s AND ab.agent_id = ANY(%(agents)s)
ORDER BY ab.attached_at, b.id
"""


def for_agents(conn: Connection, org_id: str, agent_ids: list[str]) -> dict[str, list[Block]]:
    return per_agent(conn, SELECT_AGENTS_BLOCKS, Block, org_id, agent_ids)


def for_agent(conn: Connection, org_id: str, agent_id: str) -> list[Block]:
    return for_agents(conn, org_id, [agent_id])[agent_id]


def for_agent_by_label(conn: Connection, org_id: str, agent_id: str, label: str) -> Block | None:
    row = conn.execute(
        SELECT_AGENT_BLOCK_BY_LABEL, {"org": org_id, "agent_id": agent_id, "label": label}
    ).fetchone()
    return from_row(Block, row)


def attach(conn: Connection, org_id: str, agent_id: str, block_id: str) -> bool:
    """Attach a block to an agent. False when either is unknown in this organization.

    A second block with the same label on one agent violates `agents_blocks_one_label`.
    """
    params = {"org": org_id, "agent_id": agent_id, "block_id": block_id}
    row = conn.execute(ATTACH_BLOCK, params).fetchone()
    return bool(row and row["found"])


def attach_to_sleeptime_agents(
    conn: Connection, org_id: str, agent_ids: list[str], block_id: str
) -> None:
    """Attach a block to each sleeptime agent of `agent_ids` that has none of its label."""
    params = {"org": org_id, "agent_ids": agent_ids, "block_id": block_id}
    conn.execute(ATTACH_TO_SLEEPTIME_AGENTS, params)


def detach(conn: Connection, org_id: str, agent_id: str, block_id: str) -> bool:
    params = {"org": org_id, "agent_id": agent_id, "block_id": block_id}
    return conn.execute(DETACH_BLOCK, params).rowcount == 1


def agent_ids(conn: Connection, org_id: str, block_id: str) -> list[str]:
    rows = conn.execute(SELECT_BLOCK_AGENT_IDS, {"org": org_id, "block_id": block_id}).fetchall()
    return [r["agent_id"] for r in rows]


COUNT_BLOCKS = "SELECT count(*) AS n FROM blocks WHERE organization_id = %(org)s"


def count(conn: Connection, org_id: str) -> int:
    row = conn.execute(COUNT_BLOCKS, {"org": org_id}).fetchone()
    return int(row["n"]) if row else 0
