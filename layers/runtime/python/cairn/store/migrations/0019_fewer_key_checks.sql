-- The rows each message writes (its messages, their context entries, its run, step and
-- outbox row) checked their organization, and some their agent, once per row: a key
-- lookup (and a row lock on the organization every tenant's writes share) for nothing,
-- since each row also belongs to its agent or run, which belongs to the organization and
-- cascades its deletes. Those references stay; the repeated ones go: 24 key checks per
-- message became 14 (bench/local_stack.py --sql).
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_organization_id_fkey;
ALTER TABLE context_entries DROP CONSTRAINT IF EXISTS context_entries_organization_id_fkey;
-- An entry goes with its message, which goes with its agent.
ALTER TABLE context_entries DROP CONSTRAINT IF EXISTS context_entries_agent_id_fkey;
ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_organization_id_fkey;
ALTER TABLE steps DROP CONSTRAINT IF EXISTS steps_organization_id_fkey;
-- A step goes with its run, which goes with its agent.
ALTER TABLE steps DROP CONSTRAINT IF EXISTS steps_agent_id_fkey;
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_organization_id_fkey;
