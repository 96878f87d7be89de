-- Letta's folders (formerly sources): named collections of files an agent reads, each with
-- the embedding config its files' passages are made with. A folder's name is unique in its
-- organization, as in Letta (sources unique on name and organization).
CREATE TABLE folders (
    id                  text PRIMARY KEY,
    organization_id     text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name                text NOT NULL,
    description         text,
    instructions        text,
    metadata            jsonb,
    embedding_config    jsonb NOT NULL,
    created_by_id       text,
    last_updated_by_id  text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, name)
);
CREATE INDEX folders_page ON folders (organization_id, created_at, id);

-- Which agents a folder is attached to (Letta's sources_agents).
CREATE TABLE folders_agents (
    folder_id        text NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
    agent_id         text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (folder_id, agent_id)
);
CREATE INDEX folders_agents_agent ON folders_agents (agent_id, created_at);
