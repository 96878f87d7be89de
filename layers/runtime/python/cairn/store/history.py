"""An agent's history (migration 0035): a row per version in `agent_versions`, and the
context window's changes in `context_changes`. Writers log as they write (the checkpoint in
its one pipelined transaction, the API's creates and updates, rewinds and forks); what a row
keeps of the agent is read by the database from the rows just written, so a step sends no
more than its ids."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from cairn.store.db import Connection, Database
from cairn.store.sql_text import Native

# The agent's settings a version keeps (create, update, rewind, fork), as the agent row has them.
CONFIG_KEYS = (
    "name",
    "description",
    "agent_type",
    "system",
    "llm_config",
    "embedding_config",
    "compaction_settings",
    "tool_rules",
    "tags",
    "metadata",
    "timezone",
    "max_files_open",
    "per_file_view_window_char_limit",
    "enable_sleeptime",
    "message_buffer_autoclear",
)
CONFIG_OF = "jsonb_build_object({})".format(
    ", ".join(f"'{k}', {'to_jsonb(a.tags)' if k == 'tags' else f'a.{k}'}" for k in CONFIG_KEYS)
)
# One row for the version just written. Blocks (each at its version) and tools are read as
# they stand in this transaction; the settings when `with_config`; the system message's text
# when `system_id` names it (a checkpoint that rewrote it, a create, an update).
INSERT_VERSION = f"""
INSERT INTO agent_versions (agent_id, version, organization_id, kind, step_id, run_id, blocks,
                            tool_ids, config, system, passage_ids, detail)
SELECT a.id, %(version)s, a.organization_id, %(kind)s, %(step_id)s, %(run_id)s,
       (SELECT coalesce(jsonb_object_agg(b.id, b.version), '{{}}') FROM agents_blocks ab
        JOIN blocks b ON b.id = ab.block_id WHERE ab.agent_id = a.id),
       CASE WHEN %(kind)s <> 'step' THEN  -- a step changes no tools: "as before" (0043)
           ARRAY(SELECT t.tool_id FROM agents_tools t WHERE t.agent_id = a.id
                 ORDER BY t.attached_at, t.tool_id) END,
       CASE WHEN %(with_config)s THEN {CONFIG_OF} END,
       (SELECT m.content FROM messages m WHERE m.id = %(system_id)s AND m.role = 'system'),
       %(passage_ids)s, %(detail)s
FROM agents a WHERE a.organization_id = %(org)s AND a.id = %(agent_id)s
ON CONFLICT (agent_id, version) DO NOTHING
"""
# Behind RDS Proxy (no prepared statements) PostgreSQL planned this on every step, about 0.17 ms of
# its CPU: a function too, migration 0050 (store/sql_text.py; a change needs a new migration).
INSERTING_VERSION = Native.of(INSERT_VERSION).served(
    "cairn_insert_version",
    ("bigint", "text", "text", "text", "boolean", "text", "text[]", "jsonb", "text", "text"),
)
# A write of the window, logged: one row per entry added or removed. (A duplicate delivery of
# a step finds its rows there already, and is rolled back by the checkpoint's own checks.)
INSERT_CHANGES = """
INSERT INTO context_changes (agent_id, version, position, added, message_id)
SELECT %(agent_id)s, %(version)s, c.position, c.added, c.message_id
FROM unnest(%(positions)s::bigint[], %(added)s::boolean[], %(ids)s::text[])
     AS c (position, added, message_id)
