"""Organizations' MCP servers, their token, custom headers and (stdio's) environment sealed in
the row."""

from __future__ import annotations

import json
from typing import Any

from psycopg.types.json import Jsonb

from cairn.domain.tools import Tool
from cairn.mcp_servers.models import McpServer
from cairn.sealing import Sealer
from cairn.store.db import Connection

UPSERT = """
INSERT INTO mcp_servers (id, organization_id, server_name, server_type, server_url, auth_header,
                         command, args, secrets_sealed)
VALUES (%(id)s, %(organization_id)s, %(server_name)s, %(server_type)s, %(server_url)s,
        %(auth_header)s, %(command)s, %(args)s, %(secrets_sealed)s)
ON CONFLICT (id) DO UPDATE SET
    server_name = EXCLUDED.server_name, server_type = EXCLUDED.server_type,
    server_url = EXCLUDED.server_url, auth_header = EXCLUDED.auth_header,
    command = EXCLUDED.command, args = EXCLUDED.args,
    secrets_sealed = EXCLUDED.secrets_sealed, updated_at = now()
RETURNING *
"""


def bound(org_id: str, server_id: str) -> str:
    return f"mcp-server:{org_id}:{server_id}"


def put(conn: Connection, sealer: Sealer, server: McpServer) -> McpServer:
    """The server stored (made, or changed in place by id)."""
    secrets = {
        "auth_token": server.auth_token,
        "custom_headers": server.custom_headers,
        "env": server.env,
    }
    sealed = (
        sealer.seal(json.dumps(secrets), bound(server.organization_id, server.id))
        if any(secrets.values())
        else None
    )
    row = conn.execute(
        UPSERT,
        {
            "id": server.id,
            "organization_id": server.organization_id,
            "server_name": server.server_name,
            "server_type": server.server_type,
            "server_url": server.server_url,
            "auth_header": server.auth_header,
            "command": server.command,
            "args": None if server.args is None else Jsonb(server.args),
            "secrets_sealed": sealed,
        },
    ).fetchone()
    assert row is not None
    return _opened(sealer, row)


def get(conn: Connection, sealer: Sealer, org_id: str, server_id: str) -> McpServer | None:
    row = conn.execute(
        "SELECT * FROM mcp_servers WHERE organization_id = %s AND id = %s",
        (org_id, server_id),
    ).fetchone()
    return None if row is None else _opened(sealer, row)


def by_name(conn: Connection, sealer: Sealer, org_id: str, name: str) -> McpServer | None:
    row = conn.execute(
        "SELECT * FROM mcp_servers WHERE organization_id = %s AND server_name = %s",
        (org_id, name),
    ).fetchone()
    return None if row is None else _opened(sealer, row)


def list_servers(conn: Connection, sealer: Sealer, org_id: str) -> list[McpServer]:
    rows = conn.execute(
        "SELECT * FROM mcp_servers WHERE organization_id = %s ORDER BY created_at, id",
        (org_id,),
    ).fetchall()
    return [_opened(sealer, r) for r in rows]


def delete(conn: Connection, org_id: str, server_id: str) -> bool:
    gone = conn.execute(
        "DELETE FROM mcp_servers WHERE organization_id = %s AND id = %s", (org_id, server_id)
    )
    return gone.rowcount == 1


def _opened(sealer: Sealer, row: dict[str, Any]) -> McpServer:
    row = dict(row)
    sealed = row.pop("secrets_sealed")
    secrets: dict[str, Any] = {}
    if sealed is not None:
        secrets = json.loads(sealer.open(bytes(sealed), bound(row["organization_id"], row["id"])))
    return McpServer.model_validate({**row, **secrets})


# An MCP server's tools: rows naming it in metadata.mcp.server_id.
SERVER_TOOLS = """
SELECT * FROM tools WHERE organization_id = %s AND tool_type = 'external_mcp'
  AND metadata->'mcp'->>'server_id' = %s ORDER BY name
"""


def tools_of(conn: Connection, org_id: str, server_id: str) -> list[Tool]:
    return [Tool.model_validate(r) for r in conn.execute(SERVER_TOOLS, (org_id, server_id))]


def delete_tools_of(conn: Connection, org_id: str, server_id: str, keep: set[str]) -> list[str]:
    """The server's tools not named in `keep`, deleted (detached from their agents too);
    their names."""
    rows = conn.execute(
        """DELETE FROM tools WHERE organization_id = %s AND tool_type = 'external_mcp'
             AND metadata->'mcp'->>'server_id' = %s AND NOT (name = ANY(%s))
           RETURNING name""",
        (org_id, server_id, sorted(keep)),
    ).fetchall()
    return [r["name"] for r in rows]
