-- Identities (Letta's): the people or organizations an application's agents and blocks
-- belong to, found by the application's own key (`identifier_key`). A key is unique in its
-- organization and project; the links go when either side goes.
CREATE TABLE identities (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    identifier_key   text NOT NULL,
    name             text NOT NULL,
    identity_type    text NOT NULL CHECK (identity_type IN ('org', 'user', 'other')),
    project_id       text,
    properties       jsonb NOT NULL DEFAULT '[]',
    created_by_id    text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX identities_key
    ON identities (organization_id, identifier_key, coalesce(project_id, ''));
CREATE INDEX identities_org_created ON identities (organization_id, created_at, id);

CREATE TABLE identities_agents (
    identity_id  text NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    agent_id     text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    PRIMARY KEY (identity_id, agent_id)
);
CREATE INDEX identities_agents_agent ON identities_agents (agent_id);

CREATE TABLE identities_blocks (
    identity_id  text NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    block_id     text NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    PRIMARY KEY (identity_id, block_id)
);
CREATE INDEX identities_blocks_block ON identities_blocks (block_id);
