-- Model calls made outside a step (a tool generated: POST /v1/tools/generate-tool), per day
-- and model, for the usage rows: their tokens were added to the month's total only
-- (org_usage_months), so an organization's usage did not show what its budget counted.
CREATE TABLE model_calls (
    organization_id   text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    day               date NOT NULL,
    model             text NOT NULL,
    calls             bigint NOT NULL DEFAULT 0,
    prompt_tokens     bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (organization_id, day, model)
);