ON CONFLICT DO NOTHING
"""
# Planned on every step behind RDS Proxy, about 0.02 ms: a function too (migration 0051).
INSERTING_CHANGES = Native.of(INSERT_CHANGES).served(
    "cairn_insert_changes", ("text", "bigint", "bigint[]", "boolean[]", "text[]")
)


def version_params(
    org: str,
    agent_id: str,
    version: int,
    kind: str,
    *,
    step_id: str | None = None,
    run_id: str | None = None,
    with_config: bool = False,
    system_id: str | None = None,
    passage_ids: list[str] | None = None,
    detail: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "org": org,
        "agent_id": agent_id,
        "version": version,
        "kind": kind,
        "step_id": step_id,
        "run_id": run_id,
        "with_config": with_config,
        "system_id": system_id,
        "passage_ids": passage_ids or [],
        "detail": Jsonb(detail or {}),
    }


def change_params(
    agent_id: str,
    version: int,
    removed: list[tuple[int, str]],
    added: list[tuple[int, str]],
) -> dict[str, Any]:
    both = [(p, False, i) for p, i in removed] + [(p, True, i) for p, i in added]
    return {
        "agent_id": agent_id,
        "version": version,
        "positions": [p for p, _, _ in both],
        "added": [a for _, a, _ in both],
        "ids": [i for _, _, i in both],
    }


def record(conn: Connection, org: str, agent_id: str, version: int, kind: str, **kw: Any) -> None:
    INSERTING_VERSION.execute(conn, version_params(org, agent_id, version, kind, **kw))


# -- reading ---------------------------------------------------------------------------------


def _inherited(column: str) -> str:
    """A column kept only when written (settings, system text, tools): the newest value
    before version `v`, for a row `v` that keeps none."""
    return f"""(SELECT o.{column} FROM agent_versions o
       WHERE o.agent_id = v.agent_id AND o.version < v.version AND o.{column} IS NOT NULL
       ORDER BY o.version DESC LIMIT 1)"""


# A version as written, its tools the newest list at or before it (a step's row keeps none).
VERSION_COLUMNS = f"""
v.agent_id, v.version, v.organization_id, v.kind, v.step_id, v.run_id, v.blocks, v.config,
v.system, v.passage_ids, v.detail, v.created_at,
coalesce(v.tool_ids, {_inherited("tool_ids")}, '{{}}') AS tool_ids
"""
SELECT_PAGE = f"""
SELECT {VERSION_COLUMNS} FROM agent_versions v
WHERE v.organization_id = %(org)s AND v.agent_id = %(agent_id)s
  AND (%(before)s::bigint IS NULL OR v.version < %(before)s)
ORDER BY v.version DESC LIMIT %(limit)s
"""
SELECT_ONE = f"""
SELECT {VERSION_COLUMNS} FROM agent_versions v
WHERE v.organization_id = %(org)s AND v.agent_id = %(agent_id)s AND v.version = %(version)s
"""
# The latest value of a column kept only when written (settings, system text), at or before.
SELECT_LATEST_OF = """
SELECT version, {column} AS value FROM agent_versions
WHERE organization_id = %(org)s AND agent_id = %(agent_id)s AND version <= %(version)s
  AND {column} IS NOT NULL
ORDER BY version DESC LIMIT 1
"""
WRITTEN_AFTER = """
SELECT EXISTS (SELECT 1 FROM agent_versions
               WHERE organization_id = %(org)s AND agent_id = %(agent_id)s
                 AND version > %(version)s AND {column} IS NOT NULL) AS later
"""
# The window at a version: at each position its last change up to then, if an addition (an
# addition and a removal at one position in one version: the addition is the later).
WINDOW_AT = """
SELECT position, message_id FROM (
    SELECT DISTINCT ON (position) position, message_id, added FROM context_changes
    WHERE agent_id = %(agent_id)s AND version <= %(version)s
    ORDER BY position, version DESC, added DESC
) last WHERE added ORDER BY position
"""
CHANGES_OF = """
SELECT version, position, added, message_id FROM context_changes
WHERE agent_id = %(agent_id)s AND version = ANY(%(versions)s)
ORDER BY version, added, position
"""


def page(
    conn: Connection, org: str, agent_id: str, *, before: int | None, limit: int
) -> list[dict[str, Any]]:
    params = {"org": org, "agent_id": agent_id, "before": before, "limit": limit}
    return list(conn.execute(SELECT_PAGE, params).fetchall())


def one(conn: Connection, org: str, agent_id: str, version: int) -> dict[str, Any] | None:
    params = {"org": org, "agent_id": agent_id, "version": version}
    return conn.execute(SELECT_ONE, params).fetchone()


def latest_of(
    conn: Connection, org: str, agent_id: str, version: int, column: str
) -> tuple[Any, bool]:
    """(the value of `column` ("config" or "system") kept at or before the version, whether a
    later version wrote it again)."""
    assert column in ("config", "system"), column
    params = {"org": org, "agent_id": agent_id, "version": version}
    row = conn.execute(SELECT_LATEST_OF.format(column=column), params).fetchone()
    later = conn.execute(WRITTEN_AFTER.format(column=column), params).fetchone()
    return (None if row is None else row["value"]), bool(later and later["later"])


def window_at(conn: Connection, agent_id: str, version: int) -> list[tuple[int, str]]:
    rows = conn.execute(WINDOW_AT, {"agent_id": agent_id, "version": version}).fetchall()
    return [(r["position"], r["message_id"]) for r in rows]


def changes_of(
    conn: Connection, agent_id: str, versions: list[int]
) -> dict[int, dict[str, list[str]]]:
    """Each version's window changes: {"added": [ids], "removed": [ids]} in position order."""
    found: dict[int, dict[str, list[str]]] = {}
    rows = conn.execute(CHANGES_OF, {"agent_id": agent_id, "versions": versions}).fetchall()
    for r in rows:
        kind = "added" if r["added"] else "removed"
        found.setdefault(r["version"], {"added": [], "removed": []})[kind].append(r["message_id"])
    return found


