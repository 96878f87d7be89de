-- An agent's secrets (Letta's `secrets`, once `tool_exec_environment_variables`): the
-- environment its custom tools get for their calls. Each value is sealed (AES-GCM, bound
-- to its organization, agent and key, so a sealed value copied to another row does not
-- open); the server opens it only to hand it to a tool call and to show it to its own
-- organization, as Letta does.
CREATE TABLE agent_secrets (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL,
    agent_id         text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    key              text NOT NULL,
    value_sealed     bytea NOT NULL,
    description      text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (agent_id, key)
);
CREATE INDEX agent_secrets_org ON agent_secrets (organization_id, agent_id);
