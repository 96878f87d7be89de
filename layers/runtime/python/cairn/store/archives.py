"""Archives and passages (archival memory). Vector search comes with the embeddings work."""

from __future__ import annotations

from cairn.domain.passages import Archive, Passage
from cairn.store.db import Connection
from cairn.store.rows import Order, from_row, page, to_params

INSERT_ARCHIVE = """
INSERT INTO archives (id, organization_id, name, description, embedding_config, metadata,
                      created_at, updated_at)
VALUES (%(id)s, %(organization_id)s, %(name)s, %(description)s, %(embedding_config)s,
        %(metadata)s, %(created_at)s, %(updated_at)s)
RETURNING *
"""
SELECT_ARCHIVE = "SELECT * FROM archives WHERE organization_id = %(org)s AND id = %(id)s"
ATTACH_ARCHIVE = """
INSERT INTO archives_agents (archive_id, agent_id, organization_id, is_owner)
SELECT ar.id, a.id, a.organization_id, %(is_owner)s
FROM archives ar JOIN agents a ON a.organization_id = ar.organization_id
WHERE ar.organization_id = %(org)s AND ar.id = %(archive_id)s AND a.id = %(agent_id)s
ON CONFLICT (archive_id, agent_id) DO NOTHING
"""
# The agent's own (default) archive: the oldest one it owns.
SELECT_AGENT_ARCHIVE = """
SELECT ar.* FROM archives_agents aa JOIN archives ar ON ar.id = aa.archive_id
WHERE aa.organization_id = %(org)s AND aa.agent_id = %(agent_id)s AND aa.is_owner
ORDER BY ar.created_at, ar.id LIMIT 1
"""

# An identical text already in the archive is not stored again; the caller is told which
# passages were new (RETURNING lists only inserted rows).
INSERT_PASSAGE = """
INSERT INTO passages (id, organization_id, archive_id, text, content_hash, embedding,
                      embedding_config, tags, metadata, created_at)
VALUES (%(id)s, %(organization_id)s, %(archive_id)s, %(text)s, %(content_hash)s, %(embedding)s,
        %(embedding_config)s, %(tags)s, %(metadata)s, %(created_at)s)
ON CONFLICT (archive_id, content_hash) DO NOTHING
RETURNING *
"""
SELECT_PASSAGE = "SELECT * FROM passages WHERE organization_id = %(org)s AND id = %(id)s"
SELECT_PASSAGE_BY_HASH = """
SELECT * FROM passages
WHERE organization_id = %(org)s AND archive_id = %(archive_id)s AND content_hash = %(hash)s
"""
DELETE_PASSAGE = "DELETE FROM passages WHERE organization_id = %(org)s AND id = %(id)s"
# Kept by the writes (migration 0010): one row, however large the archive.
COUNT_PASSAGES = """
SELECT s.passages AS n FROM archive_stats s JOIN archives a ON a.id = s.archive_id
WHERE a.organization_id = %(org)s AND s.archive_id = %(archive_id)s
"""


def count_all_passages(conn: Connection, org_id: str) -> int:
    """Every archival passage of the organization (from the kept counts: one row an archive)."""
    row = conn.execute(
        "SELECT coalesce(sum(s.passages), 0) AS n FROM archive_stats s"
        " JOIN archives a ON a.id = s.archive_id WHERE a.organization_id = %s",
        (org_id,),
    ).fetchone()
    return int(row["n"]) if row else 0


def create_archive(conn: Connection, archive: Archive) -> Archive:
    params = to_params(archive, json_fields=("embedding_config", "metadata"))
    return Archive.model_validate(conn.execute(INSERT_ARCHIVE, params).fetchone())


def get_archive(conn: Connection, org_id: str, archive_id: str) -> Archive | None:
    row = conn.execute(SELECT_ARCHIVE, {"org": org_id, "id": archive_id}).fetchone()
    return from_row(Archive, row)


def attach_archive(
    conn: Connection, org_id: str, archive_id: str, agent_id: str, *, is_owner: bool = True
) -> None:
    params = {"org": org_id, "archive_id": archive_id, "agent_id": agent_id, "is_owner": is_owner}
    conn.execute(ATTACH_ARCHIVE, params)


def archive_for_agent(conn: Connection, org_id: str, agent_id: str) -> Archive | None:
    row = conn.execute(SELECT_AGENT_ARCHIVE, {"org": org_id, "agent_id": agent_id}).fetchone()
    return from_row(Archive, row)


def passage_params(passage: Passage) -> dict[str, object]:
    params = to_params(passage, json_fields=("embedding_config", "metadata"))
    params["content_hash"] = passage.content_hash
    return params


