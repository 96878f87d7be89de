"""Reading a Letta 0.16.x database (schema head 39577145c45d), never writing to it.

The connection is opened read-only (`default_transaction_read_only`), so no statement of
the import could change the Letta database even by mistake. Soft-deleted rows
(`is_deleted`) are left out. Table and column names are Letta's (`block`, `metadata_`,
`archival_passages`; see the fixtures' README).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row

Row = dict[str, Any]


def connect(url: str) -> psycopg.Connection[Row]:
    return psycopg.connect(
        url,
        row_factory=dict_row,
        autocommit=True,
        options="-c default_transaction_read_only=on",
    )


def revision(conn: psycopg.Connection[Row]) -> str | None:
    try:
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except psycopg.Error:
        return None
    return row["version_num"] if row else None


def organizations(conn: psycopg.Connection[Row]) -> list[Row]:
    return conn.execute(
        "SELECT id, name, created_at FROM organizations WHERE NOT is_deleted"
        " ORDER BY created_at, id"
    ).fetchall()


def tools(conn: psycopg.Connection[Row], org: str) -> list[Row]:
    return conn.execute(
        """SELECT id, name, description, tool_type, source_type, source_code, json_schema,
                  args_json_schema, return_char_limit, tags, pip_requirements, npm_requirements,
                  default_requires_approval, enable_parallel_execution, metadata_ AS metadata,
                  created_at
           FROM tools WHERE organization_id = %s AND NOT is_deleted ORDER BY created_at, id""",
        (org,),
    ).fetchall()


def blocks(conn: psycopg.Connection[Row], org: str) -> list[Row]:
    return conn.execute(
        """SELECT id, label, value, "limit", description, metadata_ AS metadata, read_only,
                  coalesce(hidden, false) AS hidden, created_at
           FROM block WHERE organization_id = %s AND NOT is_deleted ORDER BY created_at, id""",
        (org,),
    ).fetchall()


def agents(conn: psycopg.Connection[Row], org: str) -> list[Row]:
    """Each agent with its tags, blocks (in the order its prompt shows them) and tools."""
    return conn.execute(
        """SELECT a.id, a.name, a.description, a.agent_type, a.system, a.message_ids,
                  a.llm_config, a.embedding_config, a.tool_rules, a.metadata_ AS metadata,
                  a.timezone, a.max_files_open, a.per_file_view_window_char_limit,
                  a.enable_sleeptime, a.message_buffer_autoclear,
                  coalesce(a.hidden, false) AS hidden, a.compaction_settings, a.created_at,
                  coalesce((SELECT array_agg(t.tag ORDER BY t.tag) FROM agents_tags t
                            WHERE t.agent_id = a.id), '{}') AS tags,
                  coalesce((SELECT array_agg(b.block_id ORDER BY
                                      nullif(strpos(shown.blocks, '<' || bl.label || '>'), 0)
                                      NULLS LAST, b.ctid)
                            FROM blocks_agents b JOIN block bl ON bl.id = b.block_id
                            WHERE b.agent_id = a.id), '{}') AS block_ids,
                  coalesce((SELECT array_agg(t.tool_id ORDER BY t.tool_id)
                            FROM tools_agents t WHERE t.agent_id = a.id), '{}') AS tool_ids
           FROM agents a
           -- The memory section of the system message the model saw last: its blocks'
           -- order is the agent's (Letta keeps no order of its own: its prompt shows the
           -- blocks as the database returned them then).
           LEFT JOIN LATERAL (
               SELECT substr(t.txt, strpos(t.txt, '<memory_blocks>')) AS blocks
               FROM (SELECT coalesce(m.content -> 0 ->> 'text', m.text, '') AS txt
                     FROM messages m WHERE m.id = a.message_ids ->> 0) t
           ) shown ON true
           WHERE a.organization_id = %s AND NOT a.is_deleted
           ORDER BY a.created_at, a.id""",
        (org,),
    ).fetchall()


def messages(
    conn: psycopg.Connection[Row], agent_id: str, *, after_sequence: int, limit: int
) -> list[Row]:
    """An agent's messages in their order (Letta's global sequence), a page at a time."""
    return conn.execute(
        """SELECT id, role, text, content, name, tool_calls, tool_call_id, tool_returns,
                  step_id, run_id, otid, group_id, sender_id, batch_item_id, is_err, model,
                  approvals, approve, approval_request_id, denial_reason, created_at,
                  sequence_id
           FROM messages WHERE agent_id = %s AND NOT is_deleted AND sequence_id > %s
           ORDER BY sequence_id LIMIT %s""",
        (agent_id, after_sequence, limit),
    ).fetchall()


def archives(conn: psycopg.Connection[Row], org: str) -> list[Row]:
    """Each archive with the agents it is attached to (owner first)."""
    return conn.execute(
        """SELECT ar.id, ar.name, ar.description, ar.metadata_ AS metadata,
                  ar.embedding_config, ar.created_at,
                  coalesce((SELECT json_agg(json_build_object('agent_id', aa.agent_id,
                                                              'is_owner', aa.is_owner)
                                            ORDER BY aa.is_owner DESC, aa.agent_id)
                            FROM archives_agents aa WHERE aa.archive_id = ar.id), '[]') AS agents
           FROM archives ar WHERE ar.organization_id = %s AND NOT ar.is_deleted
           ORDER BY ar.created_at, ar.id""",
        (org,),
    ).fetchall()


def passages(
    conn: psycopg.Connection[Row], archive_id: str, *, after_id: str, limit: int
) -> list[Row]:
    """An archive's passages a page at a time; the embedding as text (no vector type needed
    on this side), zero-padded to 4096 by Letta."""
    return conn.execute(
        """SELECT id, text, embedding::text AS embedding, embedding_config, tags,
                  metadata_ AS metadata, created_at
           FROM archival_passages WHERE archive_id = %s AND NOT is_deleted AND id > %s
           ORDER BY id LIMIT %s""",
        (archive_id, after_id, limit),
    ).fetchall()


def groups(conn: psycopg.Connection[Row], org: str) -> list[Row]:
    return conn.execute(
        """SELECT g.id, g.manager_type, g.manager_agent_id, g.description,
                  g.sleeptime_agent_frequency, g.turns_counter, g.last_processed_message_id,
                  g.max_turns, g.termination_token, g.max_message_buffer_length,
                  g.min_message_buffer_length, g.hidden, g.created_at,
                  coalesce((SELECT array_agg(ga.agent_id ORDER BY ga.agent_id)
                            FROM groups_agents ga WHERE ga.group_id = g.id), '{}') AS member_ids,
                  g.agent_ids
           FROM groups g WHERE g.organization_id = %s AND NOT g.is_deleted
           ORDER BY g.created_at, g.id""",
        (org,),
    ).fetchall()


def runs(conn: psycopg.Connection[Row], org: str) -> list[Row]:
    return conn.execute(
        """SELECT id, agent_id, status, stop_reason, coalesce(background, false) AS background,
                  metadata_ AS metadata, request_config, callback_url, ttft_ns,
                  total_duration_ns, created_at, completed_at
           FROM runs WHERE organization_id = %s AND NOT is_deleted ORDER BY created_at, id""",
        (org,),
    ).fetchall()


def block_history(conn: psycopg.Connection[Row], org: str) -> list[Row]:
    """Earlier versions of the organization's blocks, oldest first per block."""
    return conn.execute(
        """SELECT block_id, label, value, "limit", description, metadata_ AS metadata,
                  actor_type, actor_id, created_at
           FROM block_history WHERE organization_id = %s AND NOT is_deleted
           ORDER BY block_id, sequence_number""",
        (org,),
    ).fetchall()


