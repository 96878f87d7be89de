"""OAuth sign-ins to MCP servers (migration 0034), their secrets sealed in the row."""

from __future__ import annotations

import json
from typing import Any

from psycopg.types.json import Jsonb

from cairn.mcp_servers.models import McpOAuthSession
from cairn.sealing import Sealer
from cairn.store.db import Connection

SECRETS = ("client_info", "authorization_code", "access_token", "refresh_token")
COLUMNS = (
    "id",
    "organization_id",
    "server_url",
    "server_name",
    "status",
    "authorization_url",
    "redirect_uri",
    "client_id",
    "state",
    "token_type",
    "scope",
    "expires_at",
    "oauth_metadata",
)
UPSERT = f"""
INSERT INTO mcp_oauth_sessions ({", ".join(COLUMNS)}, secrets_sealed)
VALUES ({", ".join(f"%({c})s" for c in COLUMNS)}, %(secrets_sealed)s)
ON CONFLICT (id) DO UPDATE SET
    {", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS[4:])},
    secrets_sealed = EXCLUDED.secrets_sealed, updated_at = now()
RETURNING *
"""


def bound(org_id: str, session_id: str) -> str:
    return f"mcp-oauth:{org_id}:{session_id}"


def put(conn: Connection, sealer: Sealer, session: McpOAuthSession) -> McpOAuthSession:
    """The sign-in stored (made, or changed in place by id)."""
    secrets = {name: getattr(session, name) for name in SECRETS}
    sealed = (
        sealer.seal(json.dumps(secrets), bound(session.organization_id, session.id))
        if any(secrets.values())
        else None
    )
    values = {c: getattr(session, c) for c in COLUMNS}
    values["oauth_metadata"] = (
        None if session.oauth_metadata is None else Jsonb(session.oauth_metadata)
    )
    row = conn.execute(UPSERT, values | {"secrets_sealed": sealed}).fetchone()
    assert row is not None
    return _opened(sealer, row)


def get(
    conn: Connection, sealer: Sealer, session_id: str, *, lock: bool = False
) -> McpOAuthSession | None:
    """By its id alone: the keyless callback's only key (an unguessable uuid4)."""
    row = conn.execute(
        "SELECT * FROM mcp_oauth_sessions WHERE id = %s" + (" FOR UPDATE" if lock else ""),
        (session_id,),
    ).fetchone()
    return None if row is None else _opened(sealer, row)


def signed_in(
    conn: Connection, sealer: Sealer, org_id: str, server_url: str
) -> McpOAuthSession | None:
    """The organization's latest completed sign-in to the server at that URL."""
    row = conn.execute(
        "SELECT * FROM mcp_oauth_sessions WHERE organization_id = %s AND server_url = %s"
        " AND status = 'authorized' ORDER BY updated_at DESC LIMIT 1",
        (org_id, server_url),
    ).fetchone()
    return None if row is None else _opened(sealer, row)


def prune(conn: Connection, *, older_than_hours: float) -> int:
    """Sign-ins that never completed (pending or failed), after that long: Letta's cleanup."""
    gone = conn.execute(
        "DELETE FROM mcp_oauth_sessions WHERE status <> 'authorized'"
        " AND created_at < now() - make_interval(secs => %s)",
        (older_than_hours * 3600,),
    )
    return gone.rowcount


def _opened(sealer: Sealer, row: dict[str, Any]) -> McpOAuthSession:
    row = dict(row)
    sealed = row.pop("secrets_sealed")
    secrets: dict[str, Any] = {}
    if sealed is not None:
        secrets = json.loads(sealer.open(bytes(sealed), bound(row["organization_id"], row["id"])))
    return McpOAuthSession.model_validate({**row, **secrets})
