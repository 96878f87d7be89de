-- stdio MCP servers are kept as Letta keeps them (a command, its arguments, its environment)
-- but never started: Cairn runs no organization's command on the server. The environment is
-- sealed with the token and the custom headers (secrets_sealed); a stdio server has no URL.
ALTER TABLE mcp_servers DROP CONSTRAINT mcp_servers_server_type_check;
ALTER TABLE mcp_servers ADD CONSTRAINT mcp_servers_server_type_check
    CHECK (server_type IN ('streamable_http', 'sse', 'stdio'));
ALTER TABLE mcp_servers ALTER COLUMN server_url DROP NOT NULL;
ALTER TABLE mcp_servers ADD COLUMN command text;
ALTER TABLE mcp_servers ADD COLUMN args jsonb;
ALTER TABLE mcp_servers ADD CONSTRAINT mcp_servers_reached_somehow CHECK (
    (server_type = 'stdio' AND command IS NOT NULL) OR (server_type <> 'stdio' AND server_url IS NOT NULL)
);