def providers(conn: psycopg.Connection[Row], org: str) -> list[Row]:
    """The organization's own providers (Letta's BYOK ones; base providers have no
    organization), with their keys as stored (`*_enc`, else the older plaintext columns)."""
    return conn.execute(
        """SELECT id, name, provider_type, base_url, region, api_version, created_at,
                  coalesce(api_key_enc, api_key) AS api_key,
                  coalesce(access_key_enc, access_key) AS access_key
           FROM providers
           WHERE organization_id = %s AND NOT is_deleted AND provider_category = 'byok'
           ORDER BY created_at, id""",
        (org,),
    ).fetchall()


def identities(conn: psycopg.Connection[Row], org: str) -> list[Row]:
    """The organization's identities, with the agents and blocks linked to each."""
    return conn.execute(
        """SELECT i.id, i.identifier_key, i.name, i.identity_type, i.project_id, i.properties,
                  i.created_at,
                  array(SELECT agent_id FROM identities_agents WHERE identity_id = i.id
                        ORDER BY 1) AS agent_ids,
                  array(SELECT block_id FROM identities_blocks WHERE identity_id = i.id
                        ORDER BY 1) AS block_ids
           FROM identities i WHERE i.organization_id = %s AND NOT i.is_deleted
           ORDER BY i.created_at, i.id""",
        (org,),
    ).fetchall()


