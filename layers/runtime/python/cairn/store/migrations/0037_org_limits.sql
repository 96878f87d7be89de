-- Budgets and limits per organization (docs/operations.md, "Budgets and limits"), set by the
-- operator (`cairn-admin limits`). NULL: no limit of that kind.
CREATE TABLE org_limits (
    organization_id     text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    monthly_tokens      bigint CHECK (monthly_tokens > 0),
    monthly_cost_usd    numeric(14, 6) CHECK (monthly_cost_usd > 0),
    -- per API key, in the calendar minute (api_keys.minute_*)
    requests_per_minute integer CHECK (requests_per_minute > 0),
    -- agents its runs may hold at once, instead of CAIRN_ORG_MAX_RUNS
    max_runs            integer CHECK (max_runs > 0),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- What each organization used in a calendar month (UTC), bumped by the checkpoint that
-- writes the step (store/checkpoints.py), so a redelivered step counts once; read where a
-- run starts and where a step is claimed (one row by its key, no sum over steps).
CREATE TABLE org_usage_months (
    organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    month           date NOT NULL,
    tokens          bigint NOT NULL DEFAULT 0,
    cost_usd        numeric(18, 6) NOT NULL DEFAULT 0,
    PRIMARY KEY (organization_id, month)
);
-- The tokens of steps before this migration (their cost was never priced at the time).
INSERT INTO org_usage_months (organization_id, month, tokens)
SELECT organization_id, date_trunc('month', created_at AT TIME ZONE 'UTC')::date,
       sum(coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0))
FROM steps GROUP BY 1, 2;

-- A key's requests in the current minute, counted by the lookup every request makes
-- (store/tenancy.py AUTHENTICATE) only when its organization has a rate limit.
ALTER TABLE api_keys ADD COLUMN minute_start timestamptz;
ALTER TABLE api_keys ADD COLUMN minute_count integer NOT NULL DEFAULT 0;
