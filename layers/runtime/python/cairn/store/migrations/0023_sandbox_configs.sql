-- Letta's sandbox configs: an organization's settings for one kind of tool sandbox (local,
-- e2b, modal; one of each), and the environment variables its tools get. Cairn runs every
-- tool in its own sandbox, which takes the `local` config's variables (docs/tools.md);
-- each value sealed as agents' secrets are (migration 0022).
CREATE TABLE sandbox_configs (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL,
    type             text NOT NULL CHECK (type IN ('local', 'e2b', 'modal')),
    config           jsonb NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, type)
);
CREATE TABLE sandbox_env_vars (
    id                 text PRIMARY KEY,
    organization_id    text NOT NULL,
    sandbox_config_id  text NOT NULL REFERENCES sandbox_configs (id) ON DELETE CASCADE,
    key                text NOT NULL,
    value_sealed       bytea NOT NULL,
    description        text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (sandbox_config_id, key)
);
CREATE INDEX sandbox_env_vars_org ON sandbox_env_vars (organization_id, sandbox_config_id);
