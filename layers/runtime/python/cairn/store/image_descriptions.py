"""Images' descriptions by content hash, per organization (a vision model's words, made once
per image)."""

from __future__ import annotations

from cairn.store.db import Connection

GET = """
SELECT content_hash, description FROM image_descriptions
WHERE organization_id = %(org)s AND content_hash = ANY(%(h)s)
"""
PUT = """
INSERT INTO image_descriptions (organization_id, content_hash, description, model)
VALUES (%(org)s, %(hash)s, %(description)s, %(model)s)
ON CONFLICT (organization_id, content_hash) DO NOTHING
"""


def known(conn: Connection, org_id: str, hashes: list[str]) -> dict[str, str]:
    rows = conn.execute(GET, {"org": org_id, "h": hashes}).fetchall()
    return {r["content_hash"]: r["description"] for r in rows}


def put(conn: Connection, org_id: str, content_hash: str, description: str, model: str) -> None:
    params = {"org": org_id, "hash": content_hash, "description": description, "model": model}
    conn.execute(PUT, params)