def agent_secrets(conn: psycopg.Connection[Row], org: str) -> list[Row]:
    """The organization's agents' tool environment (Letta's `secrets`), values as stored
    (`value_enc`, else the older plaintext `value`)."""
    return conn.execute(
        """SELECT agent_id, key, description, coalesce(value_enc, value) AS value
           FROM agent_environment_variables
           WHERE organization_id = %s AND NOT is_deleted ORDER BY agent_id, key""",
        (org,),
    ).fetchall()


def sources(conn: psycopg.Connection[Row], org: str) -> list[Row]:
    """Folders (Letta's sources) with the agents they are attached to."""
    return conn.execute(
        """SELECT s.id, s.name, s.description, s.instructions, s.metadata_ AS metadata,
                  s.embedding_config, s.created_at,
                  coalesce((SELECT json_agg(sa.agent_id ORDER BY sa.agent_id)
                            FROM sources_agents sa WHERE sa.source_id = s.id), '[]') AS agent_ids
           FROM sources s WHERE s.organization_id = %s AND NOT s.is_deleted
           ORDER BY s.created_at, s.id""",
        (org,),
    ).fetchall()


def source_files(conn: psycopg.Connection[Row], source_id: str) -> list[Row]:
    """A folder's files with their text (Letta keeps it in file_contents)."""
    return conn.execute(
        """SELECT f.id, f.file_name, f.original_file_name, f.file_type, f.file_size,
                  f.processing_status, f.error_message, f.created_at,
                  (SELECT c.text FROM file_contents c WHERE c.file_id = f.id AND NOT c.is_deleted
                   ORDER BY c.created_at DESC LIMIT 1) AS content
           FROM files f WHERE f.source_id = %s AND NOT f.is_deleted
           ORDER BY f.created_at, f.id""",
        (source_id,),
    ).fetchall()


def file_passages(conn: psycopg.Connection[Row], file_id: str) -> list[Row]:
    """A file's chunks in the order Letta made them; embeddings as text, zero-padded."""
    return conn.execute(
        """SELECT id, text, embedding::text AS embedding, embedding_config, created_at
           FROM source_passages WHERE file_id = %s AND NOT is_deleted
           ORDER BY created_at, id""",
        (file_id,),
    ).fetchall()


def files_agents(conn: psycopg.Connection[Row], org: str) -> list[Row]:
    return conn.execute(
        """SELECT agent_id, file_id, source_id, file_name, is_open, visible_content,
                  start_line, end_line, last_accessed_at
           FROM files_agents WHERE organization_id = %s AND NOT is_deleted""",
        (org,),
    ).fetchall()
