-- OAuth sign-ins to organizations' MCP servers (Letta's mcp_oauth): one row per attempt,
-- pending until the authorization server redirects the user's browser to the callback, then
-- authorized with the tokens the MCP SDK's OAuth client obtained. What signs in (the
-- registered client's secret, the authorization code, the access and refresh tokens) is
-- sealed in `secrets_sealed` as MCP servers' tokens are (0024); the row's id (a uuid4) is
-- the only key the keyless callback has. Rows not authorized are pruned after a day.
CREATE TABLE mcp_oauth_sessions (
    id                 text PRIMARY KEY,
    organization_id    text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    server_url         text NOT NULL,
    server_name        text NOT NULL,
    status             text NOT NULL DEFAULT 'pending'
                       CHECK (status IN ('pending', 'authorized', 'error')),
    authorization_url  text,
    redirect_uri       text,
    client_id          text,
    state              text,
    token_type         text,
    scope              text,
    expires_at         timestamptz,
    oauth_metadata     jsonb,
    secrets_sealed     bytea,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
-- A call to a server finds the organization's latest sign-in to its URL.
CREATE INDEX mcp_oauth_sessions_signed_in
    ON mcp_oauth_sessions (organization_id, server_url, updated_at DESC)
    WHERE status = 'authorized';
CREATE INDEX mcp_oauth_sessions_created ON mcp_oauth_sessions (created_at);
