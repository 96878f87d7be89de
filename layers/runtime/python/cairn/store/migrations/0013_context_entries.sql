-- The context window as rows, not an array on the agent: a checkpoint writes the entries
-- of its new messages and deletes those a compaction evicts, instead of a new copy of the
-- whole array (and of the agent row) every step. Positions keep gaps (store/context.py).
CREATE TABLE context_entries (
    agent_id         text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    position         bigint NOT NULL,
    -- A deleted message leaves the window with it (its deleter bumps the agent's version).
    message_id       text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    PRIMARY KEY (agent_id, position)
);
CREATE INDEX context_entries_message ON context_entries (message_id);

INSERT INTO context_entries (agent_id, position, message_id, organization_id)
SELECT a.id, w.n - 1, w.id, a.organization_id
FROM agents a, unnest(a.message_ids) WITH ORDINALITY AS w (id, n)
WHERE EXISTS (SELECT 1 FROM messages m WHERE m.id = w.id)
ON CONFLICT DO NOTHING;

ALTER TABLE agents DROP COLUMN message_ids;