BLOCK_VERSIONS = """
SELECT h.* FROM block_history h
JOIN jsonb_each_text(%(wanted)s) AS w (block_id, version)
  ON h.block_id = w.block_id AND h.version = w.version::bigint
WHERE h.organization_id = %(org)s
"""
BLOCK_LABELS = """
SELECT h.block_id, h.version, h.label FROM block_history h
JOIN unnest(%(ids)s::text[], %(versions)s::bigint[]) AS w (block_id, version)
  ON h.block_id = w.block_id AND h.version = w.version
WHERE h.organization_id = %(org)s
"""
TOOL_NAMES = "SELECT id, name FROM tools WHERE organization_id = %(org)s AND id = ANY(%(ids)s)"
SYSTEM_CONTENT = """
SELECT content FROM messages WHERE organization_id = %(org)s AND id = %(id)s AND role = 'system'
"""


def block_versions(conn: Connection, org: str, wanted: dict[str, int]) -> list[dict[str, Any]]:
    """The block_history rows of those blocks at those versions (gone blocks: none)."""
    rows = conn.execute(BLOCK_VERSIONS, {"org": org, "wanted": Jsonb(wanted)}).fetchall()
    return list(rows)


def block_labels(conn: Connection, org: str, pairs: list[tuple[str, int]]) -> list[dict[str, Any]]:
    params = {"org": org, "ids": [b for b, _ in pairs], "versions": [v for _, v in pairs]}
    return list(conn.execute(BLOCK_LABELS, params).fetchall())


def tool_names(conn: Connection, org: str, ids: list[str]) -> dict[str, str]:
    rows = conn.execute(TOOL_NAMES, {"org": org, "ids": ids}).fetchall()
    return {r["id"]: r["name"] for r in rows}


def system_content(conn: Connection, org: str, message_id: str) -> Any:
    row = conn.execute(SYSTEM_CONTENT, {"org": org, "id": message_id}).fetchone()
    return None if row is None else row["content"]


# -- rewinding -------------------------------------------------------------------------------

# Messages newer than the window a rewind returns to, out of it: marked, never deleted (a
# later rewind that brings them back into the window unmarks them).
MARK_REWOUND = """
UPDATE messages SET rewound_at = now()
WHERE organization_id = %(org)s AND agent_id = %(agent_id)s AND rewound_at IS NULL
  AND NOT (id = ANY(%(window)s))
  AND sequence_id > (SELECT coalesce(max(sequence_id), 0) FROM messages
                     WHERE organization_id = %(org)s AND id = ANY(%(window)s))
RETURNING id
"""
UNMARK_REWOUND = """
UPDATE messages SET rewound_at = NULL
WHERE organization_id = %(org)s AND agent_id = %(agent_id)s AND id = ANY(%(window)s)
  AND rewound_at IS NOT NULL
"""
# Archival passages of the agent's archives written after a version's checkpoint committed
# (by their time: a passage's is its transaction's start, as a version's is).
PASSAGES_AFTER = """
SELECT p.id FROM passages p JOIN archives_agents aa ON aa.archive_id = p.archive_id
WHERE aa.organization_id = %(org)s AND aa.agent_id = %(agent_id)s AND p.created_at > %(at)s
ORDER BY p.created_at, p.id
"""


