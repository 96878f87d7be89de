-- Embedding tokens, metered and budgeted as model tokens are (docs/operations.md, "Budgets
-- and limits"): an organization within its budget could spend embedding money without
-- limit by uploading files. The month's own column (a monthly token budget counts both);
-- the day's, per model, for the usage rows.
ALTER TABLE org_usage_months ADD COLUMN embedding_tokens bigint NOT NULL DEFAULT 0;
-- A query's embedding costs a few ten-millionths of a dollar: at six decimals each call's
-- cost rounded to nothing.
ALTER TABLE org_usage_months ALTER COLUMN cost_usd TYPE numeric(22, 10);

CREATE TABLE embedding_usage (
    organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    day             date NOT NULL,
    model           text NOT NULL,
    calls           bigint NOT NULL DEFAULT 0,
    tokens          bigint NOT NULL DEFAULT 0,
    cost_usd        numeric(22, 10) NOT NULL DEFAULT 0,
    PRIMARY KEY (organization_id, day, model)
);
