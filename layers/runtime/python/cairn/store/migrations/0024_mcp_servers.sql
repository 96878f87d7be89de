-- An organization's MCP servers (Letta's /v1/mcp-servers). What authenticates to one (its
-- token and custom headers) is sealed as agents' secrets are (migration 0022); the URL
-- is checked against the outbound-address policy whenever it is reached. A server's tools
-- are rows of `tools` (tool_type external_mcp) naming it in their metadata.
CREATE TABLE mcp_servers (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL,
    server_name      text NOT NULL,
    server_type      text NOT NULL CHECK (server_type IN ('streamable_http', 'sse')),
    server_url       text NOT NULL,
    auth_header      text,
    secrets_sealed   bytea,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, server_name)
);