def mark_rewound(conn: Connection, org: str, agent_id: str, window: list[str]) -> list[str]:
    params = {"org": org, "agent_id": agent_id, "window": window}
    conn.execute(UNMARK_REWOUND, params)
    return [r["id"] for r in conn.execute(MARK_REWOUND, params).fetchall()]


def passages_after(conn: Connection, org: str, agent_id: str, at: Any) -> list[str]:
    rows = conn.execute(PASSAGES_AFTER, {"org": org, "agent_id": agent_id, "at": at}).fetchall()
    return [r["id"] for r in rows]


COPY_PASSAGES = """
INSERT INTO passages (id, organization_id, archive_id, text, content_hash, embedding,
                      embedding_config, tags, metadata, created_at)
SELECT 'passage-' || gen_random_uuid(), p.organization_id, %(into)s, p.text, p.content_hash,
       p.embedding, p.embedding_config, p.tags, p.metadata, p.created_at
FROM passages p
WHERE p.organization_id = %(org)s AND p.archive_id = %(from)s AND p.created_at <= %(at)s
ON CONFLICT DO NOTHING
"""


def copy_passages(conn: Connection, org: str, source: str, into: str, at: Any) -> int:
    """A fork's archival memory: the passages `source` held at that time, into `into`."""
    params = {"org": org, "from": source, "into": into, "at": at}
    return conn.execute(COPY_PASSAGES, params).rowcount


BUMP = """
UPDATE agents SET version = version + 1, updated_at = now()
WHERE organization_id = %(org)s AND id = %(agent_id)s
RETURNING version
"""


def bump(conn: Connection, org: str, agent_id: str, what: str) -> int | None:
    """A change made through the agent's own routes (a block or tool attached or detached, a
    block edited by its label, a memory tool run outside a step) as a version of the agent:
    its number moves (a step that read the one before checks in again) and the history keeps
    a row saying `what` changed. None when the agent is gone."""
    row = conn.execute(BUMP, {"org": org, "agent_id": agent_id}).fetchone()
    if row is None:
        return None
    record(conn, org, agent_id, row["version"], "update", detail={"changed": what})
    return int(row["version"])


# -- retention -------------------------------------------------------------------------------

# Agents with history older than the cutoff, each with its base: the newest version before
# the cutoff, which stays (folded: the window and what it inherits written into it).
PRUNABLE = """
SELECT b.agent_id, b.version FROM (
    SELECT DISTINCT ON (agent_id) agent_id, version FROM agent_versions
    WHERE created_at < now() - make_interval(secs => %(seconds)s)
    ORDER BY agent_id, version DESC
) b
WHERE EXISTS (SELECT 1 FROM agent_versions o
              WHERE o.agent_id = b.agent_id AND o.version < b.version)
LIMIT %(agents)s
"""
FOLD_BASE = f"""
UPDATE agent_versions v SET
    config = coalesce(v.config, {_inherited("config")}),
    system = coalesce(v.system, {_inherited("system")}),
    tool_ids = coalesce(v.tool_ids, {_inherited("tool_ids")}, '{{}}')
WHERE v.agent_id = %(agent_id)s AND v.version = %(version)s
"""
DROP_CHANGES = (
    "DELETE FROM context_changes WHERE agent_id = %(agent_id)s AND version <= %(version)s"
)
DROP_VERSIONS = "DELETE FROM agent_versions WHERE agent_id = %(agent_id)s AND version < %(version)s"


def prune(db: Database, *, retention_days: float, agents: int = 100) -> int:
    """Forget history older than `retention_days`, up to `agents` agents a call (the sweeper
    calls again): each agent keeps its newest version before the cutoff as the base its later
    versions read from (its window, settings and system text written into it). Each agent in
    a transaction of its own, so a crash leaves it pruned or not."""
    with db.connection() as conn:
        params = {"seconds": retention_days * 86_400, "agents": agents}
        bases = [(r["agent_id"], r["version"]) for r in conn.execute(PRUNABLE, params)]
    for agent_id, version in bases:
        at = {"agent_id": agent_id, "version": version}
        with db.transaction() as conn:
            window = window_at(conn, agent_id, version)
            conn.execute(FOLD_BASE, at)
            conn.execute(DROP_CHANGES, at)
            INSERTING_CHANGES.execute(conn, change_params(agent_id, version, [], window))
            conn.execute(DROP_VERSIONS, at)
    return len(bases)
