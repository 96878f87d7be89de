-- One run at a time per agent, and the base of the context-size estimate.

-- The run that holds the agent. A run takes the lease at its first step and gives it back
-- when it ends; a crashed holder's lease lapses at lease_expires_at. Taking and renewing it
-- never bumps agents.version, so it cannot make a checkpoint lose its version check.
ALTER TABLE agents
    ADD COLUMN lease_run_id      text,
    ADD COLUMN lease_expires_at  timestamptz,
    -- What the provider last reported for the whole context (prompt + completion tokens),
    -- and how many entries of message_ids that count covered: the estimate adds only what
    -- came after, so no tokeniser is needed at run time.
    ADD COLUMN context_tokens       integer,
    ADD COLUMN context_tokens_upto  integer;

-- Blocks render in the order they were attached. Blocks attached in one transaction shared
-- now() and fell back to random ids for order; clock_timestamp() keeps the attach order.
ALTER TABLE agents_blocks ALTER COLUMN attached_at SET DEFAULT clock_timestamp();
ALTER TABLE agents_tools ALTER COLUMN attached_at SET DEFAULT clock_timestamp();