def insert_passage(conn: Connection, passage: Passage) -> tuple[Passage, bool]:
    """Store a passage; (stored passage, True) if new, (the existing one, False) if a duplicate."""
    row = conn.execute(INSERT_PASSAGE, passage_params(passage)).fetchone()
    if row is not None:
        return Passage.model_validate(row), True
    existing = conn.execute(
        SELECT_PASSAGE_BY_HASH,
        {
            "org": passage.organization_id,
            "archive_id": passage.archive_id,
            "hash": passage.content_hash,
        },
    ).fetchone()
    return Passage.model_validate(existing), False


def get_passage(conn: Connection, org_id: str, passage_id: str) -> Passage | None:
    row = conn.execute(SELECT_PASSAGE, {"org": org_id, "id": passage_id}).fetchone()
    return None if row is None else Passage.model_validate(row)


def delete_passage(conn: Connection, org_id: str, passage_id: str) -> bool:
    return conn.execute(DELETE_PASSAGE, {"org": org_id, "id": passage_id}).rowcount == 1


def list_passages(
    conn: Connection,
    org_id: str,
    archive_id: str,
    *,
    after: str | None = None,
    before: str | None = None,
    limit: int = 100,
    order: Order = "asc",
) -> list[Passage]:
    return page(
        conn,
        "passages",
        Passage,
        org_id,
        equals={"archive_id": archive_id},
        after=after,
        before=before,
        limit=limit,
        order=order,
    )


def count_passages(conn: Connection, org_id: str, archive_id: str) -> int:
    row = conn.execute(COUNT_PASSAGES, {"org": org_id, "archive_id": archive_id}).fetchone()
    return int(row["n"]) if row else 0


ARCHIVE_TAGS = """
SELECT s.tags FROM archive_stats s JOIN archives a ON a.id = s.archive_id
WHERE a.organization_id = %(org)s AND s.archive_id = %(archive_id)s
"""


def archive_tags(conn: Connection, org_id: str, archive_id: str) -> list[str]:
    row = conn.execute(ARCHIVE_TAGS, {"org": org_id, "archive_id": archive_id}).fetchone()
    return list(row["tags"]) if row else []


def by_content_hash(conn: Connection, org_id: str, archive_id: str, digest: str) -> Passage | None:
    params = {"org": org_id, "archive_id": archive_id, "hash": digest}
    row = conn.execute(SELECT_PASSAGE_BY_HASH, params).fetchone()
    return None if row is None else Passage.model_validate(row)


UPDATE_ARCHIVE = """
UPDATE archives SET name = %(name)s, description = %(description)s, metadata = %(metadata)s,
                    updated_at = now()
WHERE organization_id = %(organization_id)s AND id = %(id)s
RETURNING *
"""
DELETE_ARCHIVE = "DELETE FROM archives WHERE organization_id = %(org)s AND id = %(id)s"
DETACH_ARCHIVE = """
DELETE FROM archives_agents
WHERE organization_id = %(org)s AND archive_id = %(archive_id)s AND agent_id = %(agent_id)s
"""
ARCHIVE_AGENT_IDS = """
SELECT agent_id FROM archives_agents
WHERE organization_id = %(org)s AND archive_id = %(archive_id)s ORDER BY agent_id
"""


def list_archives(
    conn: Connection,
    org_id: str,
    *,
    name: str | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: int = 50,
    order: Order = "desc",
) -> list[Archive]:
    return page(
        conn,
        "archives",
        Archive,
        org_id,
        equals={"name": name},
        after=after,
        before=before,
        limit=limit,
        order=order,
    )


def update_archive(conn: Connection, archive: Archive) -> Archive:
    params = to_params(archive, json_fields=("embedding_config", "metadata"))
    return Archive.model_validate(conn.execute(UPDATE_ARCHIVE, params).fetchone())


def delete_archive(conn: Connection, org_id: str, archive_id: str) -> bool:
    return conn.execute(DELETE_ARCHIVE, {"org": org_id, "id": archive_id}).rowcount == 1


def detach_archive(conn: Connection, org_id: str, archive_id: str, agent_id: str) -> bool:
    params = {"org": org_id, "archive_id": archive_id, "agent_id": agent_id}
    return conn.execute(DETACH_ARCHIVE, params).rowcount == 1


def agent_ids(conn: Connection, org_id: str, archive_id: str) -> list[str]:
    rows = conn.execute(ARCHIVE_AGENT_IDS, {"org": org_id, "archive_id": archive_id}).fetchall()
    return [r["agent_id"] for r in rows]
