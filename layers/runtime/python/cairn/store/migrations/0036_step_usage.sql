-- What each step used, for the operator's view (docs/operations.md, "Usage"): the model's
-- cached and reasoning tokens and the tool calls it asked for, beside the prompt and
-- completion tokens steps already kept. A step's row is written once, by its checkpoint (its
-- natural key: run and index), so usage read from steps counts a retried or redelivered step
-- once.
ALTER TABLE steps ADD COLUMN cached_input_tokens integer NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN cache_write_tokens integer NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN reasoning_tokens integer NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN tool_calls integer NOT NULL DEFAULT 0;
CREATE INDEX steps_org_created ON steps (organization_id, created_at);
