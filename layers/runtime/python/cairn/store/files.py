"""Files of folders: their rows, parsed text, passages (chunks with embeddings), and each
agent's view of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql

from cairn.domain.folders import AgentFolder, FileAgent, FileMetadata, FilePassage
from cairn.store.db import Connection
from cairn.store.rows import Order, filtered_page, to_params
from cairn.store.search import in_transaction, vector_literal, vector_type

INSERT = """
INSERT INTO files (id, organization_id, folder_id, file_name, original_file_name, file_type,
                   file_size, object_key, processing_status, created_at, updated_at)
VALUES (%(id)s, %(organization_id)s, %(folder_id)s, %(file_name)s, %(original_file_name)s,
        %(file_type)s, %(file_size)s, %(object_key)s, %(processing_status)s, %(created_at)s,
        %(updated_at)s)
ON CONFLICT (folder_id, file_name) DO NOTHING
RETURNING *
"""
SELECT = "SELECT * FROM files WHERE organization_id = %(org)s AND id = %(id)s"
BY_ORIGINAL = """
SELECT * FROM files WHERE organization_id = %(org)s AND folder_id = %(folder_id)s
  AND original_file_name = %(name)s ORDER BY created_at, id
"""
COUNT_ORIGINAL = """
SELECT count(*) AS n FROM files WHERE folder_id = %(folder_id)s AND original_file_name = %(name)s
"""
LIST = """
SELECT * FROM files WHERE organization_id = {org} AND folder_id = {folder_id} AND {cursor}
ORDER BY {order_by} LIMIT {limit}
"""
DELETE = "DELETE FROM files WHERE organization_id = %(org)s AND id = %(id)s RETURNING object_key"
KEYS_OF_FOLDER = (
    "SELECT object_key FROM files WHERE organization_id = %(org)s AND folder_id = %(id)s"
)
STATUS = """
UPDATE files SET processing_status = %(status)s, error_message = %(error)s,
    total_chunks = COALESCE(%(total)s, total_chunks),
    chunks_embedded = COALESCE(%(embedded)s, chunks_embedded), updated_at = now()
WHERE organization_id = %(org)s AND id = %(id)s AND processing_status <> 'completed'
RETURNING *
"""
TOUCH = "UPDATE files SET updated_at = now() WHERE id = %(id)s"
UNFINISHED = """
SELECT organization_id, id FROM files
WHERE processing_status IN ('pending', 'parsing', 'embedding')
  AND updated_at < now() - make_interval(secs => %(older)s)
ORDER BY updated_at LIMIT %(limit)s
"""
PUT_CONTENT = """
INSERT INTO file_contents (file_id, organization_id, text) VALUES (%(id)s, %(org)s, %(text)s)
ON CONFLICT (file_id) DO UPDATE SET text = EXCLUDED.text
"""
CONTENT = "SELECT text FROM file_contents WHERE organization_id = %(org)s AND file_id = %(id)s"
ADD_PASSAGE = """
INSERT INTO file_passages (id, organization_id, folder_id, file_id, chunk_index, text,
                           embedding, embedding_config, created_at)
VALUES (%(id)s, %(organization_id)s, %(folder_id)s, %(file_id)s, %(chunk_index)s, %(text)s,
        %(embedding)s, %(embedding_config)s, %(created_at)s)
ON CONFLICT (file_id, chunk_index) DO NOTHING
"""
PASSAGES_DONE = "SELECT count(*) AS n FROM file_passages WHERE file_id = %(id)s"
LIST_PASSAGES = """
SELECT * FROM file_passages WHERE organization_id = {org} AND folder_id = {folder_id}
  AND {cursor} ORDER BY {order_by} LIMIT {limit}
"""
SEARCH = """
SELECT p.id, p.organization_id, p.folder_id, p.file_id, p.chunk_index, p.text,
       p.embedding_config, p.created_at, f.file_name,
       (p.embedding::{vt} <=> %(q)s::{vt}) AS distance
FROM file_passages p JOIN files f ON f.id = p.file_id
WHERE p.organization_id = %(org)s AND p.folder_id = ANY(%(folders)s)
  AND vector_dims(p.embedding) = %(dim)s
ORDER BY p.embedding::{vt} <=> %(q)s::{vt}
LIMIT %(limit)s
"""
STATS = """
SELECT f.id AS source_id, f.name AS source_name, count(x.id) AS file_count,
       COALESCE(sum(x.file_size), 0) AS total_size,
       COALESCE(jsonb_agg(jsonb_build_object('file_id', x.id, 'file_name', x.file_name,
                                             'file_size', x.file_size))
                FILTER (WHERE x.id IS NOT NULL), '[]') AS files
FROM folders f LEFT JOIN files x ON x.folder_id = f.id
WHERE f.organization_id = %(org)s GROUP BY f.id, f.name, f.created_at ORDER BY f.created_at, f.id
"""
_JSON = ("embedding_config",)


def create(conn: Connection, file: FileMetadata) -> FileMetadata | None:
    """The file stored; None if its folder has a file of that name already."""
    row = conn.execute(INSERT, to_params(file)).fetchone()
    return FileMetadata.model_validate(row) if row else None


def get(conn: Connection, org_id: str, file_id: str) -> FileMetadata | None:
    row = conn.execute(SELECT, {"org": org_id, "id": file_id}).fetchone()
    return FileMetadata.model_validate(row) if row else None


def by_original_name(
    conn: Connection, org_id: str, folder_id: str, name: str
) -> list[FileMetadata]:
    rows = conn.execute(BY_ORIGINAL, {"org": org_id, "folder_id": folder_id, "name": name})
    return [FileMetadata.model_validate(r) for r in rows.fetchall()]


def count_original_name(conn: Connection, folder_id: str, name: str) -> int:
    row = conn.execute(COUNT_ORIGINAL, {"folder_id": folder_id, "name": name}).fetchone()
    return int(row["n"]) if row else 0


def list_files(
    conn: Connection,
    org_id: str,
    folder_id: str,
    *,
    after: str | None,
    before: str | None,
    limit: int,
    order: Order,
) -> list[FileMetadata]:
    fields = {"org": sql.Literal(org_id), "folder_id": sql.Literal(folder_id)}
    return filtered_page(
        conn,
        LIST,
        FileMetadata,
        "files",
        fields,
        after=after,
        before=before,
        limit=limit,
        order=order,
    )


def delete(conn: Connection, org_id: str, file_id: str) -> str | None:
    """Delete the file (its text, passages and agents' views go with it); its object key."""
    row = conn.execute(DELETE, {"org": org_id, "id": file_id}).fetchone()
    return row["object_key"] if row else None


def object_keys(conn: Connection, org_id: str, folder_id: str) -> list[str]:
    return [r["object_key"] for r in conn.execute(KEYS_OF_FOLDER, {"org": org_id, "id": folder_id})]


def set_status(
    conn: Connection,
    org_id: str,
    file_id: str,
    status: str,
    *,
    error: str | None = None,
    total: int | None = None,
    embedded: int | None = None,
) -> FileMetadata | None:
    """Move an unfinished file on; None if it is gone or completed already."""
    params = {
        "org": org_id,
        "id": file_id,
        "status": status,
        "error": error,
        "total": total,
        "embedded": embedded,
    }
    row = conn.execute(STATUS, params).fetchone()
    return FileMetadata.model_validate(row) if row else None


def touch(conn: Connection, file_id: str) -> None:
    """Still being worked on: the sweeper leaves it alone a while longer."""
    conn.execute(TOUCH, {"id": file_id})


def unfinished(conn: Connection, *, older_than_seconds: float, limit: int) -> list[tuple[str, str]]:
    """(organization, file) of files whose processing stalled (every organization's)."""
    rows = conn.execute(UNFINISHED, {"older": older_than_seconds, "limit": limit}).fetchall()
    return [(r["organization_id"], r["id"]) for r in rows]


def put_content(conn: Connection, org_id: str, file_id: str, text: str) -> None:
    conn.execute(PUT_CONTENT, {"id": file_id, "org": org_id, "text": text})


def content(conn: Connection, org_id: str, file_id: str) -> str | None:
    row = conn.execute(CONTENT, {"org": org_id, "id": file_id}).fetchone()
    return row["text"] if row else None


def add_passages(conn: Connection, passages: Sequence[FilePassage]) -> None:
    params = [to_params(p, json_fields=_JSON) for p in passages]
    for p in params:
        p["embedding"] = vector_literal(p["embedding"])
    conn.cursor().executemany(ADD_PASSAGE, params)


def passages_done(conn: Connection, file_id: str) -> int:
    row = conn.execute(PASSAGES_DONE, {"id": file_id}).fetchone()
    return int(row["n"]) if row else 0


def list_passages(
    conn: Connection,
    org_id: str,
    folder_id: str,
    *,
    after: str | None,
    before: str | None,
    limit: int,
    order: Order,
) -> list[FilePassage]:
    fields = {"org": sql.Literal(org_id), "folder_id": sql.Literal(folder_id)}
    return filtered_page(
        conn,
        LIST_PASSAGES,
        FilePassage,
        "file_passages",
        fields,
        after=after,
        before=before,
        limit=limit,
        order=order,
    )


def search(
    conn: Connection, org_id: str, folder_ids: list[str], query: Sequence[float], limit: int
) -> list[dict[str, Any]]:
    """The nearest chunks of these folders' files (rows with `file_name` and `distance`)."""
    dim = len(query)
    statement = sql.SQL(SEARCH).format(vt=vector_type(dim))
    params = {
        "org": org_id,
        "folders": folder_ids,
        "q": vector_literal(query),
        "dim": dim,
        "limit": limit,
    }
    return [dict(r) for r in in_transaction(conn, statement, params)]


def stats(conn: Connection, org_id: str) -> list[dict[str, Any]]:
    return [dict(r) for r in conn.execute(STATS, {"org": org_id}).fetchall()]


# -- agents' views ----------------------------------------------------------------------

VIEWS = """
SELECT fa.* FROM files_agents fa
WHERE fa.organization_id = %(org)s AND fa.agent_id = %(agent_id)s
ORDER BY fa.file_name
"""
# A file deleted since the step read it is left out (no row to name).
PUT_VIEW = """
INSERT INTO files_agents (agent_id, file_id, folder_id, organization_id, file_name, is_open,
                          visible_content, start_line, end_line, last_accessed_at)
SELECT %(agent_id)s, f.id, f.folder_id, f.organization_id, f.file_name, %(is_open)s,
       %(visible_content)s, %(start_line)s, %(end_line)s, %(last_accessed_at)s
FROM files f WHERE f.id = %(file_id)s AND f.organization_id = %(organization_id)s
ON CONFLICT (agent_id, file_id) DO UPDATE SET is_open = EXCLUDED.is_open,
    visible_content = EXCLUDED.visible_content, start_line = EXCLUDED.start_line,
    end_line = EXCLUDED.end_line, last_accessed_at = EXCLUDED.last_accessed_at
"""
# The completed files of the folders attached to an agent, with its view of each if any.
AGENT_FILES = """
SELECT f.id AS file_id, f.folder_id, f.file_name, f.organization_id, fa.is_open,
       fa.visible_content, fa.start_line, fa.end_line,
       COALESCE(fa.last_accessed_at, f.created_at) AS last_accessed_at
FROM folders_agents a JOIN files f ON f.folder_id = a.folder_id
LEFT JOIN files_agents fa ON fa.file_id = f.id AND fa.agent_id = a.agent_id
WHERE a.organization_id = %(org)s AND a.agent_id = %(agent_id)s
  AND f.processing_status = 'completed'
ORDER BY f.file_name
"""


# The folders attached to agent {agent}, each with its completed files and the agent's view
# of them (closed where it has none): a fragment the step's claim reads in its one query.
AGENT_FOLDERS = """
(SELECT coalesce(json_agg(json_build_object(
     'id', f.id, 'name', f.name, 'description', f.description, 'instructions', f.instructions,
     'files', (SELECT coalesce(json_agg(json_build_object(
                   'agent_id', {agent}, 'file_id', x.id, 'folder_id', x.folder_id,
                   'organization_id', x.organization_id, 'file_name', x.file_name,
                   'file_type', x.file_type, 'is_open', coalesce(v.is_open, false),
                   'visible_content', v.visible_content, 'start_line', v.start_line,
                   'end_line', v.end_line,
                   'last_accessed_at', coalesce(v.last_accessed_at, x.created_at))
                 ORDER BY x.file_name), '[]')
               FROM files x LEFT JOIN files_agents v ON v.file_id = x.id AND v.agent_id = {agent}
               WHERE x.folder_id = f.id AND x.processing_status = 'completed'))
   ORDER BY fa.created_at, f.id), '[]')
 FROM folders_agents fa JOIN folders f ON f.id = fa.folder_id WHERE fa.agent_id = {agent})
"""


def forget_views_of_folder(conn: Connection, org_id: str, agent_id: str, folder_id: str) -> int:
    """The agent's views of a folder's files gone (the folder detached from it)."""
    gone = conn.execute(
        "DELETE FROM files_agents WHERE organization_id = %s AND agent_id = %s AND folder_id = %s",
        (org_id, agent_id, folder_id),
    )
    return gone.rowcount


def completed_of_folder(conn: Connection, org_id: str, folder_id: str) -> list[FileMetadata]:
    """A folder's readable files, oldest first (the order Letta opens them in)."""
    rows = conn.execute(
        "SELECT * FROM files WHERE organization_id = %s AND folder_id = %s"
        " AND processing_status = 'completed' ORDER BY created_at, id",
        (org_id, folder_id),
    ).fetchall()
    return [FileMetadata.model_validate(r) for r in rows]


def agent_folders(conn: Connection, agent_id: str) -> list[AgentFolder]:
    query = "SELECT " + AGENT_FOLDERS.format(agent="%(agent)s") + " AS folders"
    row = conn.execute(query, {"agent": agent_id}).fetchone()
    return [AgentFolder.model_validate(f) for f in (row["folders"] if row else [])]


def views(conn: Connection, org_id: str, agent_id: str) -> list[FileAgent]:
    rows = conn.execute(VIEWS, {"org": org_id, "agent_id": agent_id}).fetchall()
    return [FileAgent.model_validate(r) for r in rows]


def agent_files(conn: Connection, org_id: str, agent_id: str) -> list[FileAgent]:
    """Every readable file of the agent's folders, as it sees it (closed if never opened)."""
    rows = conn.execute(AGENT_FILES, {"org": org_id, "agent_id": agent_id}).fetchall()
    return [
        FileAgent.model_validate({**r, "agent_id": agent_id, "is_open": bool(r["is_open"])})
        for r in rows
    ]


def put_views(conn: Connection, views: Sequence[FileAgent]) -> None:
    conn.cursor().executemany(PUT_VIEW, [to_params(v) for v in views])
